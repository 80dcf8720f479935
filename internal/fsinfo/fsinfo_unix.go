//go:build unix

package fsinfo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// Links returns the number of hard links of a file (1 when unknown).
func Links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// OwnDatabase prepares the SQLite file at path that is Harvey's own (the
// knowledge base, the workspace index, a RAG store): it must be a regular
// file with one link, and so must SQLite's side files (-wal, -shm,
// -journal), which SQLite opens by name — a planted link there would be
// written through. A missing file is created 0600 (SQLite would make it
// 0644) without following a link when create is set; created says so.
// name is how messages call the file.
func OwnDatabase(path, name string, create bool) (created bool, err error) {
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return false, fmt.Errorf("%s is not a regular file; left as it is", name)
	} else if err == nil && Links(st) > 1 {
		return false, fmt.Errorf("%s has other hard links; left as it is", name)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("%s: %s", name, ErrText(err))
	}
	for _, side := range []string{"-wal", "-shm", "-journal"} {
		if st, err := os.Lstat(path + side); err == nil && (!st.Mode().IsRegular() || Links(st) > 1) {
			return false, fmt.Errorf("%s%s is not a regular file with one link; left as it is", name, side)
		}
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) && create {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return false, fmt.Errorf("%s: %s", name, ErrText(err))
		}
		f.Close()
		return true, nil
	}
	return false, nil
}
