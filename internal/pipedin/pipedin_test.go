// Feature: piped input as context for -p: a producer is waited for, a
// silent pipe is not, and long input keeps its head and its tail
// (writer_linux.go, pipedin.go).
package pipedin

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A silent pipe left open by a parent is not waited on; a pipeline's
// producer is, however slow.
func TestPipedStdinProducer(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// The write end held by another process, but not as its output.
	holder := exec.Command("sleep", "30")
	holder.ExtraFiles = []*os.File{w}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	if has, known := pipeHasWriter(r); known && has {
		t.Fatal("a process holding the pipe as fd 3 was taken for a producer")
	}
	if got, _ := Read(r, 1000); got != "" {
		t.Fatalf("silent pipe gave %q", got)
	}
	// A producer: the pipe is its standard output.
	r2, w2, _ := os.Pipe()
	defer r2.Close()
	producer := exec.Command("sh", "-c", "sleep 0.3; echo produced-late")
	producer.Stdout = w2
	if err := producer.Start(); err != nil {
		t.Fatal(err)
	}
	w2.Close()
	defer producer.Wait()
	if has, known := pipeHasWriter(r2); known && !has {
		t.Fatal("the producer was not found")
	}
	if got, _ := Read(r2, 1000); !strings.Contains(got, "produced-late") {
		t.Fatalf("producer's output = %q", got)
	}
}

// Long piped input keeps its start and its end (where a log's failure
// usually is), cut at lines, and says what it left out.
func TestPipedInputKeepsHeadAndTail(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("FIRST LINE\n")
	for i := 0; b.Len() < 200<<10; i++ {
		fmt.Fprintf(&b, "log line %d\n", i)
	}
	b.WriteString("panic: THE REAL ERROR\n")
	r, w, _ := os.Pipe()
	all := b.String()
	io.WriteString(w, all[:4096]) // ready before Read looks (the writer is this process, which a producer is not)
	go func() { io.WriteString(w, all[4096:]); w.Close() }()
	got, cut := Read(r, 8192)
	r.Close()
	if !strings.HasPrefix(got, "FIRST LINE\n") || !strings.HasSuffix(got, "panic: THE REAL ERROR\n") || !strings.Contains(got, fmt.Sprintf("[... %d bytes of piped input left out ...]\nlog line", cut)) || len(got) > 8192 {
		t.Fatalf("%d bytes: head %q tail %q", len(got), got[:min(40, len(got))], got[max(0, len(got)-60):])
	}
}
