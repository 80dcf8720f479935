//go:build linux

package sandbox

import (
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Cache layers made ahead. An overlay mount is the dearest part of a
// command's root (0.5–0.7 ms each, for the XDG cache, Go's, npm's, ...):
// the kernel sets up the layer's work directory each time. When the
// session is idle after a command, the holder tells the waiting spare
// launcher the layers that command had (prepare); the spare makes each as
// a detached mount (fsopen, fsmount: attached nowhere), and when its
// command comes moves those it uses into place (move_mount) and lets go of
// the rest before it mounts anything, so no layer is ever mounted twice at
// once. A layer whose paths the mount options could not carry as they are
// (",", ":" or "\"), or a kernel without the new mount API, is mounted as
// before.

// staged are the spare's layers made ahead, by layer.
var staged = map[CacheLayer]int{}

// stageLayers makes each of layers ahead (keeping those made already, and
// letting go of those no longer asked for).
func stageLayers(layers []CacheLayer) {
	unstage(layers)
	for _, l := range layers {
		if _, ok := staged[l]; ok || strings.ContainsAny(l.Lower+l.Below+l.Upper+l.Work, `,:\`) {
			continue
		}
		if _, err := os.Stat(l.Lower); err != nil {
			continue // a cache not made yet: its layer is bound, not an overlay
		}
		if fd, err := detachedOverlay(l); err == nil {
			staged[l] = fd
		}
	}
}

// unstage lets go of the staged layers keep does not hold.
func unstage(keep []CacheLayer) {
	for l, fd := range staged {
		if !slices.Contains(keep, l) {
			unix.Close(fd)
			delete(staged, l)
		}
	}
}

// detachedOverlay is l as an overlay mount attached nowhere, with the
// options bindLayer mounts it with.
func detachedOverlay(l CacheLayer) (int, error) {
	fs, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fs)
	for _, kv := range [][2]string{{"lowerdir", l.Lowers(func(p string) string { return p })}, {"upperdir", l.Upper}, {"workdir", l.Work}} {
		if err := unix.FsconfigSetString(fs, kv[0], kv[1]); err != nil {
			return -1, err
		}
	}
	if err := unix.FsconfigSetFlag(fs, "userxattr"); err != nil {
		return -1, err
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, err
	}
	return unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
}

// placeStaged moves the staged mount of layer l to at (false: none staged,
// or it could not be moved; the caller mounts l itself).
func placeStaged(l CacheLayer, at string) bool {
	fd, ok := staged[l]
	if !ok {
		return false
	}
	delete(staged, l)
	defer unix.Close(fd)
	return unix.MoveMount(fd, "", unix.AT_FDCWD, at, unix.MOVE_MOUNT_F_EMPTY_PATH) == nil
}
