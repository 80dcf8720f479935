// Feature: retries in process: the writer sees every byte of a cut
// stream once, and a route's 503s go through the same loop (the
// end-to-end retries are in e2e/retry_test.go).
package harvey

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/fakeollama"
	"github.com/harvey-agent/harvey/internal/fakeopenai"
	"github.com/harvey-agent/harvey/internal/llm"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// The cut stream is tried again from the same request, and the text the
// user already saw is not shown twice (in-process: the writer sees every
// byte).
func TestRetryCutStreamShowsTextOnce(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	f.Script(fakeollama.Reply{Lines: []string{fakeollama.ContentLine("llama3.2", "Hello, "), fakeollama.ContentLine("llama3.2", "wor"), fakeollama.DoneLine("llama3.2")}, NoDone: true},
		fakeollama.TextReply("llama3.2", "Hello, world."))
	c, err := newOllamaClient(f.URL(), "llama3.2", 4096, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var notes []string
	p := llm.RetryPolicy{Attempts: 3, MaxWait: time.Second, Notify: func(s string) { notes = append(notes, s) },
		Sleep: func(context.Context, time.Duration) error { return nil }}
	var rt llm.Retried
	_, _, err = p.Chat(t.Context(), &out, func(_ context.Context, w io.Writer) (llm.ChatStats, []anyllm.ToolCall, error) {
		return c.ChatWithTools(t.Context(), []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, nil, w)
	}, &rt)
	if err != nil || out.String() != "Hello, world." || rt.Retries != 1 || len(notes) != 1 {
		t.Fatalf("err %v, shown %q, retries %d, notes %q", err, out.String(), rt.Retries, notes)
	}
	if reqs := f.ChatRequests(); len(reqs) != 2 || mustJSON(reqs[0]["messages"]) != mustJSON(reqs[1]["messages"]) {
		t.Fatalf("the retry is not the same request: %d", len(reqs))
	}
}

// An OpenAI-compatible route (llama.cpp's server) that answers 503 while
// it loads is retried by the same loop (under the OpenAI SDK's own two
// tries), and the turn gets its answer.
func TestRetryOpenAICompatibleRoute(t *testing.T) {
	f := fakeopenai.New(t)
	env := routeEnv(t, f, "llamacpp")
	env.a.Config.Retry.MaxWait = config.Duration(time.Second)
	busy := fakeopenai.Reply{Status: 503, Body: `{"error":{"message":"Loading model","type":"unavailable_error"}}`}
	f.Script(busy, busy, busy, busy, fakeopenai.Text("Loaded."))
	if err := env.a.RunPrompt(t.Context(), "@box hi"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(env.out.String(), "Loaded.") || !strings.Contains(env.errOut.String(), "llamacpp busy (503) — retry 1 of 5") {
		t.Fatalf("out %q\nerr %q", env.out.String(), env.errOut.String())
	}
}
