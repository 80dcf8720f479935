//go:build linux

package harvey

import (
	"strings"
	"testing"
)

// A background job passes the gate a command does (gate.admit): in safe
// mode a program off the allowlist is refused as a job as it is as a
// command, and nothing starts.
func TestJobsPassTheCommandGate(t *testing.T) {
	env := newTestEnv(t, nil, "")
	env.a.Config.SafeMode = true
	env.a.Config.AllowedCommands = []string{"echo"}
	var out strings.Builder
	errCmd := env.a.Dispatch(t.Context(), "!sleep 30", &out)
	errJob := env.a.Dispatch(t.Context(), "!sleep 30 &", &out)
	if errCmd == nil || errJob == nil || errCmd.Error() != errJob.Error() {
		t.Fatalf("command refused %v, job refused %v", errCmd, errJob)
	}
	if n := len(env.a.gate.jobs.List()); n != 0 {
		t.Errorf("%d jobs started", n)
	}
	// A job of an earlier session (--continue) is not "none started".
	if _, err := env.a.gate.readJob(1); err == nil || !strings.Contains(err.Error(), "no job 1 (none in this session: a job ends with the session that started it)") {
		t.Errorf("a job of another session: %v", err)
	}
}
