package harvey

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkRedact measures the redactor per KB of ordinary source code
// (BENCHMARKS.md compares it with gitleaks' detector).
func BenchmarkRedact(b *testing.B) {
	goroot, _ := exec.Command("go", "env", "GOROOT").Output()
	data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "src", "net", "http", "server.go"))
	if err != nil {
		b.Skip(err)
	}
	s := string(data)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		redactSecrets(s)
	}
}
