package harvey

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/usertools"
	"github.com/harvey-agent/harvey/internal/wspath"
	"golang.org/x/sys/unix"
)

// User-defined tools: where their files are read from (a workspace's
// agents/tools/, which no model-driven tool can create or change, and your
// own ~/.config/harvey/tools/). The file format, its checks and a tool's
// command line are internal/usertools'.

// loadUserTools reads every agents/tools/*.md. Tools whose name is taken
// (reserved reports built-in names) or whose file has a problem are skipped
// and reported; the others load.
func loadUserTools(ws *Workspace, reserved func(string) bool) ([]*usertools.Tool, []usertools.Problem) {
	entries, err := ws.ListInternal(UserToolsDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, []usertools.Problem{{File: UserToolsDir, Msg: wspath.ErrText(err)}}
	}
	return usertools.Load(entries, UserToolsDir, func(file string) ([]byte, error) { return readToolFile(ws, file) }, reserved)
}

// OwnToolsLabel is how your own tools directory is named in messages.
const OwnToolsLabel = "~/.config/harvey/tools"

// ownToolsDir is your own tools directory: tools of yours, loaded in every
// workspace without a question (your own config is trusted), beside a
// repository's confirmed ones.
func ownToolsDir() string {
	if d := configfile.UserDir(); d != "" {
		return filepath.Join(d, "tools")
	}
	return ""
}

// loadOwnTools reads your own tools directory's *.md as loadUserTools
// reads a workspace's.
func loadOwnTools(reserved func(string) bool) ([]*usertools.Tool, []usertools.Problem) {
	inline, problems := inlineTools(reserved)
	dir := ownToolsDir()
	if dir == "" {
		return inline, problems
	}
	files, more := loadToolDir(dir, reserved)
	return append(inline, files...), append(problems, more...)
}

// inlineTools are the tools written in your own config (tools.define),
// never a workspace's (a config that does not load is said where it is).
func inlineTools(reserved func(string) bool) ([]*usertools.Tool, []usertools.Problem) {
	if user, _, err := configfile.LoadUser(); err == nil && user != nil {
		return usertools.LoadInline("your config", user.Tools.Define, reserved)
	}
	return nil, nil
}

// loadToolDir reads the tool files of your own tools directory.
func loadToolDir(dir string, reserved func(string) bool) ([]*usertools.Tool, []usertools.Problem) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, []usertools.Problem{{File: OwnToolsLabel, Msg: err.Error()}}
	}
	return usertools.Load(entries, OwnToolsLabel, func(file string) ([]byte, error) {
		f, err := os.Open(filepath.Join(dir, path.Base(file)))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		data, more, err := readAtMost(f, usertools.MaxFileBytes)
		if err == nil && more {
			err = fmt.Errorf("file is over %d KB", usertools.MaxFileBytes>>10)
		}
		return data, err
	}, reserved)
}

func readToolFile(ws *Workspace, file string) ([]byte, error) {
	f, err := ws.OpenInternal(file, unix.O_RDONLY, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, more, err := readAtMost(f, usertools.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	if more {
		return nil, fmt.Errorf("file is over %d KB", usertools.MaxFileBytes>>10)
	}
	return data, nil
}

// builtinToolName reports whether name is a built-in tool's, ignoring case
// (READ_FILE next to read_file would only confuse a small model).
func builtinToolName(name string) bool {
	r := newToolRegistry()
	registerBuiltinTools(r, nil)
	for _, n := range r.Names() {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}
