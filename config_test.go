package harvey

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigDefaultsAndDurations(t *testing.T) {
	env := newTestEnv(t, nil, "")
	c := env.a.Config
	if c.NumCtx != DefaultNumCtx || time.Duration(c.RunTimeout) != 5*time.Minute || c.OllamaTimeout != 0 || c.MaxOutputBytes() != 65536 || c.MaxToolCalls("x") != 10 {
		t.Fatalf("defaults: %+v", c.Config)
	}
	for in, want := range map[string]time.Duration{"5m": 5 * time.Minute, "90s": 90 * time.Second, "300": 300 * time.Second, "1m30s": 90 * time.Second} {
		if d, err := parseDuration(in); err != nil || d != want {
			t.Fatalf("%s: %v %v", in, d, err)
		}
	}
	if _, err := parseDuration("soon"); err == nil {
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
	cf, err := loadConfig(env.ws)
	if err == nil || !strings.Contains(err.Error(), "agents/harvey.yaml: line") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v", err)
	}
	if cf.Model != "" || cf.NumCtx != DefaultNumCtx {
		t.Fatal("defaults not used")
	}
	cf.SafeMode = true
	if err := cf.Save(env.ws, "safe_mode"); err == nil {
		t.Fatal("saved over a broken file")
	}
	if b, _ := os.ReadFile(filepath.Join(env.dir, "agents", "harvey.yaml")); string(b) != bad {
		t.Fatal("broken file changed")
	}
}

func TestConfigUnknownKeysAndCeilings(t *testing.T) {
	env := newTestEnv(t, nil, "")
	writeConfig(t, env.dir, "modle: llama3.2\nrun_timeout: 90s\ntools:\n  max_output_bytes: 1000000\n  max_tool_calls_per_turn: 3\n  enabeld: true\nmodels:\n  mistral:latest:\n    tools_enabled: false\n    colour: red\n")
	cf, err := loadConfig(env.ws)
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
	cf, err := loadConfig(env.ws)
	if err != nil {
		t.Fatal(err)
	}
	cf.SafeMode = true
	if err := cf.Save(env.ws, "safe_mode"); err != nil {
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

func TestEnvironmentFiltering(t *testing.T) {
	in := []string{"PATH=/bin", "HOME=/h", "LANG=C", "LC_ALL=C", "OPENAI_API_KEY=sk-x", "GITHUB_TOKEN=g", "AWS_REGION=x", "SSH_AUTH_SOCK=/s", "HARVEY_SECRET=x", "MY_PASSWORD=p", "EDITOR=vi", "DATABASE_URL=postgres://u:p@h/db"}
	got := strings.Join(filterCommandEnvironment(in), " ")
	if got != "PATH=/bin HOME=/h LANG=C LC_ALL=C" {
		t.Fatalf("env = %s", got)
	}
}

func TestRunnerKillsProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Now()
	res := runArgv(context.Background(), dir, []string{"sh", "-c", "sleep 30 & echo $! > pid; sleep 30"}, baseEnv(), time.Second, 1000)
	if !res.TimedOut || time.Since(start) > 5*time.Second {
		t.Fatalf("timeout not enforced: %+v in %s", res, time.Since(start))
	}
	b, _ := os.ReadFile(filepath.Join(dir, "pid"))
	pid := strings.TrimSpace(string(b))
	time.Sleep(100 * time.Millisecond)
	if pid != "" {
		// a zombie (killed, not yet reaped by init) counts as dead
		if st, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
			t.Fatalf("grandchild %s survived: %s", pid, st)
		}
	}
	// stdin is /dev/null: cat ends at once; output is capped while streaming.
	res = runArgv(context.Background(), dir, []string{"cat"}, baseEnv(), 5*time.Second, 1000)
	if res.TimedOut || res.ExitCode != 0 {
		t.Fatalf("cat: %+v", res)
	}
	res = runArgv(context.Background(), dir, []string{"yes"}, baseEnv(), 20*time.Second, 1000)
	if len(res.Output) != 1000 || !res.Flooded {
		t.Fatalf("yes: %d bytes, flooded %v", len(res.Output), res.Flooded)
	}
}

func TestSafeModePlan(t *testing.T) {
	p := CommandPolicy{SafeMode: true, Allowed: []string{"ls", "echo"}}
	if argv, err := p.plan(`echo "a b"`); err != nil || len(argv) != 2 || argv[1] != "a b" {
		t.Fatalf("%v %v", argv, err)
	}
	for _, bad := range []string{"ls; rm -rf ~", "ls && curl x", "echo $(id)", "rm x", "cat < /etc/passwd", "/bin/ls"} {
		if _, err := p.plan(bad); err == nil {
			t.Fatalf("%q allowed in safe mode", bad)
		}
	}
	p.SafeMode = false
	if argv, _ := p.plan("echo hi | tr a-z A-Z"); argv[0] != "sh" {
		t.Fatalf("shell line: %v", argv)
	}
}

func TestSlashCommands(t *testing.T) {
	env := newTestEnv(t, nil, "")
	ctx := context.Background()
	os.WriteFile(filepath.Join(env.dir, "main.go"), []byte("package main\n"), 0o644)
	ok := []string{"/help", "/help read", "/status", "/files", "/read main.go", "/search package", "/run echo hi", "!echo bang",
		"/context add remember this", "/context show", "/clear", "/safemode status", "/permissions list", "/audit show 5",
		"/security", "/record start", "/record status", "/record stop", "/tools", "/route list"}
	for _, c := range ok {
		if err := env.a.Dispatch(ctx, c, env.out); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
	}
	out := env.out.String()
	for _, w := range []string{"main.go", "hi\n[exit 0]", "BANG", "recording to agents/sessions/", "read_file"} {
		if w == "BANG" {
			w = "bang"
		}
		if !strings.Contains(out, w) {
			t.Fatalf("output lacks %q:\n%s", w, out)
		}
	}
	if !strings.Contains(env.a.History[1].Content, "[pinned context]\nremember this") {
		t.Fatalf("pinned context lost by /clear: %v", env.a.History)
	}
	bad := map[string]string{"/nosuch": "unknown command", "/read": "usage", "/search": "usage", "/git": "usage", "/run": "usage", "/audit show x": "positive", "/permissions set src rwx": "unknown permission", "!": "usage"}
	for c, want := range bad {
		if err := env.a.Dispatch(ctx, c, env.out); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v", c, err)
		}
	}
	if err := env.a.RunPrompt(ctx, "hello"); err == nil || !strings.Contains(err.Error(), "ollama serve") {
		t.Fatalf("no backend: %v", err)
	}
}
