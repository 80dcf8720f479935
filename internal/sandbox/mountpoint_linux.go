//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Mount points in the command's new root. A kept path needs one where it
// lies in the root, and the root is built from binds of the user's real
// trees: a cache not made yet inside a read-only toolchain root (~/.cargo/
// registry in ~/.cargo before the first crate is fetched, ~/go/pkg/mod in
// ~/go with only ~/go/bin) has no directory to be mounted on, and none can
// be made there (the bind is read-only, and making one would change the
// user's home). So the directory that refuses is spliced: a small tmpfs
// takes its place in the command's root, holding a bind of each of its
// entries (read-only where it was), its links as links, and the mount
// point; once every kept path is mounted, the tmpfs is made read-only too
// where the directory was. The user's tree is never written.
//
// Mount points are made one component at a time without following a link:
// a link in a kept tree (a toolchain's install/ leading elsewhere) is
// replaced in a splice rather than followed out of the root, so the
// launcher, which is not yet confined, never makes a directory outside it.

// rootBuilder makes the mount points of one new root and remembers the
// directories it spliced.
type rootBuilder struct {
	root    string
	spliced []splicedDir
}

// splicedDir is a tmpfs put over a directory of the new root.
type splicedDir struct {
	path string
	ro   bool // the directory was read-only: so is the tmpfs, when done
}

// errNoMountPoint is why a kept path has no mount point.
var errNoMountPoint = errors.New("no mount point can be made for it")

// mountPoint makes sure at (inside the root) is a directory (dir) or a
// regular file that is no link, making what is missing.
func (r *rootBuilder) mountPoint(at string, dir bool) error {
	rel, err := filepath.Rel(r.root, at)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return errNoMountPoint
	}
	// Each splice makes one more component a directory of ours, so a path
	// of n components needs at most n of them.
	for tries := 0; tries <= strings.Count(rel, "/")+1; tries++ {
		parent, name, err := r.walk(rel, dir)
		if err == nil {
			return nil
		}
		if parent == "" {
			return err
		}
		if err := r.splice(parent, name); err != nil {
			return err
		}
	}
	return errNoMountPoint
}

// walk goes down rel from the root, making what is missing, and stops at
// the first component it cannot use: then parent is the directory to
// splice (name the entry in it to leave out, "" for none).
func (r *rootBuilder) walk(rel string, dir bool) (parent, name string, err error) {
	parts := strings.Split(rel, "/")
	fd, err := unix.Open(r.root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", "", err
	}
	defer func() { unix.Close(fd) }()
	cur := r.root
	for i, part := range parts {
		last := i == len(parts)-1
		next := filepath.Join(cur, part)
		var st unix.Stat_t
		err := unix.Fstatat(fd, part, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && (dir || !last):
		case err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && last && !dir:
			return "", "", nil
		case err == nil:
			// A link, or the wrong kind of file: replaced in a splice.
			return cur, part, fmt.Errorf("%s is not a directory", next)
		case errors.Is(err, unix.ENOENT):
			if err := makeAt(fd, part, dir || !last); err != nil {
				return cur, "", err // this directory refuses: spliced
			}
			if last && !dir {
				return "", "", nil
			}
		default:
			return "", "", err
		}
		nfd, err := unix.Openat(fd, part, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return cur, part, err
		}
		unix.Close(fd)
		fd, cur = nfd, next
	}
	return "", "", nil
}

// makeAt makes name in the directory fd: a directory, or an empty file.
func makeAt(fd int, name string, dir bool) error {
	if dir {
		return unix.Mkdirat(fd, name, 0o755)
	}
	f, err := unix.Openat(fd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err == nil {
		unix.Close(f)
	}
	return err
}

// splice puts a tmpfs over dir (a directory of the new root) holding what
// dir held, less the entry skip: directories and files as binds of the
// originals (read-only where dir was), links as links; sockets, pipes and
// devices are left out (no socket of the user's exists for a command).
func (r *rootBuilder) splice(dir, skip string) error {
	if dir == r.root {
		return errNoMountPoint // the root's own tmpfs is writable while it is built
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var sfs unix.Statfs_t
	var st unix.Stat_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	ro := sfs.Flags&unix.ST_RDONLY != 0
	entries, err := os.ReadDir(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return err
	}
	opts := fmt.Sprintf("mode=%o,size=1m", st.Mode&0o7777)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("splice %s: %v", dir, err)
	}
	r.spliced = append(r.spliced, splicedDir{path: dir, ro: ro})
	for _, e := range entries {
		if e.Name() == skip {
			continue
		}
		if err := spliceEntry(fd, dir, e, ro); err != nil {
			return err
		}
	}
	return nil
}

// spliceEntry puts one entry of the directory fd back into its splice at dir.
func spliceEntry(fd int, dir string, e os.DirEntry, ro bool) error {
	at := filepath.Join(dir, e.Name())
	switch t := e.Type(); {
	case t&os.ModeSymlink != 0:
		target, err := readlinkAt(fd, e.Name())
		if err != nil {
			return nil // gone meanwhile: nothing to show
		}
		return os.Symlink(target, at)
	case t.IsDir() || t.IsRegular():
		cfd, err := unix.Openat(fd, e.Name(), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil
		}
		defer unix.Close(cfd)
		if err := makeAt(unix.AT_FDCWD, at, t.IsDir()); err != nil {
			return fmt.Errorf("splice %s: %v", at, err)
		}
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", cfd), at, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("splice %s: %v", at, err)
		}
		if ro {
			if err := remountReadOnly(at); err != nil {
				return fmt.Errorf("read-only %s: %v", at, err)
			}
		}
	}
	return nil
}

// readlinkAt is the target of the link name in the directory fd.
func readlinkAt(fd int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// finish makes read-only each splice of a directory that was: its mount
// points are all made by now.
func (r *rootBuilder) finish() error {
	for _, s := range r.spliced {
		if !s.ro {
			continue
		}
		if err := remountReadOnly(s.path); err != nil {
			return fmt.Errorf("read-only %s: %v", s.path, err)
		}
	}
	return nil
}

// readOnlyAt reports whether the mount holding p (which exists) is
// read-only.
func readOnlyAt(p string) bool {
	var st unix.Statfs_t
	return unix.Statfs(p, &st) == nil && st.Flags&unix.ST_RDONLY != 0
}
