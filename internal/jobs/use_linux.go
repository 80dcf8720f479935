package jobs

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// treeUse is what the process tree under pid uses: its processes (counted
// up to about max) and their resident memory (RSS, as the kernel counts
// it: a page two processes share counts twice).
func treeUse(pid, max int) Use {
	procs := tree(pid, max)
	u := Use{Procs: len(procs)}
	page := int64(os.Getpagesize())
	for _, p := range procs {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/statm")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) > 1 {
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				u.RSS += n * page
			}
		}
	}
	return u
}

// MachineMemory is this machine's memory in bytes (MemTotal; 0 unknown).
func MachineMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
