package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Mode is the sandbox this machine gives commands, chosen by what the
// kernel really offers (Available probes it by starting the launcher
// exactly as a command starts it).
type Mode string

const (
	ModeFull       Mode = "full"            // Landlock and user, mount, PID and network namespaces
	ModeNamespaces Mode = "namespaces only" // no Landlock (Raspberry Pi OS's kernel)
	ModeLandlock   Mode = "Landlock only"   // no user namespaces (Ubuntu 23.10+ unconfined, hardened kernels, containers)
	ModeSeatbelt   Mode = "Seatbelt"        // macOS sandbox-exec
	ModeNone       Mode = "none"            // neither: commands refuse unless the user's own config allows them unsandboxed
)

// Modes are the modes in the order the table shows them.
var Modes = []Mode{ModeFull, ModeNamespaces, ModeLandlock, ModeSeatbelt, ModeNone}

// Promise is one thing the sandbox holds for every command, and how (or
// whether) each mode holds it. A value that starts with "NO" is a promise
// that mode does not keep.
type Promise struct {
	What string
	How  map[Mode]string
}

// Promises is the one table of what holds in each mode: /security prints
// the current mode's column, and docs/sandbox.md is this table (a test
// keeps them equal).
var Promises = []Promise{
	{"Writes only in the workspace, TMPDIR, caches and `sandbox.writable`", map[Mode]string{
		ModeFull:       "yes (Landlock, and a root of its own)",
		ModeNamespaces: "yes (a root of its own; every other tree mounted read-only)",
		ModeLandlock:   "yes (Landlock)",
		ModeSeatbelt:   "yes (the Seatbelt profile)",
		ModeNone:       "NO",
	}},
	{"No reads of your home (only the toolchains your PATH leads to)", map[Mode]string{
		ModeFull:       "yes (not in its root)",
		ModeNamespaces: "yes (not in its root)",
		ModeLandlock:   "yes (Landlock)",
		ModeSeatbelt:   "yes (the Seatbelt profile)",
		ModeNone:       "NO",
	}},
	{"`agents/` hidden, `.git` pinned, its config and hooks read-only", map[Mode]string{
		ModeFull:       "yes (mounts)",
		ModeNamespaces: "yes (mounts)",
		ModeLandlock:   "writable, but changes are undone and reported after each command, and within half a second while a job runs (by Harvey's guardian, or the next start, should Harvey stop first)",
		ModeSeatbelt:   "read-only (the Seatbelt profile)",
		ModeNone:       "NO",
	}},
	{"Caches written through a private layer, never the cache your own tools load", map[Mode]string{
		ModeFull:       "yes (overlayfs; read-only where the kernel has none)",
		ModeNamespaces: "yes (overlayfs; read-only where the kernel has none)",
		ModeLandlock:   "yes, by each tool's own setting (Go, npm, pip, uv, yarn, bun, deno, Gradle, the XDG cache): a private cache per workspace (cargo's whole home); Maven's read-only",
		ModeSeatbelt:   "NO: written directly",
		ModeNone:       "NO",
	}},
	{"Network: the session's own loopback, package registries through Harvey's proxy", map[Mode]string{
		ModeFull:       "yes (one network namespace for the session's commands)",
		ModeNamespaces: "yes (one network namespace for the session's commands)",
		ModeLandlock:   "yes on Landlock ABI 4+ (the session's own loopback address; the launcher makes each TCP bind and connect itself, Landlock refusing the command's own), UDP not restricted; before ABI 4, TCP not restricted",
		ModeSeatbelt:   "no network unless allowed; no registry proxy",
		ModeNone:       "NO",
	}},
	{"Ports: a server of the session's reaches your machine only where you publish it (/ports), on 127.0.0.1", map[Mode]string{
		ModeFull:       "yes (the session's namespace; /ports relays to it)",
		ModeNamespaces: "yes (the session's namespace; /ports relays to it)",
		ModeLandlock:   "yes on Landlock ABI 4+ (servers bind the session's own 127.a.b.c, whatever address they ask for; /ports relays to it)",
		ModeSeatbelt:   "no server can listen unless sandbox.network is true, and then on your machine's network",
		ModeNone:       "NO",
	}},
	{"Every process ends with its command", map[Mode]string{
		ModeFull:       "yes (a PID namespace)",
		ModeNamespaces: "yes (a PID namespace)",
		ModeLandlock:   "yes (the launcher, their subreaper, kills the whole tree left, however deep; a seccomp filter keeps commands from signalling any launcher, Harvey or its guardian)",
		ModeSeatbelt:   "NO: a process that leaves its group (setsid) lives on",
		ModeNone:       "NO",
	}},
	{"Your other processes and sockets out of reach", map[Mode]string{
		ModeFull:       "yes (own /proc; no socket of yours exists for it)",
		ModeNamespaces: "yes (own /proc; no socket of yours exists for it)",
		ModeLandlock:   "NO: unix sockets (ssh-agent, Docker) reachable; other processes visible (not their memory or environment)",
		ModeSeatbelt:   "partly (the Seatbelt profile)",
		ModeNone:       "NO",
	}},
	{"Safe mode: only `allowed_commands` execute, whatever starts them", map[Mode]string{
		ModeFull:       "yes (Landlock)",
		ModeNamespaces: "NO: the command line is checked, what its programs start is not",
		ModeLandlock:   "yes (Landlock)",
		ModeSeatbelt:   "yes (the Seatbelt profile)",
		ModeNone:       "NO",
	}},
}

// Table is Promises as a Markdown table, one column a mode.
func Table() string {
	var b strings.Builder
	b.WriteString("| |")
	for _, m := range Modes {
		fmt.Fprintf(&b, " %s |", m)
	}
	b.WriteString("\n|---|")
	for range Modes {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, p := range Promises {
		fmt.Fprintf(&b, "| %s |", p.What)
		for _, m := range Modes {
			fmt.Fprintf(&b, " %s |", p.How[m])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Lacks lists what mode m does not hold, each promise and how it falls
// short, for the start line and /security.
func Lacks(m Mode) []string {
	var out []string
	for _, p := range Promises {
		if h := p.How[m]; !strings.HasPrefix(h, "yes") {
			out = append(out, strings.ReplaceAll(p.What, "`", "")+": "+h)
		}
	}
	return out
}

// Mode is the sandbox commands get here.
func (s *State) Mode() Mode {
	switch {
	case s.forceNone || s.self == "":
		return ModeNone
	case s.Seatbelt:
		return ModeSeatbelt
	case s.Landlock > 0 && s.NS:
		return ModeFull
	case s.NS:
		return ModeNamespaces
	case s.Landlock > 0:
		return ModeLandlock
	}
	return ModeNone
}

// LoopbackNet says whether the launcher gives commands the session's
// loopback without namespaces (Landlock only, ABI 4 and later: Spec's
// Loopback).
func (s *State) LoopbackNet() bool {
	return s.Mode() == ModeLandlock && s.landlockABI() >= 4
}

// landlockABI is the Landlock ABI the launcher uses here (the tests'
// HARVEY_TEST_LANDLOCK_ABI lowers it, as Wrap does).
func (s *State) landlockABI() int {
	if n, err := strconv.Atoi(os.Getenv("HARVEY_TEST_LANDLOCK_ABI")); err == nil && n > 0 {
		return min(n, s.Landlock)
	}
	return s.Landlock
}

// Summary is one line naming the mode and, where it is less than the
// whole sandbox, why and what the user can do (the start line). loopback:
// the session has its loopback address (sandboxpolicy.SessionLoopback; none
// where the loopback is 127.0.0.1 alone), which Landlock only needs for
// any TCP.
func (s *State) Summary(loopback bool) string {
	switch m := s.Mode(); m {
	case ModeFull, ModeSeatbelt:
		return "sandbox: " + string(m)
	case ModeNamespaces:
		return "sandbox: namespaces only (" + s.LandlockWhy + "): safe mode cannot limit what allowed programs start; everything else holds"
	case ModeLandlock:
		net := "the session's loopback and the registry proxy through the launcher"
		switch {
		case s.landlockABI() < 4:
			net = "TCP not restricted (Landlock before ABI 4)"
		case !loopback:
			net = "no TCP at all (no loopback address but 127.0.0.1 here for the session's own)"
		}
		return "sandbox: Landlock only (" + s.NSWhy + "): " + net + ", private caches by each tool's setting, agents/ and .git changes undone after each command, your unix sockets reachable. " + s.NSFix
	}
	return "sandbox: none (" + s.Why + ")"
}
