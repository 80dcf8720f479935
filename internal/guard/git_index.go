package guard

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"errors"
)

// Reading git's index (versions 2 to 4) for the check after a command:
// the entries' names, modes and the two bits that hide a file from the
// user's review — assume-unchanged (CE_VALID in the flags) and
// skip-worktree (in the extended flags) — with where those bits lie, so
// that the check can clear them in place and write the index's checksum
// again. An unreadable index gives no entries.

// indexEntry is one entry of an index.
type indexEntry struct {
	name    string
	mode    uint32
	flagsAt int // offset of the entry's 16-bit flags
	extAt   int // offset of its 16-bit extended flags (0: it has none)
}

const (
	ceValid        = 0x8000 // in the flags: assume-unchanged
	ceExtended     = 0x4000 // in the flags: extended flags follow
	ceSkipWorktree = 0x4000 // in the extended flags
)

// hides reports whether e is marked assume-unchanged or skip-worktree in
// the index b: git status and git diff do not show its changes.
func (e indexEntry) hides(b []byte) bool {
	return binary.BigEndian.Uint16(b[e.flagsAt:])&ceValid != 0 || e.extAt > 0 && binary.BigEndian.Uint16(b[e.extAt:])&ceSkipWorktree != 0
}

// unhide clears e's two bits in b (the checksum is written by rehash).
func (e indexEntry) unhide(b []byte) {
	b[e.flagsAt] &^= ceValid >> 8
	if e.extAt > 0 {
		b[e.extAt] &^= ceSkipWorktree >> 8
	}
}

// rehash writes the index's trailing checksum for its content again (an
// all-zero checksum, index.skipHash, stays as it is).
func rehash(b []byte, hashLen int) {
	if len(b) < 12+hashLen {
		return
	}
	sum := b[len(b)-hashLen:]
	if bytes.Equal(sum, make([]byte, hashLen)) {
		return
	}
	if hashLen == 32 {
		h := sha256.Sum256(b[:len(b)-hashLen])
		copy(sum, h[:])
		return
	}
	h := sha1.Sum(b[:len(b)-hashLen])
	copy(sum, h[:])
}

// gitlinks lists the paths of the mode-160000 entries of a git index
// (hashLen is 20 for SHA-1 object names, 32 for SHA-256).
func gitlinks(b []byte, hashLen int) []string {
	var out []string
	for _, e := range indexEntries(b, hashLen) {
		if e.mode&0o170000 == 0o160000 {
			out = append(out, e.name)
		}
	}
	return out
}

// hiddenEntries lists the paths an index hides from review.
func hiddenEntries(b []byte, hashLen int) []string {
	var out []string
	for _, e := range indexEntries(b, hashLen) {
		if e.hides(b) {
			out = append(out, e.name)
		}
	}
	return out
}

// indexEntries reads an index's entries (none when it is not one).
func indexEntries(b []byte, hashLen int) []indexEntry {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil
	}
	version := binary.BigEndian.Uint32(b[4:8])
	n := int(binary.BigEndian.Uint32(b[8:12]))
	if version < 2 || version > 4 {
		return nil
	}
	out, _ := readEntries(b, version, n, hashLen)
	return out
}

var errIndex = errors.New("unreadable index")

func readEntries(b []byte, version uint32, n, hashLen int) ([]indexEntry, error) {
	var out []indexEntry
	off, prev := 12, ""
	for i := 0; i < n; i++ {
		start := off
		if off+40+hashLen+2 > len(b) {
			return nil, errIndex
		}
		e := indexEntry{mode: binary.BigEndian.Uint32(b[off+24 : off+28])}
		off += 40 + hashLen
		e.flagsAt = off
		flags := binary.BigEndian.Uint16(b[off : off+2])
		off += 2
		if flags&ceExtended != 0 {
			if version < 3 || off+2 > len(b) {
				return nil, errIndex
			}
			e.extAt = off
			off += 2
		}
		if version == 4 {
			strip, k := binary.Uvarint(b[off:])
			if k <= 0 || int(strip) > len(prev) {
				return nil, errIndex
			}
			off += k
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil, errIndex
			}
			e.name = prev[:len(prev)-int(strip)] + string(b[off:off+end])
			off += end + 1
		} else {
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil, errIndex
			}
			e.name = string(b[off : off+end])
			off = start + (off-start+end+8)/8*8
		}
		out = append(out, e)
		prev = e.name
	}
	if off > len(b) {
		return nil, errIndex
	}
	return out, nil
}
