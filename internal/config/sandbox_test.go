package config

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Sizes as people write them (sandbox.jobs.memory); a share is of the
// machine's memory; nonsense is refused with its line.
func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"2G": 2 << 30, "512MiB": 512 << 20, "1.5GB": 3 << 29, "1048576": 1 << 20, "64k": 64 << 10, "50%": 8 << 30} {
		if s, err := ParseSize(in); err != nil || s.Of(16<<30) != want {
			t.Errorf("%q: %d %v (want %d)", in, s.Of(16<<30), err, want)
		}
	}
	for _, in := range []string{"", "lots", "-1G", "0", "150%", "2X"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	var p SandboxPolicy
	if err := yaml.Unmarshal([]byte("jobs:\n  memory: 75%\n  processes: 200\n"), &p); err != nil || p.Jobs.Memory.Percent != 75 || p.Jobs.Processes != 200 {
		t.Errorf("%+v %v", p.Jobs, err)
	}
	if err := yaml.Unmarshal([]byte("jobs:\n  memory: heaps\n"), &p); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad size: %v", err)
	}
	if b, _ := yaml.Marshal(SandboxPolicy{Jobs: JobLimits{Memory: Size{Percent: 50}}}); !strings.Contains(string(b), "memory: 50%") {
		t.Errorf("written back as %s", b)
	}
}
