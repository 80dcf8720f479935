//go:build linux && !amd64 && !arm64 && !arm

package sandbox

// No table here: the launcher runs the command without the signal filter
// (signalFilter says so).
var sigArches []sigCalls
