// Package fsinfo says what a file is, in the words Harvey's messages use
// (Kind: "a symlink", "a named pipe (FIFO)", ...), how many hard links
// it has (Links; 1 where the system does not say), and an os error's
// reason without the path it repeats (ErrText).
package fsinfo

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Kind names a file mode for messages.
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	case m.IsRegular():
		return "a regular file"
	}
	return "an unknown file type"
}

// ErrText is err's reason without the operation and path an os error
// repeats ("permission denied", not "open /a/b: permission denied").
func ErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	return err.Error()
}

// AbsIn is p made absolute against dir (p as it is when absolute): the
// way git and a shell read a relative path named from dir.
func AbsIn(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}
