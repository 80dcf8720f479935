// Package lsp is the session's language servers, for one thing: the errors
// a write or an edit of a file causes, returned in the same tool result.
//
// Manager.Diagnose takes a file the gate just wrote (its workspace path and
// its new text). Its language (Language, by extension) picks a server:
// the one your config names (lsp.servers), else the first of Known found
// on PATH as commands see it (gopls; basedpyright or pyright;
// typescript-language-server; rust-analyzer; clangd). The server is
// started at first use through the Host (in the sandbox, the workspace its
// root, its whole life checked), initialized, and kept warm for the
// session; the file is opened (or changed, full text) and saved, and
// Diagnose waits, bounded (Config.Wait warm, five times that at first
// use), for the server's diagnostics of that version of the file, then a
// moment more for other files it broke. What it returns is a few lines:
// the file's errors (and warnings unless errorsOnly: a small window gets
// errors only), then new errors in up to three other files, five each,
// each one the model may see (Config.Visible: the path gate);
// "no errors" when the server found none; a line that it did not answer in
// time. A language without a server returns "". A server that cannot start
// or ends is said once through Host.Say and not tried again for that
// language this session. Close shuts every server down (shutdown, exit,
// then the Host's stop).
package lsp

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/guard"
	"github.com/harvey-agent/harvey/internal/runner"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/sandboxpolicy"
)

// Host is what the manager needs of the session.
type Host interface {
	// Sandbox is the command sandbox for a long-lived program whose
	// private cache layers are purpose's (nil: none is enforced here and
	// your config runs programs without one; an error: none, and none may
	// run).
	Sandbox(purpose string) (*sandbox.Spec, error)
	// Env is a command's environment.
	Env() []string
	// Say is a line for the user; Record one for the audit log (a change
	// the whole-life check undid).
	Say(line string)
	Record(line string)
}

// Config is the lsp: block.
type Config struct {
	Off     bool
	Servers map[string][]string // language → argv (empty: none for it)
	Wait    time.Duration       // a warm server's bound (default DefaultWait)
	// Visible is whether the model may see a file named by its
	// workspace path (the path gate); another file's errors are given
	// only when it is (nil: all).
	Visible func(rel string) bool
}

// DefaultWait bounds the wait for a warm server's diagnostics.
const DefaultWait = 3 * time.Second

// Known are the servers Harvey looks for, by language, in order.
var Known = map[string][][]string{
	"go":         {{"gopls"}},
	"python":     {{"basedpyright-langserver", "--stdio"}, {"pyright-langserver", "--stdio"}},
	"typescript": {{"typescript-language-server", "--stdio"}},
	"rust":       {{"rust-analyzer"}},
	"c":          {{"clangd"}},
}

// Language is the language of a file by its extension ("": none Harvey
// knows), and LSP's languageId for it.
func Language(file string) (lang, id string) {
	switch strings.ToLower(path.Ext(file)) {
	case ".go":
		return "go", "go"
	case ".py", ".pyi":
		return "python", "python"
	case ".ts", ".mts", ".cts":
		return "typescript", "typescript"
	case ".tsx":
		return "typescript", "typescriptreact"
	case ".js", ".mjs", ".cjs":
		return "typescript", "javascript"
	case ".jsx":
		return "typescript", "javascriptreact"
	case ".rs":
		return "rust", "rust"
	case ".c", ".h":
		return "c", "c"
	case ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx":
		return "c", "cpp"
	}
	return "", ""
}

// Manager is a session's language servers.
type Manager struct {
	root string
	host Host
	cfg  Config
	mu   sync.Mutex
	srv  map[string]*server // by language; nil value: none, or it failed
	// words are the last words of the server started last (m.mu held
	// while it starts).
	words func() string
}

// server is one running language server.
type server struct {
	mu       sync.Mutex // one edit's diagnostics at a time
	name     string
	c        *conn
	stop     func()
	versions map[string]int // URI → the version last sent
	used     bool           // past its first use
	life     *guard.Guard   // its whole-life check, from before it started
	words    func() string  // its last words on stderr
}

// New is the manager of the workspace at root.
func New(root string, host Host, cfg Config) *Manager {
	if cfg.Wait <= 0 {
		cfg.Wait = DefaultWait
	}
	return &Manager{root: root, host: host, cfg: cfg, srv: map[string]*server{}}
}

// argvFor is the server for lang: your config's, else the first known one
// found.
func (m *Manager) argvFor(lang string) []string {
	if argv, ok := m.cfg.Servers[lang]; ok {
		return argv
	}
	for _, argv := range Known[lang] {
		if _, err := sandboxpolicy.LookPath(argv[0]); err == nil {
			return argv
		}
	}
	return nil
}

// server is lang's server, started at first use (nil: none).
func (m *Manager) server(ctx context.Context, lang string) *server {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.srv[lang]; ok {
		return s
	}
	m.srv[lang] = nil
	argv := m.argvFor(lang)
	if len(argv) == 0 {
		return nil
	}
	if _, err := sandboxpolicy.LookPath(argv[0]); err != nil {
		return nil // your config names one that is not here: as none
	}
	s, err := m.start(ctx, lang, argv)
	if err != nil {
		m.host.Say(fmt.Sprintf("lsp: %s did not start (%s); %s files get no diagnostics this session", argv[0], oneLine(err.Error()), lang))
		return nil
	}
	m.srv[lang] = s
	return s
}

// start starts and initializes a server.
func (m *Manager) start(ctx context.Context, lang string, argv []string) (*server, error) {
	in, out, stop, err := m.launch(lang, argv)
	if err != nil {
		return nil, err
	}
	s := &server{name: filepath.Base(argv[0]), c: newConn(out, in), stop: stop, versions: map[string]int{}, life: guard.Life(m.root, "language server "+filepath.Base(argv[0])), words: m.words}
	ictx, cancel := context.WithTimeout(ctx, 5*m.cfg.Wait)
	defer cancel()
	root := fileURI(m.root)
	_, err = s.c.call(ictx, "initialize", map[string]any{
		// No processId: the server runs in a PID namespace of its own,
		// where Harvey's PID is not Harvey, and servers that watch their
		// parent (typescript-language-server, pyright) would exit.
		"processId": nil, "rootUri": root, "rootPath": m.root,
		"workspaceFolders": []map[string]string{{"uri": root, "name": filepath.Base(m.root)}},
		"capabilities": map[string]any{
			"textDocument": map[string]any{"publishDiagnostics": map[string]any{"versionSupport": true},
				"synchronization": map[string]any{"didSave": true}},
			"workspace": map[string]any{"configuration": true, "workspaceFolders": true},
		},
		"initializationOptions": initOptions(m.root, argv),
	})
	if err == nil {
		err = s.c.notifyServer("initialized", map[string]any{})
	}
	if err != nil {
		stop()
		if w := s.words(); w != "" {
			err = fmt.Errorf("%v: %s", err, w)
		}
		return nil, err
	}
	m.check(s, "at start")
	return s, nil
}

// initOptions are a server's initialization options: for
// typescript-language-server without a TypeScript in the workspace, the
// one installed beside it (npm i -g typescript typescript-language-server).
func initOptions(root string, argv []string) map[string]any {
	opts := map[string]any{}
	if filepath.Base(argv[0]) != "typescript-language-server" {
		return opts
	}
	const ts = "node_modules/typescript/lib/tsserver.js"
	if _, err := os.Stat(filepath.Join(root, ts)); err == nil {
		return opts
	}
	for _, tree := range sandboxpolicy.InstallTree(argv[0]) {
		for _, p := range []string{filepath.Join(tree, ts), filepath.Join(tree, "lib", ts)} {
			if _, err := os.Stat(p); err == nil {
				opts["tsserver"] = map[string]any{"path": p}
				return opts
			}
		}
	}
	return opts
}

// Diagnose is what the server of rel's language says of rel's new
// content, as lines for the tool result ("" when no server covers it).
func (m *Manager) Diagnose(ctx context.Context, rel, content string, errorsOnly bool) string {
	if m == nil || m.cfg.Off {
		return ""
	}
	lang, id := Language(rel)
	if lang == "" {
		return ""
	}
	s := m.server(context.WithoutCancel(ctx), lang) // a start is not lost to a Ctrl-C: its own bound holds; the wait below is the turn's
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m.check(s, "between edits")
	wait := m.cfg.Wait
	if !s.used {
		wait *= 5
	}
	s.used = true
	uri := fileURI(filepath.Join(m.root, filepath.FromSlash(rel)))
	before := s.c.since(0)
	seq, _ := s.c.state()
	v := s.versions[uri] + 1
	s.versions[uri] = v
	var err error
	if v == 1 {
		err = s.c.notifyServer("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": id, "version": v, "text": content}})
	} else {
		err = s.c.notifyServer("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": v},
			"contentChanges": []map[string]any{{"text": content}}})
	}
	if err == nil {
		err = s.c.notifyServer("textDocument/didSave", map[string]any{"textDocument": map[string]any{"uri": uri}})
	}
	if err != nil {
		m.ended(lang, s, err)
		return ""
	}
	got, ended := s.wait(ctx, uri, v, seq, wait)
	if ended {
		m.ended(lang, s, s.c.err)
		return ""
	}
	if got == nil {
		return fmt.Sprintf("[%s did not give %s's errors within %s: not checked]", s.name, rel, wait.Round(100*time.Millisecond))
	}
	return m.report(s.name, uri, got, s.c.since(seq), before, errorsOnly)
}

// wait waits for uri's diagnostics of version v (or, from a server that
// gives no versions, any published after seq), then a moment for other
// files'.
func (s *server) wait(ctx context.Context, uri string, v, seq int, d time.Duration) (*published, bool) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		_, next := s.c.state()
		if p := s.c.doc(uri); p != nil && p.seq > seq && (!p.hasVersion || p.version >= v) {
			settle := time.NewTimer(200 * time.Millisecond)
			defer settle.Stop()
			for {
				_, next := s.c.state()
				select {
				case <-next:
					continue
				case <-settle.C:
				case <-deadline.C:
				case <-ctx.Done():
				}
				return s.c.doc(uri), false
			}
		}
		select {
		case <-next:
		case <-s.c.done:
			return nil, true
		case <-deadline.C:
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
}

// Limits on what a result carries.
const (
	maxOwn       = 10
	maxOthers    = 3
	maxPerOther  = 5
	maxMsgLength = 200
)

// report is the file's errors (and warnings), then new errors elsewhere.
func (m *Manager) report(name, uri string, own *published, after, before map[string]*published, errorsOnly bool) string {
	limit := 1
	if !errorsOnly {
		limit = 2
	}
	rel := m.relOf(uri)
	lines := lineList(rel, own.diags, limit, maxOwn)
	var others []string
	for _, u := range slices.Sorted(maps.Keys(after)) {
		if u == uri || len(others) >= maxOthers*maxPerOther || (m.cfg.Visible != nil && !m.cfg.Visible(m.relOf(u))) {
			continue
		}
		old := map[string]bool{}
		if b := before[u]; b != nil {
			for _, d := range b.diags {
				old[d.Message] = true
			}
		}
		var fresh []Diagnostic
		for _, d := range after[u].diags {
			if !old[d.Message] {
				fresh = append(fresh, d)
			}
		}
		others = append(others, lineList(m.relOf(u), fresh, 1, maxPerOther)...)
	}
	if len(lines) == 0 && len(others) == 0 {
		return fmt.Sprintf("[%s: no errors in %s]", name, rel)
	}
	head := fmt.Sprintf("[%s: %d in %s", name, len(lines), rel)
	if len(others) > 0 {
		head += fmt.Sprintf(", %d new in other files", len(others))
	}
	return head + "]\n" + strings.Join(append(lines, others...), "\n")
}

// lineList is file:line:col: severity: message for each diagnostic at
// severity limit or worse, at most max (the rest counted).
func lineList(rel string, diags []Diagnostic, limit, max int) []string {
	var out []string
	n := 0
	for _, d := range diags {
		if d.Severity == 0 || d.Severity > limit {
			continue
		}
		n++
		if len(out) >= max {
			continue
		}
		sev := "error"
		if d.Severity == 2 {
			sev = "warning"
		}
		out = append(out, fmt.Sprintf("%s:%d:%d: %s: %s", rel, d.Range.Start.Line+1, d.Range.Start.Character+1, sev, clip(oneLine(d.Message), maxMsgLength)))
	}
	if n > len(out) {
		out = append(out, fmt.Sprintf("%s: %d more", rel, n-len(out)))
	}
	return out
}

// ended forgets a server that ended, said once.
func (m *Manager) ended(lang string, s *server, err error) {
	m.mu.Lock()
	m.srv[lang] = nil
	m.mu.Unlock()
	s.stop()
	why := fmt.Sprint(err)
	if w := s.words(); w != "" {
		why += ": " + oneLine(w)
	}
	m.host.Say(fmt.Sprintf("lsp: %s ended (%s); %s files get no diagnostics this session", s.name, why, lang))
	m.check(s, "as it stopped")
}

// launch starts argv in the workspace as a long-lived program, in the
// sandbox with the tree it is installed in readable (a server from npm).
func (m *Manager) launch(lang string, argv []string) (io.WriteCloser, io.ReadCloser, func(), error) {
	sp, err := m.host.Sandbox("lsp-" + lang)
	if err != nil {
		return nil, nil, nil, err
	}
	if sp != nil {
		spec := *sp
		spec.RO = append(spec.RO, sandboxpolicy.InstallTree(argv[0])...)
		sp = &spec
	}
	cmd, _, err := runner.Command(runner.Proc{Dir: m.root, Argv: argv, Env: m.host.Env(), Sandbox: sp})
	if err != nil {
		return nil, nil, nil, err
	}
	stderr := runner.NewCapWriter(4096)
	cmd.Stderr = stderr
	m.words = func() string { b, _ := stderr.Bytes(); return runner.LastWords(b) }
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		in.Close()
		select {
		case <-exited:
		case <-time.After(2 * time.Second):
		}
		runner.KillProcessGroup(cmd)
		<-exited
	}
	return in, out, stop, nil
}

// check undoes what a server changed outside the rules since its last
// check, says so, and starts the next check (none once it stopped).
func (m *Manager) check(s *server, when string) {
	if s.life == nil {
		return
	}
	undone, _ := s.life.Check()
	for _, u := range undone {
		m.host.Say(fmt.Sprintf("language server %s, %s: %s", s.name, when, u))
		m.host.Record("language server " + s.name + " " + when + ": " + u)
	}
	s.life = nil
	if when != "as it stopped" {
		s.life = guard.Life(m.root, "language server "+s.name)
	}
}

// Close shuts every server down.
func (m *Manager) Close() {
	if m == nil {
		return
	}
	m.mu.Lock()
	all := m.srv
	m.srv = map[string]*server{}
	m.mu.Unlock()
	for _, s := range all {
		if s == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		s.c.call(ctx, "shutdown", nil)
		cancel()
		s.c.notifyServer("exit", nil)
		s.stop()
		m.check(s, "as it stopped")
	}
}

// Running names the servers running now.
func (m *Manager) Running() []string {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, s := range m.srv {
		if s != nil {
			out = append(out, s.name)
		}
	}
	slices.Sort(out)
	return out
}

func (m *Manager) relOf(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return uri
	}
	if rel, err := filepath.Rel(m.root, u.Path); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return u.Path
}

func fileURI(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
