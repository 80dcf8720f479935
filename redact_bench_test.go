package harvey

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkRedact measures the redactor per KB of ordinary source code
// (BENCHMARKS.md compares it with gitleaks' detector).
func BenchmarkRedact(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "net", "http", "server.go"))
	if err != nil {
		b.Skip(err)
	}
	s := string(data)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		redactSecrets(s)
	}
}
