// Package datadir is where Harvey keeps what is the user's and no
// workspace's: the caches' private layers, the guards' journals, the
// transcripts, the model check's reports, the MCP logins.
//
// Path is $XDG_DATA_HOME/harvey (an absolute XDG_DATA_HOME only), by
// default ~/.local/share/harvey, read at each call so a test or a user
// who sets the variable moves everything at once; "" when there is no
// home. Key names a workspace, a path or a command in a directory or file
// name there: the first 12 hex digits of its SHA-256, the same for the
// same text in every part of Harvey.
//
// It imports nothing of Harvey's.
package datadir

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
)

// Path is Harvey's data directory ("" when there is no home).
func Path() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "harvey")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "harvey")
	}
	return ""
}

// Key names s in a directory or file name.
func Key(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

// ExpandHome is p with a leading ~/ made home's (p as it is otherwise, or
// when home is "").
func ExpandHome(p, home string) string {
	if strings.HasPrefix(p, "~/") && home != "" {
		return filepath.Join(home, p[2:])
	}
	return p
}

// SHA256Hex is data's SHA-256 in hex (the trust store's and the
// knowledge base's content hashes).
func SHA256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
