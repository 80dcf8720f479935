//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// loopbackNet brings up lo in the command's network namespace and, when
// there is a registry proxy, listens on a loopback port that forwards each
// connection to its unix socket; the command's environment gets the
// proxy variables. The forwarding goroutines never run on the thread
// Landlock restricts (it stays locked to the launcher's main goroutine).
func loopbackNet(spec *Spec) error {
	if err := loopbackUp(); err != nil {
		return err
	}
	if spec.Proxy == "" {
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("proxy port: %v", err)
	}
	go forwardEach(ln, func() (net.Conn, error) { return net.Dial("unix", spec.Proxy) })
	setProxyEnv(spec, "http://"+ln.Addr().String())
	return nil
}

// forwardEach relays each connection ln accepts to what dial reaches,
// until ln closes.
func forwardEach(ln net.Listener, dial func() (net.Conn, error)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			up, err := dial()
			if err != nil {
				c.Close()
				return
			}
			Relay(c, c, up)
		}()
	}
}

// setProxyEnv points the command's tools at the registry proxy's port
// (url; "": no proxy, and none of the user's either).
func setProxyEnv(spec *Spec, url string) {
	spec.Env = slices.DeleteFunc(spec.Env, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(proxyVars, strings.ToUpper(name))
	})
	if url == "" {
		return
	}
	local := "localhost,127.0.0.1,::1"
	if spec.Loopback != "" {
		local += "," + spec.Loopback // the session's own (Landlock only): its servers print it
	}
	spec.Env = append(spec.Env, "HTTP_PROXY="+url, "HTTPS_PROXY="+url, "http_proxy="+url, "https_proxy="+url,
		"NO_PROXY="+local, "no_proxy="+local, "npm_config_proxy="+url, "npm_config_https_proxy="+url)
	setJavaProxy(spec, url)
}

// setJavaProxy points Maven and Gradle at the proxy too: Java reads none
// of the proxy variables, and mvn (and mvnw) hand MAVEN_OPTS to Java, gradle
// (and gradlew) GRADLE_OPTS, whose system properties name the proxy (Gradle's
// client hands its system properties to the daemon that runs the build).
// They follow the user's own options (the last of a property wins). Only
// a convenience: the proxy is the sole way out whatever a project sets.
// Gradle's scripts parse GRADLE_OPTS as the shell does (4.x-6.x by eval,
// 7.x+ by xargs), so the hosts' "|" is quoted there; mvn splits MAVEN_OPTS
// on spaces alone, so it is not quoted there.
func setJavaProxy(spec *Spec, proxy string) {
	hostPort := strings.TrimPrefix(proxy, "http://")
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return
	}
	hosts := strings.ReplaceAll(strings.TrimSuffix("localhost|127.0.0.1|"+spec.Loopback, "|"), ",", "|")
	opts := fmt.Sprintf("-Dhttp.proxyHost=%[1]s -Dhttp.proxyPort=%[2]s -Dhttps.proxyHost=%[1]s -Dhttps.proxyPort=%[2]s -Dhttp.nonProxyHosts=", host, port)
	for _, o := range [][2]string{{"MAVEN_OPTS", opts + hosts}, {"GRADLE_OPTS", opts + "'" + hosts + "'"}} {
		name, opts := o[0], o[1]
		i := slices.IndexFunc(spec.Env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
		if i < 0 {
			spec.Env = append(spec.Env, name+"="+opts)
			continue
		}
		spec.Env[i] = name + "=" + strings.TrimSpace(strings.TrimPrefix(spec.Env[i], name+"=")+" "+opts)
	}
}

// loopbackUp brings up lo in the calling process's network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %v", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: %v", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback up: %v", err)
	}
	return nil
}

// proxyVars are the variables loopbackNet sets (upper-cased).
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "NPM_CONFIG_PROXY", "NPM_CONFIG_HTTPS_PROXY"}

// launch is the launcher: read-only binds, Landlock, then the command as
// its child; its exit status is the command's.
func launch(spec Spec) int {
	if spec.Spare && (spec.Inner || spec.NoNS) {
		return runSpare(spec.NoNS)
	}
	CloseInheritedFDs() // only 0-2 reach the command
	if code, done := launchStage(spec); done {
		return code
	}
	watched := newFiles(spec.ReadOnly)
	if spec.Joined {
		setProxyEnv(&spec, spec.ProxyURL) // the session's loopback is up, its proxy port open
	} else if !spec.NoNS && !spec.Network {
		if err := loopbackNet(&spec); err != nil {
			fmt.Fprintf(os.Stderr, "harvey sandbox: %v\n", err)
			return 126
		}
	}
	if !spec.NoNS {
		if err := viewMounts(spec); err != nil {
			fmt.Fprintf(os.Stderr, "harvey sandbox: %v\n", err)
			return 126
		}
	}
	np := sessionNet(spec)
	if np != nil {
		if err := sessionProxy(&spec, np); err != nil {
			fmt.Fprintf(os.Stderr, "harvey sandbox: %v\n", err)
			return 126
		}
	}
	harvey := os.Getppid()
	if spec.NoNS {
		// No PID namespace: become the subreaper of everything the command
		// starts, so orphans are found and killed when it ends; and not
		// dumpable, so the command (the same user) cannot trace it.
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
		_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	}
	cmd, code := startConfined(spec, harvey, np)
	if cmd == nil {
		return code
	}
	if spec.NoNS {
		stop := endOnSignal(cmd, spec, harvey)
		defer stop()
	}
	code = exitCode(cmd.Wait())
	left := 0
	if spec.NoNS {
		left = killDescendants()
	} else {
		left = len(treeUnder(os.Getpid(), nil))
		_ = unix.Kill(-1, unix.SIGKILL) // every process left in the namespace (PID 1 is spared)
	}
	sayLeft(left, spec)
	removeNewFiles(watched)
	reportEnd(code) // a spare's: the holder hears now, not after this exit
	// As PID 1 of the namespace, returning ends every process left in it.
	return code
}

// sayLeft tells the command's reader (a model reads its stderr) that it
// ended leaving processes running, which were stopped with it: a server
// started with a trailing &, nohup or setsid in a command that ends is not
// a server that runs (issue 76), and must not look like one.
func sayLeft(n int, spec Spec) {
	if n == 0 || spec.Holder {
		return
	}
	fmt.Fprintf(os.Stderr, "harvey sandbox: the command ended leaving %d process%s running (started with &, nohup or setsid?); %s stopped with it. A server that must keep running is a background job: run_command with background: true, or !cmd &\n",
		n, map[bool]string{true: "", false: "es"}[n == 1], map[bool]string{true: "it was", false: "they were"}[n == 1])
}

// exitCode is the launcher's exit status for the command's Wait error.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if code := ee.ExitCode(); code >= 0 {
			return code
		}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return 128 + 9
	}
	return 1
}

// startConfined starts the command from a thread confined for it (a nil
// command: it did not start, with the launcher's exit status). Landlock
// (and, without namespaces, the signal filter) is applied to that one OS
// thread, which then starts the command: a fork copies the forking
// thread's Landlock domain and seccomp filter. So the command is
// restricted without a second Harvey start (PID 1 of a namespace cannot
// restrict all its threads: the all-thread signal go-landlock uses before
// Landlock ABI 8 never arrives), and it is not PID 1 either. The thread is
// never the launcher's leader (whose /proc status is the launcher's: an
// unconfined launcher is never mistaken for a command's process), and it
// ends with its goroutine, so nothing else ever runs on it.
func startConfined(spec Spec, harvey int, np *netPolicy) (*exec.Cmd, int) {
	var cmd *exec.Cmd
	code := 0
	onThreadOfItsOwn(func() {
		if err := confineThread(spec); err != nil {
			fmt.Fprintf(os.Stderr, "harvey sandbox: %v\n", err)
			code = 126
			return
		}
		if spec.NoNS {
			if err := protectFromCommand(harvey, np); err != nil {
				fmt.Fprintf(os.Stderr, "harvey sandbox: the signal filter: %v\n", err)
				code = 126
				return
			}
		}
		c := &exec.Cmd{Path: lookPathIn(spec.Argv[0], spec.Env), Args: spec.Argv, Env: spec.Env, Dir: spec.Dir,
			Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
			// A process group of its own: kill 0 reaches the command's
			// processes, never the launcher.
			SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
		if code = startError(spec, c.Start()); code == 0 {
			cmd = c
		}
	})
	return cmd, code
}

// startError is the launcher's exit status for the command's Start error
// (0: it started), said on standard error.
func startError(spec Spec, err error) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		fmt.Fprintf(os.Stderr, "harvey sandbox: %s: not allowed to execute here\n", spec.Argv[0])
		return 126
	}
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Op == "chdir" {
		fmt.Fprintf(os.Stderr, "harvey sandbox: %v\n", err)
		return 126
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", spec.Argv[0], unwrapExecErr(err))
	return 127
}

// launchStage is the launcher's stage for spec: the outer one starts the
// inner one in new namespaces (done, with its exit status); a spec with
// neither Landlock nor namespaces, or an inner launcher outside namespaces
// of its own, is refused. Not done: this process confines the command.
func launchStage(spec Spec) (int, bool) {
	switch {
	case spec.NoNS && spec.NoLandlock:
		fmt.Fprintln(os.Stderr, "harvey sandbox: neither Landlock nor namespaces: nothing to confine the command with")
		return 126, true
	case spec.Holder && spec.Inner:
		return runHolder(spec), true
	case spec.Holder:
		return outer(spec, holderAttr()), true
	case spec.Session != "" && !spec.Inner:
		return join(spec), true
	case !spec.NoNS && !spec.Inner:
		return outer(spec, nsAttr(spec.Network)), true
	case spec.Inner && os.Getpid() != 1:
		fmt.Fprintln(os.Stderr, "harvey sandbox: the inner launcher is not in namespaces of its own")
		return 126, true
	}
	return 0, false
}

// newFiles lists the protected files that do not exist yet and that a
// command must not leave behind (a config that names programs, a commondir
// that points the user's next git at another configuration): they cannot
// be made read-only before they exist, so they are removed after it.
func newFiles(protected []string) []string {
	var out []string
	for _, p := range protected {
		if filepath.Base(p) == "hooks" {
			continue // made before the command, so it exists
		}
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			out = append(out, p)
		}
	}
	return out
}

// removeNewFiles removes what newFiles watched, if the command made it
// (every process of the command has ended by now).
func removeNewFiles(watched []string) {
	for _, p := range watched {
		if _, err := os.Lstat(p); err == nil && os.RemoveAll(p) == nil {
			fmt.Fprintf(os.Stderr, "harvey sandbox: removed %s, which the command created (git would read it as its configuration)\n", p)
		}
	}
}

// mountsPrivate: a spare launcher made its mount namespace private already.
var mountsPrivate bool

// viewMounts builds the command's view of the system in its mount
// namespace, as a new root made of what it may use and nothing else: an
// empty read-only tmpfs holding the spec's readable and writable trees
// (bound from descriptors opened first), a few device nodes and a /proc of
// its own PID namespace. No other file exists for the command, so no
// pathname socket of the system or the user's session (Docker's, D-Bus,
// ssh-agent) can be reached, even where reading is already denied.
// agents/ is an empty read-only directory; git's program-running parts are
// read-only; credential files read as empty.
func viewMounts(spec Spec) error {
	if !mountsPrivate {
		if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("mount namespace: %v", err)
		}
	}
	for _, d := range spec.Ensure {
		os.Mkdir(d, 0o755) // so no hooks directory can appear later
	}
	kept := append(append(append(append([]string{}, spec.RW...), spec.RO...), spec.Exec...), spec.Dir, spec.Workspace)
	kept = append(kept, "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
	binds, err := openKept(kept, spec.Overlays, readOnlyTree(spec))
	if err != nil {
		return err
	}
	defer func() {
		for _, b := range binds {
			unix.Close(b.fd)
		}
	}()
	newRoot := spec.Root
	if newRoot == "" || Under(newRoot, kept) {
		return errors.New("no directory to build the command's root in")
	}
	os.MkdirAll(newRoot, 0o700) // a cleaner of /tmp may have removed it during a long session
	if err := unix.Mount("tmpfs", newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=755,size=1m"); err != nil {
		return fmt.Errorf("new root: %v", err)
	}
	for _, d := range []string{"proc", "tmp", ".oldroot", "dev"} {
		os.MkdirAll(filepath.Join(newRoot, d), 0o755)
	}
	for _, l := range [][2]string{{"/proc/self/fd", "dev/fd"}, {"/proc/self/fd/0", "dev/stdin"}, {"/proc/self/fd/1", "dev/stdout"}, {"/proc/self/fd/2", "dev/stderr"}} {
		os.Symlink(l[0], filepath.Join(newRoot, l[1]))
	}
	rb := &rootBuilder{root: newRoot}
	for _, b := range binds {
		if err := rb.bindKept(b); err != nil {
			return err
		}
	}
	if err := rb.finish(); err != nil {
		return err
	}
	if err := pivotInto(newRoot); err != nil {
		return err
	}
	if err := hideAndMask(spec); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", "/", "tmpfs", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "mode=755,size=1m"); err != nil {
		return fmt.Errorf("read-only root: %v", err)
	}
	return os.Chdir(spec.Dir)
}

// bindKept puts a kept path into the new root: bound from its descriptor,
// or a cache as an overlay with this workspace's layer on top. A path
// that cannot be put there (no mount point can be made, the kernel
// refuses the bind) is left out of the command's view with one line on
// its standard error, never a failed command, unless leaving it out would
// show something writable that must not be: a cache inside a writable
// tree, which the tree would then carry as it is.
func (r *rootBuilder) bindKept(b keptPath) error {
	at := filepath.Join(r.root, b.path)
	if err := r.mountPoint(at, b.dir); err != nil {
		return r.leaveOut(b, at, err)
	}
	if b.layer != nil {
		return r.bindLayer(b, at)
	}
	if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", b.fd), at, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return r.leaveOut(b, at, err)
	}
	if b.ro {
		if err := remountReadOnly(at); err != nil {
			return fmt.Errorf("read-only %s: %v", b.path, err)
		}
	}
	return nil
}

// bindLayer mounts a cache: the user's cache below, this workspace's
// layer above, so what a command writes never reaches the cache the
// user's own tools load. Fail closed: where the kernel refuses (no
// unprivileged overlayfs), the cache is bound read-only, never writable.
func (r *rootBuilder) bindLayer(b keptPath, at string) error {
	if placeStaged(*b.layer, at) {
		return nil
	}
	opts := "lowerdir=" + b.layer.Lowers(overlayEscape) + ",upperdir=" + overlayEscape(b.layer.Upper) + ",workdir=" + overlayEscape(b.layer.Work) + ",userxattr"
	err := unix.Mount("overlay", at, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts)
	if err == nil {
		return nil
	}
	if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", b.fd), at, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return r.leaveOut(b, at, err)
	}
	if rerr := remountReadOnly(at); rerr != nil {
		return fmt.Errorf("the cache %s has no private layer (overlayfs: %v) and cannot be made read-only (%v): the command did not start", b.path, err, rerr)
	}
	fmt.Fprintf(os.Stderr, "harvey sandbox: %s is read-only for this command (no private layer: overlayfs: %v); sandbox.writable: [%s] in your config lets commands write it directly\n", b.path, err, b.path)
	return nil
}

// leaveOut leaves a kept path out of the command's view, saying so in one
// line; an error where what would show in its place is writable: a
// cache, or a read-only tree, inside a writable tree (which carries the
// original as it is).
func (r *rootBuilder) leaveOut(b keptPath, at string, why error) error {
	if b.layer != nil || b.ro {
		if p := existingAbove(at, r.root); p != r.root && !readOnlyAt(p) {
			return fmt.Errorf("%s cannot be mounted (%v), and the writable tree around it would show it writable: the command did not start", b.path, why)
		}
	}
	fmt.Fprintf(os.Stderr, "harvey sandbox: %s is left out of this command's view (%v)\n", b.path, why)
	return nil
}

// existingAbove is at, or the nearest directory above it that exists, no
// higher than root.
func existingAbove(at, root string) string {
	for p := at; Under(p, []string{root}); p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil {
			return p
		}
		if p == root {
			break
		}
	}
	return root
}

// pivotInto makes newRoot the root, with a /proc of the new PID
// namespace: the command sees only its own processes (not the environment
// or command lines of the user's others), and /proc/self/task is the
// command's own (libpsx, used by Landlock in cgo builds, reads it).
// Mounted while the old /proc is still visible (the kernel requires it in
// a user namespace).
func pivotInto(newRoot string) error {
	if err := unix.Mount("proc", filepath.Join(newRoot, "proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("/proc: %v", err)
	}
	if err := unix.PivotRoot(newRoot, filepath.Join(newRoot, ".oldroot")); err != nil {
		return fmt.Errorf("pivot_root: %v", err)
	}
	if err := unix.Unmount("/.oldroot", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the old root: %v", err)
	}
	os.Remove("/.oldroot")
	return nil
}

// hideAndMask, in the new root: agents/ an empty read-only directory,
// git's program-running parts read-only, credential files empty.
func hideAndMask(spec Spec) error {
	for _, h := range spec.Hidden {
		if fi, err := os.Lstat(h); err == nil && fi.IsDir() {
			if err := unix.Mount("tmpfs", h, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_RDONLY, "mode=755,size=4k"); err != nil {
				return fmt.Errorf("hide %s: %v", h, err)
			}
		}
	}
	if err := pinDirs(spec.Pinned); err != nil {
		return err
	}
	if err := readOnlyBinds(spec.ReadOnly); err != nil {
		return err
	}
	for _, m := range spec.Masked {
		if err := unix.Mount("/dev/null", m, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("mask %s: %v", m, err)
		}
	}
	return nil
}

// keptPath is a path of the new root, bound from a descriptor opened
// before any mount, or (layer set) a cache mounted with its private layer.
type keptPath struct {
	path  string
	fd    int
	dir   bool
	ro    bool // mounted read-only
	layer *CacheLayer
	order string // where it is mounted in turn: its path, or for a cache not made yet the directory its mount point splices
}

// overlayEscape escapes what overlayfs's option parser treats specially.
func overlayEscape(p string) string {
	return strings.NewReplacer(`\`, `\\`, `,`, `\,`, `:`, `\:`).Replace(p)
}

// openKept opens each path that exists (following links: the new root
// holds what a link pointed at, under the link's name), leaving out paths
// inside another kept directory (its recursive bind carries them) and
// /proc (mounted anew). A cache with a private layer is never left out:
// inside a toolchain root (~/go/pkg/mod in ~/go, the cargo registry in
// ~/.cargo) it is mounted over the parent's bind, or the parent would
// carry the user's real cache, writable.
func openKept(paths []string, layers []CacheLayer, ro func(string) bool) ([]keptPath, error) {
	var clean []string
	for _, p := range paths {
		if p != "" && filepath.IsAbs(p) && p != "/" {
			clean = append(clean, filepath.Clean(p))
		}
	}
	slices.Sort(clean)
	clean = slices.Compact(clean)
	var out []keptPath
	for _, p := range clean {
		if p == "/proc" || Under(p, []string{"/proc"}) {
			continue
		}
		layer := layerOf(p, layers)
		if layer == nil && len(out) > 0 && carried(p, ro(p), out) {
			continue
		}
		order := p
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil && layer != nil && errors.Is(err, unix.ENOENT) {
			fd, layer, order, err = notMadeYet(p, layer)
		}
		if err != nil {
			continue // missing: nothing to show
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			continue
		}
		kp := keptPath{path: p, fd: fd, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR, ro: ro(p), order: order}
		if kp.dir {
			kp.layer = layer
		}
		out = append(out, kp)
	}
	slices.SortStableFunc(out, func(a, b keptPath) int { return strings.Compare(a.order, b.order) })
	return out, nil
}

// existingAncestor is the nearest directory above p that exists.
func existingAncestor(p string) string {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || d == "/" {
			return d
		}
	}
}

// notMadeYet opens what stands for the cache at p that does not exist yet,
// with the layer (nil: a plain bind) and the order it is mounted in.
func notMadeYet(p string, layer *CacheLayer) (int, *CacheLayer, string, error) {
	// Its mount point splices its nearest existing directory
	// (mountpoint_linux.go), which binds that directory's entries from
	// the user's tree: so it goes before every other kept path there, or
	// the splice would hide them (~/go/pkg/sumdb missing beside
	// ~/go/pkg/mod's overlay).
	order := existingAncestor(p) + "\x00"
	switch {
	case layer.Below != "":
		// Over a layer below: that layer is the only lower one (the
		// workspace's layer on top, as ever).
		only := *layer
		only.Lower, only.Below = layer.Below, ""
		fd, err := unix.Open(only.Lower, unix.O_PATH|unix.O_CLOEXEC, 0)
		return fd, &only, order, err
	case layer.Empty != "":
		// An overlay of nothing under the workspace's layer is that
		// layer, bound as it is (one bind rather than an overlay: every
		// command pays for each cache).
		fd, err := unix.Open(layer.Upper, unix.O_PATH|unix.O_CLOEXEC, 0)
		return fd, nil, order, err
	}
	return -1, layer, p, unix.ENOENT
}

// layerOf is the private layer asked for the cache at p, or nil.
func layerOf(p string, layers []CacheLayer) *CacheLayer {
	for i := range layers {
		if filepath.Clean(layers[i].Lower) == p {
			return &layers[i]
		}
	}
	return nil
}

// carried reports whether the nearest kept directory above p (sorted, so
// a parent comes first and the last one found is the nearest) carries p
// in its recursive bind: it does when both are read-only or both are not
// (a writable tree inside a read-only one gets a bind of its own).
func carried(p string, ro bool, out []keptPath) bool {
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].dir && Under(p, []string{out[i].path}) {
			return out[i].ro == ro
		}
	}
	return false
}

// readOnlyTree reports whether a kept path is one of the spec's readable
// trees (or programs) and in no writable one: it is mounted read-only, so
// even without Landlock nothing in it can be written.
func readOnlyTree(spec Spec) func(string) bool {
	return func(p string) bool {
		return (Under(p, spec.RO) || Under(p, spec.Exec)) && !Under(p, spec.RW)
	}
}

// lookPathIn finds prog in the PATH of env (not Harvey's own), as a shell
// would; a name with a slash, or one not found, is returned as it is.
func lookPathIn(prog string, env []string) string {
	if strings.ContainsRune(prog, '/') {
		return prog
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(d, prog)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return filepath.Join(d, prog)
		}
	}
	return prog
}

// unwrapExecErr is the system's reason an exec failed ("no such file or
// directory"), without os/exec's wrapping.
func unwrapExecErr(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}

// readOnlyBinds makes each path read-only inside this mount namespace.
func readOnlyBinds(paths []string) error {
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("mount namespace: %v", err)
	}
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %v", p, err)
		}
		if err := remountReadOnly(p); err != nil {
			return fmt.Errorf("read-only %s: %v", p, err)
		}
	}
	return nil
}

// remountReadOnly makes the bind mount at p read-only, keeping the locked
// flags of the mount below.
func remountReadOnly(p string) error {
	var st unix.Statfs_t
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	if unix.Statfs(p, &st) == nil {
		for _, f := range [][2]int64{{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME}} {
			if int64(st.Flags)&f[0] != 0 {
				flags |= uintptr(f[1])
			}
		}
	}
	return unix.Mount("none", p, "", flags, "")
}

// pinDirs binds each directory onto itself: a mount point cannot be
// renamed, removed or replaced (EBUSY), so .git stays the repository the
// user's next git opens. A link or a missing path is skipped (Harvey's
// check after the command covers it).
func pinDirs(paths []string) error {
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("pin %s: %v", p, err)
		}
	}
	return nil
}

// CloseInheritedFDs marks every descriptor from 3 up close-on-exec (the
// Go runtime's own already are): only 0-2, and what exec.Cmd passes
// explicitly, reach a child.
func CloseInheritedFDs() {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return
	}
	// Kernels before 5.11: one descriptor at a time.
	for fd := 3; fd < 1024; fd++ {
		unix.CloseOnExec(fd)
	}
}

// layeredPaths are the caches asked to be seen through a private layer.
func layeredPaths(layers []CacheLayer) []string {
	var out []string
	for _, l := range layers {
		out = append(out, filepath.Clean(l.Lower))
	}
	return out
}

// withoutLayered is rw less the caches asked to have a private layer.
func withoutLayered(rw []string, layers []CacheLayer) []string {
	lowers := layeredPaths(layers)
	var out []string
	for _, p := range rw {
		if !slices.Contains(lowers, filepath.Clean(p)) {
			out = append(out, p)
		}
	}
	return out
}
