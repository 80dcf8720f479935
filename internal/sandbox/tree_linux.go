//go:build linux

package sandbox

import (
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Ending a whole tree of processes at once, however deep or fast it forks
// (issue 75). A loop that kills a process's children and waits for their
// children to come to it ends one level a round: a chain of thousands of
// processes, each the parent of the next, outlives any bound on rounds. So
// every round reads the parent of every process on the machine once
// (/proc/PID/stat), takes the whole tree under the caller at once, stops
// each process of it (SIGSTOP: a stopped process forks no more) until a
// reading finds none it has not stopped, then kills them all. Rounds repeat
// until a reading finds no live process of the tree: no fixed bound, since a
// process once killed never runs again, and each round kills every process
// the tree had when it was read. The caller is the subreaper of the tree
// (a launcher, Harvey, its guardian), so what was killed comes to it, and
// it reaps exactly those (never a child something else waits for).

// treeProc is one process as /proc/PID/stat says.
type treeProc struct {
	ppid  int
	state byte
}

// procTable reads the parent and state of every process.
func procTable() map[int]treeProc {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	out := make(map[int]treeProc, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if p, ok := statOf(pid); ok {
			out[pid] = p
		}
	}
	return out
}

// statOf reads process pid's parent and state from /proc/PID/stat.
func statOf(pid int) (treeProc, bool) {
	f, ok := procStat(pid)
	if !ok {
		return treeProc{}, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return treeProc{}, false
	}
	return treeProc{ppid: ppid, state: f[0][0]}, true
}

// treeUnder lists the live processes under root (root not included) whose
// branch starts at a child of root that pick accepts (nil: every child).
func treeUnder(root int, pick func(pid int) bool) []int {
	table := procTable()
	kids := make(map[int][]int, len(table))
	for pid, p := range table {
		kids[p.ppid] = append(kids[p.ppid], pid)
	}
	var out []int
	var walk func(pid int)
	walk = func(pid int) {
		for _, k := range kids[pid] {
			if table[k].state != 'Z' && table[k].state != 'X' {
				out = append(out, k)
			}
			walk(k)
		}
	}
	for _, k := range kids[root] {
		if pick != nil && !pick(k) {
			continue
		}
		if table[k].state != 'Z' && table[k].state != 'X' {
			out = append(out, k)
		}
		walk(k)
	}
	return out
}

// EndTree ends every process under this one (the caller, their
// subreaper) whose branch starts at a child pick accepts (nil: all), at
// once however deep or fast it forks, reaps them, and returns how many it
// killed. A process it may not signal (a setuid program) is left, once
// tried.
func EndTree(pick func(pid int) bool) int {
	self := os.Getpid()
	tried := map[int]bool{}
	killed := 0
	for {
		stopped := map[int]bool{}
		// Freeze: stop what is found until a reading finds nothing new.
		for {
			found := false
			for _, pid := range treeUnder(self, pick) {
				if !stopped[pid] && !tried[pid] {
					_ = unix.Kill(pid, unix.SIGSTOP)
					stopped[pid] = true
					found = true
				}
			}
			if !found {
				break
			}
		}
		if len(stopped) == 0 {
			break
		}
		for pid := range stopped {
			if unix.Kill(pid, unix.SIGKILL) == nil {
				killed++
			}
			tried[pid] = true
		}
		reapTried(tried, false)
	}
	reapTried(tried, true)
	return killed
}

// reapTried reaps the killed processes that have come to this process as
// zombies; with wait, for up to two seconds until none of them is left (a
// killed process in uninterruptible sleep dies when it wakes; it never runs
// again either way).
func reapTried(tried map[int]bool, wait bool) {
	deadline := time.Now().Add(2 * time.Second)
	for {
		left := 0
		for pid := range tried {
			var ws unix.WaitStatus
			if got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); got == pid || err == unix.ECHILD {
				if _, ok := statOf(pid); got == pid || !ok {
					delete(tried, pid)
					continue
				}
			}
			left++
		}
		if left == 0 || !wait || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
