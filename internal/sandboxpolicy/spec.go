package sandboxpolicy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/datadir"
	"github.com/harvey-agent/harvey/internal/guard"
	"github.com/harvey-agent/harvey/internal/sandbox"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// SpecFor is what a command's sandbox is built from: the workspace, the
// user's sandbox: block, safe mode's allowlist, the purpose its caches'
// private layers are kept under ("run" for commands, "mcp-NAME" for a
// server, which runs beside them and must not share a layer), and a bare
// run (no caches, no network: Harvey's own helpers).
type SpecFor struct {
	Root     string
	Policy   config.SandboxPolicy
	SafeMode bool
	Allowed  []string
	Purpose  string
	Bare     bool
	// Readable are more paths the command may read (a workspace hook's
	// transcript); Network lets this one command connect, the registry
	// proxy kept (the user's yes to a refused connection).
	Readable []string
	Network  bool
	// Hosts are a tool's own hosts (its network:), reached through a
	// proxy of its own besides the user's sandbox.hosts.
	Hosts []string
	// Hook: the view a hook of the user's own gets besides a command's
	// (hookview.go); nil for every other program.
	Hook *HookView
}

// toolchainRoots remembers ToolchainRoots for a moment: a command's spec
// walks every PATH entry's links, and back-to-back commands (a reply's
// calls, a script) need not walk them again. A toolchain installed meanwhile
// is seen by the command after the moment.
var toolchainRoots struct {
	sync.Mutex
	key   string
	at    time.Time
	roots []string
}

const toolchainRootsFor = 2 * time.Second

func toolchainRootsNow(home string) []string {
	env := os.Environ()
	key := home + "\x00" + strings.Join(env, "\x00")
	c := &toolchainRoots
	c.Lock()
	defer c.Unlock()
	if c.key != key || time.Since(c.at) > toolchainRootsFor {
		c.key, c.at, c.roots = key, time.Now(), ToolchainRoots(env, home)
	}
	return slices.Clone(c.roots)
}

// CommandSpec is the sandbox of a command the user or the model runs in
// the workspace: writes in the workspace (agents/ hidden, .git/'s parts
// that run programs read-only), TMPDIR, the caches (or their private
// layers) and the user's paths; the toolchains on PATH readable; the
// registry proxy the only way out unless the policy gives the network; in
// safe mode only the allowlisted programs execute. The one place a
// command's Spec is built.
func CommandSpec(w SpecFor) *sandbox.Spec {
	rw, caches, ro := Paths(w.Policy)
	if w.Bare {
		caches = nil
	}
	landlockOnly := sandbox.Available().Mode() == sandbox.ModeLandlock
	if landlockOnly {
		ro = append(ro, caches...) // read, never written: a private cache of each tool's instead (PrivateCaches)
	} else {
		rw = append(rw, caches...)
	}
	gitRO, gitRW := guard.Protected(w.Root)
	home, _ := os.UserHomeDir()
	ro = append(ro, toolchainRootsNow(home)...)
	if w.Policy.Network {
		ro = append(ro, ResolvConfDir()...)
	}
	spec := &sandbox.Spec{
		Workspace: w.Root,
		RW:        append(append([]string{w.Root}, rw...), gitRW...),
		RO:        ro,
		ReadOnly:  gitRO,
		Hidden:    []string{filepath.Join(w.Root, wspath.AgentsDir)},
		Network:   w.Policy.Network && !w.Bare,
	}
	for _, p := range gitRO {
		if filepath.Base(p) == "hooks" { // made when missing, so none can appear (submodules' too)
			spec.Ensure = append(spec.Ensure, p)
		}
	}
	spec.Pinned = guard.Pinned(w.Root)
	for _, d := range []string{"caches", "npx"} {
		if data := datadir.Path(); data != "" && sandbox.Under(filepath.Join(data, d), append(append([]string{}, spec.RW...), spec.RO...)) {
			// Every workspace's cache layers, and the npx packages every
			// workspace's servers share (internal/npxshare): never visible
			// to a command (its own are mounted over its caches already).
			spec.Hidden = append(spec.Hidden, filepath.Join(data, d))
		}
	}
	if w.Hook != nil {
		spec.RO = append(spec.RO, w.Hook.readable()...)
		spec.RW = append(spec.RW, w.Hook.writable()...)
		spec.Network = spec.Network || w.Hook.Network
	}
	spec.RO = append(spec.RO, w.Readable...) // before the masks: a credential file in them is masked too
	if home != "" {
		spec.Masked = MaskedCredentials(home, append(append([]string{}, spec.RW...), spec.RO...))
	}
	privateCachesOf(w, spec, caches, landlockOnly)
	if !spec.Network && !w.Bare {
		proxyFor(spec, w.Policy.Hosts, w.Hosts, landlockOnly)
	}
	if w.SafeMode {
		spec.Exec = safeModePrograms(w.Allowed)
	}
	spec.Network = spec.Network || w.Network
	if !spec.Network && !w.Bare {
		spec.Forwards = LocalServices(append(slices.Clip(w.Policy.Hosts), w.Hosts...)) // reached when it joins the session's network (internal/runner)
	}
	return spec
}

// proxyFor gives spec the registry proxy (with hosts the user's) as its
// one way out, and where there are no namespaces the session's loopback
// address the launcher keeps (SessionLoopback; "": none here).
func proxyFor(spec *sandbox.Spec, hosts, own []string, landlockOnly bool) {
	if sock := ToolProxy(hosts, own); sock != "" {
		spec.Proxy = sock
		spec.RO = append(spec.RO, filepath.Dir(sock))
		if landlockOnly {
			spec.Loopback = SessionLoopback()
		}
	}
}

// privateCachesOf gives the spec's caches their private side: a layer over
// each (CacheOverlays), or where there is no mount namespace (Landlock
// only), each tool's own setting pointed at a private cache of the
// workspace's (PrivateCaches).
func privateCachesOf(w SpecFor, spec *sandbox.Spec, caches []string, landlockOnly bool) {
	switch {
	case landlockOnly && !w.Bare:
		env, dirs := PrivateCaches(w.Root, w.Purpose, w.Policy.Network || SessionLoopback() != "")
		spec.CacheEnv, spec.RW = env, append(spec.RW, dirs...)
		if prog, exe := GoCacheProg(env); prog != "" && !w.SafeMode { // safe mode runs only the programs it allows
			spec.CacheEnv, spec.RO = append(spec.CacheEnv, "GOCACHEPROG="+prog), append(spec.RO, exe)
		}
	case !landlockOnly:
		spec.Overlays = CacheOverlays(w.Root, w.Purpose, caches)
	}
}

// safeModePrograms are the programs safe mode lets execute: each allowed
// command found on PATH, and what its link leads to (none found: a path
// that names nothing, so nothing executes).
func safeModePrograms(allowed []string) []string {
	var out []string
	for _, c := range allowed {
		if p, err := LookPath(c); err == nil {
			out = append(out, p)
			if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
				out = append(out, r)
			}
		}
	}
	if len(out) == 0 {
		out = []string{"/nonexistent"}
	}
	return out
}
