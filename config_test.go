package harvey

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
)

func TestConfigDefaultsAndDurations(t *testing.T) {
	env := newTestEnv(t, nil, "")
	c := env.a.Config
	if c.NumCtx != config.DefaultNumCtx || time.Duration(c.RunTimeout) != 5*time.Minute || c.OllamaTimeout != 0 || c.MaxOutputBytes() != 65536 || c.MaxToolCalls("x") != 10 {
		t.Fatalf("defaults: %+v", c.Config)
	}
	for in, want := range map[string]time.Duration{"5m": 5 * time.Minute, "90s": 90 * time.Second, "300": 300 * time.Second, "1m30s": 90 * time.Second} {
		if d, err := config.ParseDuration(in); err != nil || d != want {
			t.Fatalf("%s: %v %v", in, d, err)
		}
	}
	if _, err := config.ParseDuration("soon"); err == nil {
		t.Fatal("bad duration accepted")
	}
}

func writeConfig(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "agents", "harvey.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestConfigBadYAMLIsNeverOverwritten(t *testing.T) {
	env := newTestEnv(t, nil, "")
	bad := "model: llama3.2\nsafe_mode: [oops\n"
	writeConfig(t, env.dir, bad)
	cf, err := configfile.Load(env.ws.Tree)
	if err == nil || !strings.Contains(err.Error(), "agents/harvey.yaml: line") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v", err)
	}
	if cf.Model != "" || cf.NumCtx != config.DefaultNumCtx {
		t.Fatal("defaults not used")
	}
	cf.SafeMode = true
	if err := cf.Save(env.ws.Tree, "safe_mode"); err == nil {
		t.Fatal("saved over a broken file")
	}
	if b, _ := os.ReadFile(filepath.Join(env.dir, "agents", "harvey.yaml")); string(b) != bad {
		t.Fatal("broken file changed")
	}
}

func TestConfigUnknownKeysAndCeilings(t *testing.T) {
	env := newTestEnv(t, nil, "")
	writeConfig(t, env.dir, "modle: llama3.2\nrun_timeout: 90s\ntools:\n  max_output_bytes: 1000000\n  max_tool_calls_per_turn: 3\n  enabeld: true\nmodels:\n  mistral:latest:\n    tools_enabled: false\n    colour: red\n")
	cf, err := configfile.Load(env.ws.Tree)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(cf.Warnings, "\n")
	for _, w := range []string{`unknown key "modle"`, `unknown key "tools.enabeld"`, `unknown key "models.mistral:latest.colour"`, "max_output_bytes 1000000 is past the ceiling"} {
		if !strings.Contains(all, w) {
			t.Fatalf("missing warning %q in %s", w, all)
		}
	}
	if cf.MaxOutputBytes() != 65536 || cf.MaxToolCalls("llama3.2") != 3 || time.Duration(cf.RunTimeout) != 90*time.Second {
		t.Fatalf("values: %+v", cf.Config)
	}
	if cf.ToolsEnabled("mistral") {
		t.Fatal("per-model tools_enabled ignored")
	}
}

func TestConfigSaveKeepsCommentsAndIsAtomic(t *testing.T) {
	env := newTestEnv(t, nil, "")
	writeConfig(t, env.dir, "# my settings\nmodel: mistral # favourite\nsafe_mode: false\n")
	cf, err := configfile.Load(env.ws.Tree)
	if err != nil {
		t.Fatal(err)
	}
	cf.SafeMode = true
	if err := cf.Save(env.ws.Tree, "safe_mode"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(env.dir, "agents", "harvey.yaml"))
	if !strings.Contains(string(b), "# my settings") || !strings.Contains(string(b), "# favourite") || !strings.Contains(string(b), "safe_mode: true") {
		t.Fatalf("saved:\n%s", b)
	}
	entries, _ := os.ReadDir(filepath.Join(env.dir, "agents"))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Fatalf("temp file left: %s", e.Name())
		}
	}
}
