package jobs

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/harvey-agent/harvey/internal/sandbox"
)

// listeningPorts are the TCP ports the process tree under pid listens on:
// its processes' sockets, matched in the TCP tables their own network
// namespace shows (a job's namespace of its own, or the host's).
func listeningPorts(pid int) []int {
	var ports []int
	for _, p := range tree(pid, 512) {
		if launcher(p) {
			continue // the sandbox's own (its registry proxy's port)
		}
		inodes := socketInodes(p)
		if len(inodes) == 0 {
			continue
		}
		for _, table := range []string{"tcp", "tcp6"} {
			f, err := os.Open("/proc/" + strconv.Itoa(p) + "/net/" + table)
			if err != nil {
				continue
			}
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				fs := strings.Fields(sc.Text())
				if len(fs) < 10 || fs[3] != "0A" || !inodes[fs[9]] { // 0A: LISTEN
					continue
				}
				if _, hex, ok := strings.Cut(fs[1], ":"); ok {
					if port, err := strconv.ParseInt(hex, 16, 32); err == nil && !slices.Contains(ports, int(port)) {
						ports = append(ports, int(port))
					}
				}
			}
			f.Close()
		}
	}
	slices.Sort(ports)
	return ports
}

// launcher reports whether process p is the sandbox's launcher (Harvey
// started with its launcher argument), not the job's own.
func launcher(p int) bool {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
	return strings.Contains(string(b), "\x00"+sandbox.Arg+"\x00")
}

// tree is pid and its descendants (at most about max of them).
func tree(pid, max int) []int {
	out := []int{pid}
	for i := 0; i < len(out) && len(out) < max; i++ {
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(out[i]) + "/task")
		for _, t := range tasks {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(out[i]) + "/task/" + t.Name() + "/children")
			for _, f := range strings.Fields(string(b)) {
				if k, err := strconv.Atoi(f); err == nil {
					out = append(out, k)
				}
			}
		}
	}
	return out
}

// socketInodes are the inodes of the sockets process pid holds open.
func socketInodes(pid int) map[string]bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(dir + "/" + fd.Name()); err == nil {
			if in, ok := strings.CutPrefix(l, "socket:["); ok {
				out[strings.TrimSuffix(in, "]")] = true
			}
		}
	}
	return out
}
