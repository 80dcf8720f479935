//go:build unix

package fsinfo

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Stamp is what changes when a file is written: its device and inode, its
// size, and its modification and change times (a change time cannot be set
// back by the file's owner). Equal stamps mean the same content for the
// redaction cache, the index and the guards around a command.
type Stamp struct {
	Dev, Ino               uint64
	Size, MtimeNs, CtimeNs int64
}

// StampOf is st's stamp.
func StampOf(st *unix.Stat_t) Stamp {
	return Stamp{uint64(st.Dev), uint64(st.Ino), st.Size, st.Mtim.Nano(), st.Ctim.Nano()}
}

// StampOfInfo is fi's stamp (the zero Stamp when fi carries no stat).
// The os package's FileInfo carries a syscall.Stat_t, not x/sys/unix's.
func StampOfInfo(fi fs.FileInfo) Stamp {
	switch st := fi.Sys().(type) {
	case *syscall.Stat_t:
		return sysStamp(st)
	case *unix.Stat_t:
		return StampOf(st)
	}
	return Stamp{}
}

// LstatStamp is p's stamp, not following a link.
func LstatStamp(p string) (Stamp, bool) {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil {
		return Stamp{}, false
	}
	return StampOf(&st), true
}

// RootStamp is p's stamp in r, not following a link (the zero Stamp when
// it cannot be read).
func RootStamp(r *os.Root, p string) Stamp {
	fi, err := r.Lstat(p)
	if err != nil {
		return Stamp{}
	}
	return StampOfInfo(fi)
}
