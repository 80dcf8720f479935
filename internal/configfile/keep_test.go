// Feature: keep_recordings is read from the user's own config only.
package configfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/wspath"
)

// keep_recordings comes from the user's config only: a workspace's cannot
// have the user's recordings deleted.
func TestKeepRecordingsUserOnly(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	os.MkdirAll(filepath.Join(xdg, "harvey"), 0o700)
	os.WriteFile(filepath.Join(xdg, "harvey", "harvey.yaml"), []byte("keep_recordings: 7\n"), 0o600)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "agents"), 0o700)
	os.WriteFile(filepath.Join(dir, "agents", "harvey.yaml"), []byte("keep_recordings: 1\n"), 0o600)
	ws, err := wspath.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	cf, _ := Load(ws)
	if cf.KeepRecordings != 7 {
		t.Fatalf("keep_recordings = %d (the workspace's must not count)", cf.KeepRecordings)
	}
	if w := strings.Join(cf.Warnings, "\n"); !strings.Contains(w, "keep_recordings: is read from your own config") {
		t.Fatalf("warnings = %q", w)
	}
}
