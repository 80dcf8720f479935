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

// treePSS is the proportional memory (PSS) of the tree under pid: a page
// shared by n processes counts 1/n to each, so a database's shared buffers
// count once, not once per connection. Dearer to read than RSS (the
// kernel walks each process's mappings), so it is read only to confirm a
// cap that RSS says is past.
func treePSS(pid, max int) int64 {
	var total int64
	for _, p := range tree(pid, max) {
		f, err := os.Open("/proc/" + strconv.Itoa(p) + "/smaps_rollup")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				total += kb << 10
				break
			}
		}
		f.Close()
	}
	return total
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
