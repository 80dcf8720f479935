// A turn (turn.go) through a fake server: recovered calls, /tools on and
// off, tool modes, recording and audit of calls, run suggestions — the
// turn's executor (tool_executor.go) and host (exec_host.go) included.
package harvey

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/e2e"
	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/fakeollama"
)

// mistral and qwen print their calls as text; streamed through the real
// Ollama client, the user sees the recovered call, never the raw text, and
// the result goes back as a tool message.
func TestRecoveredTextCallsThroughFake(t *testing.T) {
	for _, c := range []struct{ model, reply, raw string }{
		{"mistral", `[TOOL_CALLS] [{"name": "read_file", "arguments": {"path": "a.txt"}}]`, "[TOOL_CALLS]"},
		{"qwen2.5", "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>", "<tool_call>"},
		{"llama3.2", `{"name": "read_file", "parameters": {"path": "a.txt"}}`, `"parameters"`},
	} {
		t.Run(c.model, func(t *testing.T) {
			f := fakeollama.New(t, c.model+":latest")
			env := newTestEnv(t, f, c.model)
			e2e.WriteFile(t, env.dir, "a.txt", "the secret word is pumpkin\n")
			f.Script(fakeollama.TextReply(c.model, c.reply), fakeollama.TextReply(c.model, "The word is pumpkin."))
			if err := env.a.RunPrompt(t.Context(), "what is the word?"); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(env.out.String(), c.raw) || !strings.Contains(env.out.String(), "The word is pumpkin.") {
				t.Fatalf("stdout = %q", env.out.String())
			}
			if !strings.Contains(env.errOut.String(), "⚙ (recovered from text) read_file a.txt") {
				t.Fatalf("stderr = %q", env.errOut.String())
			}
			m := fakeollama.MessagesOf(f.ChatRequests()[1])
			asst, res := m[len(m)-2], m[len(m)-1]
			if asst["role"] != "assistant" || res["role"] != "tool" || !strings.Contains(res["content"].(string), "pumpkin") {
				t.Fatalf("messages = %s", mustJSON(m[len(m)-2:]))
			}
		})
	}
}

// /tools off sends no tools and no prose description; /tools on restores
// them. allowed_tools narrows what the model is offered.
func TestToolsOnOffAndAllowed(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	if out, err := dispatch(t, env.a, "/tools off"); err != nil || !strings.Contains(out, "tool mode off") {
		t.Fatalf("/tools off: %q %v", out, err)
	}
	f.Script(fakeollama.TextReply("llama3.2", "plain"))
	env.a.RunPrompt(t.Context(), "x")
	req := f.ChatRequests()[0]
	if _, has := req["tools"]; has || strings.Contains(fakeollama.MessagesOf(req)[0]["content"].(string), "To use a tool") {
		t.Fatal("tools offered while off")
	}
	dispatch(t, env.a, "/tools on")
	env.a.Tools.SetAllowed([]string{"read_file", "list_files"})
	f.Script(fakeollama.TextReply("llama3.2", "with tools"))
	env.a.RunPrompt(t.Context(), "y")
	if names := fakeollama.ToolNamesOf(f.ChatRequests()[1]); strings.Join(names, ",") != "list_files,read_file" {
		t.Fatalf("tools = %v", names)
	}
	// A call to a tool that is not offered is an unknown tool.
	f.Script(fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "w", Name: "write_file", Args: map[string]any{"path": "x", "content": "y"}}), fakeollama.TextReply("llama3.2", "ok"))
	env.a.RunPrompt(t.Context(), "z")
	m := fakeollama.MessagesOf(f.ChatRequests()[3])
	if c := m[len(m)-1]["content"].(string); !strings.Contains(c, `unknown tool "write_file"; available tools: list_files, read_file`) {
		t.Fatalf("result = %q", c)
	}
	if _, err := os.Stat(filepath.Join(env.dir, "x")); err == nil {
		t.Fatal("a filtered-out tool ran")
	}
}

// tools.enabled, models.NAME.tools_enabled and fallback_to_natural_language
// from harvey.yaml decide the mode.
func TestToolModeFromConfig(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest", "gemma:latest")
	f.Caps["gemma:latest"] = []string{"completion"}
	for _, c := range []struct {
		yaml, model, want string
	}{
		{"tools:\n  enabled: false\n", "llama3.2", "off"},
		{"models:\n  llama3.2:\n    tools_enabled: false\n", "llama3.2", "off"},
		{"tools:\n  fallback_to_natural_language: false\n", "gemma", "off"},
		{"", "gemma", "prose"},
		{"", "llama3.2", "schema"},
	} {
		env := newTestEnv(t, nil, "")
		e2e.WriteFile(t, env.dir, "agents/harvey.yaml", c.yaml)
		cf, err := configfile.Load(env.ws.Tree)
		if err != nil {
			t.Fatal(err)
		}
		a := newAgent(env.ws, cf, newLineReader(strings.NewReader("")), &bytes.Buffer{}, &bytes.Buffer{})
		a.OllamaURL = f.URL()
		if err := a.UseModel(t.Context(), c.model); err != nil {
			t.Fatal(err)
		}
		if got := string(a.toolMode()); got != c.want {
			t.Fatalf("%q with %s: mode %s, want %s", c.yaml, c.model, got, c.want)
		}
	}
}

// Tool calls appear in the session recording (capped) and in the audit log.
func TestToolCallsRecordedAndAudited(t *testing.T) {
	f := fakeollama.New(t, "llama3.2:latest")
	env := newTestEnv(t, f, "llama3.2")
	e2e.WriteFile(t, env.dir, "big.txt", strings.Repeat("0123456789abcdef\n", 10000))
	dispatch(t, env.a, "/record start rec.md")
	f.Script(
		fakeollama.ToolReply("llama3.2", fakeollama.Call{ID: "r", Name: "read_file", Args: map[string]any{"path": "big.txt"}}, fakeollama.Call{ID: "x", Name: "read_file", Args: map[string]any{"path": "../nope"}}),
		fakeollama.TextReply("llama3.2", "Read it."),
	)
	if err := env.a.RunPrompt(t.Context(), "read big.txt"); err != nil {
		t.Fatal(err)
	}
	dispatch(t, env.a, "/record stop")
	rec, err := os.ReadFile(filepath.Join(env.dir, "agents", "sessions", "rec.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(rec)
	if !strings.Contains(s, "read_file") || !strings.Contains(s, "[output truncated at 8192 bytes]") || !strings.Contains(s, "outside the workspace") || len(s) > 3*config.DefaultMaxOutputBytes {
		t.Fatalf("recording (%d bytes) lacks the calls:\n%.2000s", len(s), s)
	}
	out, _ := dispatch(t, env.a, "/audit show 10")
	if !strings.Contains(out, "read_file") || !strings.Contains(out, "big.txt") || !strings.Contains(out, "../nope") {
		t.Fatalf("audit = %s", out)
	}
}

// In prose mode a backticked /run suggestion is offered: headless it is
// only shown, interactive it runs when the user says y.
func TestRunSuggestions(t *testing.T) {
	f := fakeollama.New(t, "gemma:latest")
	f.Caps["gemma:latest"] = []string{"completion"}
	env := newTestEnv(t, f, "gemma")
	f.Script(fakeollama.TextReply("gemma", "Try `/run echo suggested-ran` to check."))
	env.a.RunPrompt(t.Context(), "how?")
	if !strings.Contains(env.errOut.String(), "· suggested: /run echo suggested-ran") || strings.Contains(env.out.String(), "suggested-ran\n[exit 0]") {
		t.Fatalf("headless: out %q err %q", env.out.String(), env.errOut.String())
	}
	env.a.Interactive = true
	env.a.In = newLineReader(strings.NewReader("y\n"))
	f.Script(fakeollama.TextReply("gemma", "Try `/run echo suggested-ran` to check."))
	env.a.RunPrompt(t.Context(), "how?")
	if !strings.Contains(env.out.String(), "suggested-ran\n[exit 0]") {
		t.Fatalf("interactive: %q", env.out.String())
	}
	// Its output went into the conversation for the next turn.
	last := env.a.History[len(env.a.History)-1]
	if !strings.Contains(last.Content, "suggested-ran") {
		t.Fatalf("history = %+v", last)
	}
}
