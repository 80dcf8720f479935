package fsinfo

import "syscall"

func sysStamp(st *syscall.Stat_t) Stamp {
	return Stamp{uint64(st.Dev), uint64(st.Ino), st.Size, st.Mtimespec.Nano(), st.Ctimespec.Nano()}
}
