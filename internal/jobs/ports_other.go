//go:build !linux

package jobs

// listeningPorts: not known here.
func listeningPorts(int) []int { return nil }

// treeUse: not known here (no cap is enforced).
func treeUse(int, int) Use { return Use{} }

// MachineMemory: not known here.
func MachineMemory() int64 { return 0 }

// treePSS: not known here.
func treePSS(int, int) int64 { return 0 }
