// Package kernelsim makes a program meet another kernel than the one it
// runs on, as far as the sandbox can tell: a seccomp filter, inherited by
// the program and everything it starts, answers as those kernels do. It
// exists for tests (the sandbox's modes are tested on one machine) and is
// never linked into Harvey.
//
// Contract: Exec installs the filter for kernel k on the calling thread
// and replaces the process with argv (the filter survives exec and is
// inherited by every child). NoLandlock answers ENOSYS to Landlock's three
// system calls (a kernel built without it, as Raspberry Pi OS's is);
// NoUserNS answers EPERM to clone and unshare with CLONE_NEWUSER and
// ENOSYS to clone3 (Ubuntu 23.10+'s AppArmor restriction as an unconfined
// program meets it, or a container's seccomp profile); Neither does both.
// Only linux/amd64 and linux/arm64 are supported; elsewhere Exec fails.
package kernelsim

// Kernel names the kernel to simulate.
type Kernel string

const (
	NoLandlock Kernel = "no-landlock"
	NoUserNS   Kernel = "no-userns"
	Neither    Kernel = "neither"
)
