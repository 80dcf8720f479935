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
// again; and where each entry's stat data lies, so that the check can
// clear it for a file a command changed (stale), which makes git read the
// file again instead of trusting the entry. An unreadable index gives no
// entries.

// indexEntry is one entry of an index.
type indexEntry struct {
	name    string
	mode    uint32
	at      int // offset of the entry (its stat data: 40 bytes, the mode at 24)
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

// stale clears e's stat data in b (the times, device, inode, uid, gid and
// size; not the mode): git's next look at the file finds it differs and
// hashes its content (an entry of size 0 is never trusted for a non-empty
// blob), so a change the entry's stat data would hide shows. False: it was
// clear already, or e is a gitlink, whose stat data git never reads.
func (e indexEntry) stale(b []byte) bool {
	if e.mode&0o170000 == 0o160000 {
		return false
	}
	stat := append(append([]byte{}, b[e.at:e.at+24]...), b[e.at+28:e.at+40]...)
	if bytes.Equal(stat, make([]byte, 36)) {
		return false
	}
	clear(b[e.at : e.at+24])
	clear(b[e.at+28 : e.at+40])
	return true
}

// sameStat reports whether entries a (of index x) and b (of index y) have
// the same stat data.
func sameStat(x []byte, a indexEntry, y []byte, b indexEntry) bool {
	return bytes.Equal(x[a.at:a.at+24], y[b.at:b.at+24]) && bytes.Equal(x[a.at+28:a.at+40], y[b.at+28:b.at+40])
}

// extensions lists index b's extensions: each one's signature and where
// it starts and ends (nil when b cannot be read).
func extensions(b []byte, hashLen int) []indexExt {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return nil
	}
	_, off, err := readEntries(b, version, int(binary.BigEndian.Uint32(b[8:12])), hashLen)
	if err != nil {
		return nil
	}
	var out []indexExt
	for off+8 <= len(b)-hashLen {
		size := int(binary.BigEndian.Uint32(b[off+4 : off+8]))
		end := off + 8 + size
		if size < 0 || end > len(b)-hashLen {
			return out
		}
		out = append(out, indexExt{sig: string(b[off : off+4]), start: off, end: end})
		off = end
	}
	return out
}

// indexExt is one extension of an index.
type indexExt struct {
	sig        string
	start, end int
}

// unreadEntries names the extensions of index b that keep entries where
// this reader does not look — those whose signature starts with a lower
// case letter, which git itself must understand to read the index: a
// split index ("link": the entries live in a shared file beside it) or a
// sparse one ("sdir"). A gitlink or a hidden entry could stand there
// unseen.
func unreadEntries(b []byte, hashLen int) []string {
	var out []string
	for _, e := range extensions(b, hashLen) {
		if e.sig[0] >= 'a' && e.sig[0] <= 'z' {
			out = append(out, e.sig)
		}
	}
	return out
}

// withoutExtension is index b without its extension sig ("FSMN": the
// fsmonitor's record of which entries it vouches for); b when it has none
// or cannot be read. The checksum is left for rehash.
func withoutExtension(b []byte, sig string, hashLen int) []byte {
	for _, e := range extensions(b, hashLen) {
		if e.sig == sig {
			return append(append([]byte{}, b[:e.start]...), b[e.end:]...)
		}
	}
	return b
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
	out, _, _ := readEntries(b, version, n, hashLen)
	return out
}

var errIndex = errors.New("unreadable index")

// readEntries reads n entries and returns them with the offset past the
// last (where the extensions start).
func readEntries(b []byte, version uint32, n, hashLen int) ([]indexEntry, int, error) {
	var out []indexEntry
	off, prev := 12, ""
	for i := 0; i < n; i++ {
		start := off
		if off+40+hashLen+2 > len(b) {
			return nil, 0, errIndex
		}
		e := indexEntry{mode: binary.BigEndian.Uint32(b[off+24 : off+28]), at: start}
		off += 40 + hashLen
		e.flagsAt = off
		flags := binary.BigEndian.Uint16(b[off : off+2])
		off += 2
		if flags&ceExtended != 0 {
			if version < 3 || off+2 > len(b) {
				return nil, 0, errIndex
			}
			e.extAt = off
			off += 2
		}
		if version == 4 {
			strip, k := binary.Uvarint(b[off:])
			if k <= 0 || int(strip) > len(prev) {
				return nil, 0, errIndex
			}
			off += k
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil, 0, errIndex
			}
			e.name = prev[:len(prev)-int(strip)] + string(b[off:off+end])
			off += end + 1
		} else {
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil, 0, errIndex
			}
			e.name = string(b[off : off+end])
			off = start + (off-start+end+8)/8*8
		}
		out = append(out, e)
		prev = e.name
	}
	if off > len(b) {
		return nil, 0, errIndex
	}
	return out, off, nil
}
