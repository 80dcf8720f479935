// Package e2e holds end-to-end tests of the built binary (cmd/harvey)
// that take the longest: everyday work through the sandbox in each kernel
// mode, the session's network, the caches, the MCP conformance suite, the
// release binaries under qemu. They run as a test binary of their own, so
// `go test ./...` runs them beside the root package's, each within its own
// timeout.
//
// Contract: harness.go is what such a test needs (Build, Run, RunKernel,
// the simulated kernels, a fresh home for the whole test binary, the
// helper roles a test binary plays); TestMain is Main. The root package's
// tests use the same harness.
package e2e
