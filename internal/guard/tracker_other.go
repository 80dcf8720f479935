//go:build !linux

package guard

// No inotify: every check walks the workspace (tracker_linux.go).

type trackToken struct{}

func beginTracked(string) *trackToken { return nil }

func endTracked(*trackToken) (list, paths []string, ok bool) { return nil, nil, false }
