// Package e2e holds the end-to-end tests of the built binary (cmd/harvey)
// that take the longest: the kernel modes and homes, a command's whole
// life, hooks, the session's network, a new user's first session, the MCP
// conformance suite, the release binaries under qemu (and, in
// e2e/everyday, everyday work through the sandbox). They run as a test binary of their own, so
// `go test ./...` runs them beside the root package's, each within its own
// timeout. It sits at the top of the module, not under internal/, so that
// `go test ./internal/...` stays the minute the packages' own tests take.
//
// Contract: harness.go is what such a test needs (Build, Run, RunKernel,
// the simulated kernels, a fresh home for the whole test binary, the
// helper roles a test binary plays); TestMain is Main. The root package's
// tests use the same harness.
package e2e
