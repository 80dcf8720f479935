//go:build linux

package guard

import (
	"io/fs"

	"github.com/harvey-agent/harvey/internal/fsinfo"
	"os"
	"sync"
	"syscall"
	"time"
)

// What a file of .git held is read again only when the file may have
// changed: its content is kept by the file's identity — device, inode,
// size, mode, modification and change times. The change time (ctime) moves
// on every write, chmod, rename or link, and no program can set it; so a
// file whose identity is the same holds the same bytes. As git does with a
// "racily clean" index entry, a file changed within the last racyWindow is
// never taken from what was kept: a timestamp's granularity (a jiffy on
// ext4, a second or two elsewhere) could let a write land in the same tick
// as the change before it. Only local file systems, where the kernel
// keeps ctime, are trusted (a FUSE or network mount is read every time;
// other systems than Linux read every time too: saved_cache_other.go).

// racyWindow is how recent a change keeps a file from being taken from
// what was kept (a variable for the tests alone).
var racyWindow = 3 * time.Second

const keptMax = 512 // files kept at most (the set is cleared when full)

type fileKey struct {
	dev, ino     uint64
	size         int64
	mode         uint32
	mtime, ctime int64 // nanoseconds
}

var keptFiles = struct {
	sync.Mutex
	m map[fileKey][]byte
}{m: map[fileKey][]byte{}}

// trustedFS are the file systems whose ctime the kernel itself keeps
// (statfs magic numbers): ext2/3/4, xfs, btrfs, tmpfs, f2fs, zfs, overlayfs.
var trustedFS = map[int64]bool{0xEF53: true, 0x58465342: true, 0x9123683E: true, 0x01021994: true, 0xF2F52010: true, 0x2FC12FC1: true, 0x794C7630: true}

// racyStamp reports whether a file of stamp s changed too recently for
// its stamp to name its content.
func racyStamp(s fsinfo.Stamp) bool {
	return time.Since(time.Unix(0, s.CtimeNs)) < racyWindow || time.Since(time.Unix(0, s.MtimeNs)) < racyWindow
}

// trustedDir reports whether dir lies on a file system whose ctime the
// kernel keeps.
func trustedDir(dir string) bool {
	var s syscall.Statfs_t
	return syscall.Statfs(dir, &s) == nil && trustedFS[int64(s.Type)]
}

// keyOf is fi's identity, when its content may be kept.
func keyOf(fi fs.FileInfo) (fileKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	k := fileKey{dev: uint64(st.Dev), ino: uint64(st.Ino), size: st.Size, mode: uint32(st.Mode),
		mtime: statMtime(st), ctime: statCtime(st)}
	if time.Since(time.Unix(0, k.ctime)) < racyWindow || time.Since(time.Unix(0, k.mtime)) < racyWindow {
		return fileKey{}, false
	}
	return k, true
}

// readKept is the content of p (fi is its Lstat), from what was kept when
// its identity is unchanged and its file system is trusted.
func readKept(r *os.Root, p string, fi fs.FileInfo) ([]byte, error) {
	k, ok := keyOf(fi)
	if ok {
		keptFiles.Lock()
		b, hit := keptFiles.m[k]
		keptFiles.Unlock()
		if hit {
			return b, nil
		}
	}
	f, err := r.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The file opened is the one stat'ed (a rename in between is a
	// change, read and not kept), on a file system that keeps ctime.
	ofi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, ofi.Size())
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil || n == 0 {
			break
		}
	}
	if ok2 := ok && sameKey(k, ofi) && trustedFile(f); ok2 {
		keptFiles.Lock()
		if len(keptFiles.m) >= keptMax {
			clear(keptFiles.m)
		}
		keptFiles.m[k] = b
		keptFiles.Unlock()
	}
	return b, nil
}

func sameKey(k fileKey, fi fs.FileInfo) bool {
	k2, ok := keyOf(fi)
	return ok && k2 == k
}

// trustedFile reports whether f lies on a file system whose ctime the
// kernel keeps.
func trustedFile(f *os.File) bool {
	var s syscall.Statfs_t
	if err := syscall.Fstatfs(int(f.Fd()), &s); err != nil {
		return false
	}
	return trustedFS[int64(s.Type)]
}

func statMtime(st *syscall.Stat_t) int64 { return st.Mtim.Nano() }
func statCtime(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }
