package sandbox

import (
	"os"
	"strconv"
	"strings"
)

// procStat is process pid's /proc/PID/stat after its name: its state is
// the first field, its parent the second, its start time the twentieth
// (none where there is no /proc, or no such process).
func procStat(pid int) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	f := strings.Fields(s[i+1:])
	return f, len(f) > 19 && f[0] != ""
}

// ProcStart is the start time of process pid, "" when it is not running (a
// zombie, killed but not yet reaped, is not): with its pid, it names one
// process, never another that took the pid later.
func ProcStart(pid int) string {
	f, ok := procStat(pid)
	if !ok || f[0] == "Z" || f[0] == "X" {
		return ""
	}
	return f[19]
}
