// Package sandbox is the launcher that confines every program Harvey starts
// (run_command, /run and !, user tools, git, stdio MCP servers). Harvey
// re-executes itself as the launcher (its first argument is Arg, the Spec
// the second). On Linux the launcher enters new user, mount, PID and (unless
// the spec allows the network) network namespaces, builds a root of its own
// from what the spec names (and nothing else: no other file, so no socket,
// exists for the command), hides and protects what the spec says, forwards
// one loopback port to the registry proxy, restricts the one thread that
// will start the command with Landlock (writes only in the writable trees,
// reads of the readable ones, no TCP unless allowed, in safe mode execution
// of the listed programs only), and from that thread runs the command as
// its child, which inherits the restriction. When the command ends, times
// out or Harvey dies, the launcher — PID 1 of its namespace — ends, and the
// kernel kills every process left in it, setsid and double-forked ones
// included. On macOS it becomes sandbox-exec with a Seatbelt profile built
// from the same Spec.
//
// Harvey itself starts the launcher as a plain child: Harvey is not
// dumpable (its environment holds API keys), and the kernel gives a non-
// dumpable process's children's /proc files to root, so an ordinary user
// could not write a new namespace's uid_map from Harvey. The launcher, a
// fresh and dumpable process, makes the namespaces: it starts itself again
// inside them (the inner launcher, PID 1 of the new PID namespace) and
// passes on its exit status. Inside, the command has no capabilities:
// what the launcher mounted cannot be unmounted or made writable again.
//
// What the kernel offers decides the mode (modes.go has the one table of
// what holds in each): full (Landlock and namespaces), namespaces only (no
// Landlock: the mounts alone hold the boundary, every kept tree but the
// writable ones read-only), Landlock only (no user namespaces: Landlock
// alone, no private root), none.
//
// Contract: Available probes the machine once by starting the launcher as
// a command starts it, and says why commands are not confined, or less
// than fully, where they are not (State.Why, NSWhy, LandlockWhy); Enforced
// is true only where the launcher really confines. Wrap turns a Spec into
// the launcher's argv for this machine's mode, and ProcAttr is how to
// start it; StartSpared hands a Landlock-only command to a launcher
// Harvey started ahead (StartJoined one of the session's network to its
// holder); RunLauncher is the launcher's main. Nothing outside the Spec's trees can be written, and
// nothing outside its trees and the system's can be read, by the command
// or anything it starts. The package decides nothing about what a command
// should be allowed: the caller's Spec says it.
package sandbox

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/harvey-agent/harvey/internal/datadir"
)

// Arg is the hidden first argument that makes harvey the launcher.
const Arg = "__harvey_sandbox"

// Spec is what the launcher enforces before it runs the command.
type Spec struct {
	Argv      []string     `json:"argv"`
	Dir       string       `json:"dir"`
	Env       []string     `json:"env"`
	Workspace string       `json:"workspace"`
	RW        []string     `json:"rw"`       // writable trees (workspace, TMPDIR, caches, user paths)
	RO        []string     `json:"ro"`       // readable trees (system, toolchains)
	ReadOnly  []string     `json:"readonly"` // inside RW, kept read-only (.git/'s config and hooks); missing ones skipped
	Ensure    []string     `json:"ensure"`   // directories created empty (then kept read-only) when missing: .git/hooks
	Hidden    []string     `json:"hidden"`   // shown as empty read-only directories (agents/)
	Pinned    []string     `json:"pinned"`   // directories bound onto themselves: they cannot be renamed, removed or replaced (.git)
	Masked    []string     `json:"masked"`   // files that read as empty (credentials inside readable trees)
	Overlays  []CacheLayer `json:"overlays"` // caches seen through a private writable layer
	Exec      []string     `json:"exec"`     // when set (safe mode), only these programs may run
	Root      string       `json:"root"`     // an empty directory, in no kept tree, where the command's root is built
	Network   bool         `json:"network"`
	// Timeout is the command's timeout in milliseconds (0: none): without
	// a PID namespace the launcher ends the command itself a little after
	// it, should Harvey not have.
	Timeout int64 `json:"timeout,omitempty"`
	// LandlockABI, when set, is the newest Landlock ABI the launcher uses:
	// how the tests meet an older kernel's Landlock (HARVEY_TEST_LANDLOCK_ABI,
	// Ubuntu 24.04's 6.8 has ABI 4, without signal scoping) on a new one.
	LandlockABI int    `json:"landlock_abi,omitempty"`
	Proxy       string `json:"proxy"` // the registry proxy's unix socket: without the network, the one way out
	NoNS        bool   `json:"nons"`  // do not use namespaces (Landlock only; set by Wrap where there are none)
	// NoLandlock: do not apply Landlock (namespaces only; set by Wrap
	// where the kernel has none). The launcher refuses a spec with
	// neither.
	NoLandlock bool `json:"nolandlock"`
	// CacheEnv is the caller's: variables that point the command's tools
	// at private caches (Landlock only), merged into Env before the spec
	// reaches the launcher.
	CacheEnv []string `json:"-"`
	// Inner is set by the launcher for the copy of itself it starts in the
	// new namespaces; never by a caller.
	Inner bool `json:"inner"`
	// Session is the control socket of the session's network (session_linux.go):
	// a command with it runs in the one network namespace every command of
	// the session shares, started there by its holder, instead of in one of
	// its own. Holder marks the spec that starts that holder, which listens
	// on the socket; Forwards are the host's services (127.0.0.1:5432) it
	// listens for on the session's loopback and reaches through the registry
	// proxy. Joined and ProxyURL are the holder's, for the command it
	// starts: its network is the session's, the proxy at that URL.
	Session  string   `json:"session,omitempty"`
	Holder   bool     `json:"holder,omitempty"`
	Forwards []string `json:"forwards,omitempty"`
	Joined   bool     `json:"joined,omitempty"`
	Spare    bool     `json:"spare,omitempty"` // a launcher started ahead (the holder's, or Harvey's with NoNS), its spec still to come (on descriptor 3)
	ProxyURL string   `json:"proxy_url,omitempty"`
	// Loopback is the session's own address on the loopback (127.a.b.c)
	// where there are no namespaces (Landlock only): the launcher binds a
	// command's servers there and connects its loopback to it
	// (netsuper_linux.go).
	Loopback string `json:"loopback,omitempty"`
}

// State is what this machine offers, found once.
type State struct {
	once     sync.Once
	Landlock int    // Landlock ABI version (0: none)
	NS       bool   // unprivileged user, mount and PID namespaces work
	Seatbelt bool   // macOS: /usr/bin/sandbox-exec is there
	Why      string // why commands are not sandboxed, when they are not
	// LandlockWhy says why there is no Landlock, NSWhy why there are no
	// namespaces (what the kernel answered), NSFix what the user can do.
	LandlockWhy, NSWhy, NSFix string
	self                      string // the harvey executable (the launcher)
	// unshare is util-linux's unshare where the probe found it makes the
	// namespaces here: the launcher's first stage, a small program that
	// starts in a third of the time Harvey does. "": Harvey's own first
	// stage (outer) makes them.
	unshare   string
	Tmp       string // the session's private TMPDIR
	root      string // an empty directory where each command's root is built (Linux)
	forceNone bool   // HARVEY_SANDBOX=off in tests of the fallback
}

var machine State

// Available probes the machine once.
func Available() *State {
	machine.once.Do(func() {
		s := &machine
		if os.Getenv("HARVEY_TEST_NO_SANDBOX") == "1" {
			s.forceNone = true
			s.Why = "the sandbox is unavailable (forced off for a test)"
			return
		}
		exe, err := os.Executable()
		if err != nil {
			s.Why = "cannot find Harvey's own executable to start the sandbox launcher: " + err.Error()
			return
		}
		s.self = exe
		if d, err := os.MkdirTemp("", datadir.TempPrefix("tmp")); err == nil {
			s.Tmp = d
		}
		if d, err := os.MkdirTemp("", datadir.TempPrefix("root")); err == nil {
			s.root = d
		}
		probeSandbox(s)
		if s.Mode() == ModeNone {
			s.Why = noSandboxWhy(s)
		}
		if s.Mode() == ModeLandlock {
			AdoptOrphans()
		}
	})
	return &machine
}

// Enforced reports whether commands really run in the sandbox here.
func (s *State) Enforced() bool {
	return s.Mode() != ModeNone
}

// RemoveTmp removes the session's private TMPDIR and the directory the
// commands' roots are built in (at exit).
func RemoveTmp() {
	if machine.Tmp != "" && strings.Contains(machine.Tmp, "harvey-tmp-") {
		os.RemoveAll(machine.Tmp)
	}
	if machine.root != "" && strings.Contains(machine.root, "harvey-root-") {
		os.Remove(machine.root)
	}
}

// Wrap turns a command into the launcher's argv for this machine's mode
// (the launcher gets the command's environment inside the spec; its own
// is empty). The spec's NoNS and NoLandlock are the mode's: decided here,
// for every caller.
func (s *State) Wrap(spec *Spec) []string {
	if spec.Root == "" {
		spec.Root = s.root
	}
	spec.NoNS = spec.NoNS || !s.NS
	spec.NoLandlock = spec.NoLandlock || s.Landlock == 0
	if n, err := strconv.Atoi(os.Getenv("HARVEY_TEST_LANDLOCK_ABI")); err == nil && n > 0 {
		spec.LandlockABI = n
	}
	spec.Inner, spec.Joined = false, false
	if spec.NoNS || spec.Network && !spec.Holder {
		spec.Session = "" // no namespaces, or the host's network: nothing to join
	}
	if spec.Session != "" && !spec.Holder {
		// The launcher's first stage is the session's holder: this argv is
		// the small client that hands it the command (join).
		b, _ := json.Marshal(spec)
		return []string{s.self, Arg, base64.StdEncoding.EncodeToString(b)}
	}
	if spec.Holder && s.unshare != "" {
		spec.Inner = true
		b, _ := json.Marshal(spec)
		return append([]string{s.unshare, "--user", "--map-current-user", "--keep-caps", "--net", "--"}, s.self, Arg, base64.StdEncoding.EncodeToString(b))
	}
	if !spec.NoNS && s.unshare != "" && !spec.Holder {
		spec.Inner = true
		b, _ := json.Marshal(spec)
		return append(unshareArgv(s.unshare, spec.Network), s.self, Arg, base64.StdEncoding.EncodeToString(b))
	}
	b, _ := json.Marshal(spec)
	return []string{s.self, Arg, base64.StdEncoding.EncodeToString(b)}
}

// unshareArgv is util-linux's unshare making the namespaces the inner
// launcher runs in, as the launcher's own first stage does (outer): a new
// user namespace mapping the user to themselves, the launcher keeping its
// capabilities there (asYourself; setgroups denied), mount,
// PID (the inner launcher its PID 1, killed when unshare dies) and, unless
// the command may use the network, network namespaces.
func unshareArgv(unshare string, network bool) []string {
	argv := []string{unshare, "--user", "--map-current-user", "--keep-caps", "--mount", "--pid", "--fork", "--kill-child=SIGKILL"}
	if !network {
		argv = append(argv, "--net")
	}
	return append(argv, "--")
}

// Under reports whether p is one of roots or inside one (an empty root
// holds nothing).
func Under(p string, roots []string) bool {
	for _, r := range roots {
		if r == "" {
			continue
		}
		if p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// RunLauncher is the launcher's main (harvey __harvey_sandbox SPEC).
func RunLauncher(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "harvey sandbox: bad launcher arguments")
		return 126
	}
	raw, err := base64.StdEncoding.DecodeString(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "harvey sandbox: bad spec")
		return 126
	}
	var spec Spec
	if err := json.Unmarshal(raw, &spec); err != nil || len(spec.Argv) == 0 {
		fmt.Fprintln(os.Stderr, "harvey sandbox: bad spec")
		return 126
	}
	return launch(spec)
}

// CacheLayer is a cache seen through an overlay: the user's cache below,
// read-only; what a command adds or changes goes to Upper, a layer Harvey
// keeps per workspace (and purpose), so the user's own tools never load a
// byte a command wrote, while the workspace's next build finds its own.
type CacheLayer struct {
	Lower string `json:"lower"`
	Upper string `json:"upper"`
	Work  string `json:"work"`
	// Empty is an empty directory of Harvey's that stands in for Lower
	// when the cache does not exist yet: the command sees an empty cache
	// it can fill, and nothing is made in the user's home.
	Empty string `json:"empty"`
	// Below is one more read-only layer under Lower ("": none): what
	// Harvey fetched once for every workspace (internal/npxshare's npx
	// packages), seen where the user's cache has nothing of its own. Where
	// the cache does not exist yet it is the only lower layer.
	Below string `json:"below,omitempty"`
}

// Lowers is the overlay's lowerdir value: Lower, then Below under it,
// each escaped as overlayfs's option parser needs.
func (l CacheLayer) Lowers(escape func(string) string) string {
	if l.Below == "" {
		return escape(l.Lower)
	}
	return escape(l.Lower) + ":" + escape(l.Below)
}

// Relay copies between a client and an upstream connection, each way until
// its end (from is what the client sends: its connection, or a reader
// holding bytes already read from it), then closes both. The proxy's
// tunnels and the launcher's loopback port use it.
func Relay(client net.Conn, from io.Reader, up net.Conn) {
	done := make(chan struct{})
	go func() {
		io.Copy(up, from)
		closeWrite(up)
		close(done)
	}()
	io.Copy(client, up)
	closeWrite(client)
	<-done
	client.Close()
	up.Close()
}

// closeWrite ends the writing side of a connection (or closes it).
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}
