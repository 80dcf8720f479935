package termtext

import (
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/ptytest"
)

// Prose breaks between words at the width, however the stream is cut
// (each byte shown as it comes, a word that reaches the edge moved to the
// next line); indentation, code blocks and a word longer than a line pass
// as they came (issue 62: "or p" / "oint Harvey…").
func TestWordWrap(t *testing.T) {
	in := "Set OLLAMA_HOST or point Harvey at the server with --ollama, then run it again.\n" +
		"  - an indented item stays indented\n" +
		"```sh\n" +
		"harvey --ollama http://gpu-box:11434 --model qwen2.5:14b --run a-very-long-script-name.txt\n" +
		"```\n" +
		"Grüße aus München, wo die Straßenbahn fährt.\n" +
		"https://example.com/a/very/long/address/that/is/longer/than/a/line/of/thirty\nend"
	want := "Set OLLAMA_HOST or point\n" +
		"Harvey at the server with\n" +
		"--ollama, then run it again.\n" +
		"  - an indented item stays\n" +
		"indented\n" +
		"```sh\n" +
		"harvey --ollama http://gpu-box:11434 --model qwen2.5:14b --run a-very-long-script-name.txt\n" +
		"```\n" +
		"Grüße aus München, wo die\n" +
		"Straßenbahn fährt.\n" +
		"https://example.com/a/very/long/address/that/is/longer/than/a/line/of/thirty\nend"
	for _, chunk := range []int{1, 3, 7, 1000} {
		var b strings.Builder
		w := &WordWrap{W: &b, Width: func() int { return 30 }}
		for i := 0; i < len(in); i += chunk {
			w.Write([]byte(in[i:min(i+chunk, len(in))]))
		}
		if got := ptytest.Screen(b.String()); got != want {
			t.Errorf("chunks of %d:\n%s\nwant:\n%s", chunk, got, want)
		}
	}
	var b strings.Builder
	w := &WordWrap{W: &b, Width: func() int { return 0 }}
	w.Write([]byte(in))
	if b.String() != in {
		t.Errorf("width 0 changed the text:\n%s", b.String())
	}
	// A stalled stream shows the word it has so far.
	b.Reset()
	w = &WordWrap{W: &b, Width: func() int { return 30 }}
	w.Write([]byte("Think"))
	if b.String() != "Think" {
		t.Errorf("a word held back: %q", b.String())
	}
}
