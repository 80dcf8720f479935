// The runner (internal/runner) through the agent: what a child process
// can and cannot get.
package harvey
