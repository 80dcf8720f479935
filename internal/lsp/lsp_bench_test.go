package lsp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkGoplsEdit is what an edit of a Go file adds with gopls: the
// first use (start, initialize, load the packages) and a warm edit, and
// the server's memory (its resident set), in a workspace of
// HARVEY_BENCH_LSP_ROOT (default: this repository) editing the file
// HARVEY_BENCH_LSP_FILE (default: internal/lsp/lsp.go, one of its
// functions renamed so its callers break). Skipped without gopls.
func BenchmarkGoplsEdit(b *testing.B) {
	if _, err := exec.LookPath("gopls"); err != nil {
		b.Skip("gopls is not on PATH")
	}
	root := os.Getenv("HARVEY_BENCH_LSP_ROOT")
	file := os.Getenv("HARVEY_BENCH_LSP_FILE")
	if root == "" {
		root, _ = filepath.Abs("../..")
		file = "internal/lsp/lsp.go"
	}
	orig, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		b.Fatal(err)
	}
	broken := strings.Replace(string(orig), "func oneLine(", "func oneLineX(", 1)
	for b.Loop() {
		m := New(root, &host{env: os.Environ()}, Config{Wait: 10 * time.Second})
		start := time.Now()
		first := m.Diagnose(b.Context(), file, broken, true)
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "first-ms")
		if !strings.Contains(first, "undefined: oneLine") {
			b.Logf("first use found no broken call: %s", first)
		}
		start = time.Now()
		m.Diagnose(b.Context(), file, string(orig), true)
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "warm-ms")
		b.ReportMetric(float64(serverRSS("gopls"))/1024, "rss-MB")
		m.Close()
	}
}

// serverRSS is the resident set, in KB, of this process's child named
// name (0: none).
func serverRSS(name string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil || !strings.Contains(string(status), "Name:\t"+name+"\n") || !strings.Contains(string(status), "PPid:\t"+strconv.Itoa(os.Getpid())+"\n") {
			continue
		}
		for _, l := range strings.Split(string(status), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.Atoi(f[1])
				return kb
			}
		}
	}
	return 0
}
