// Package gocache is Go's build cache for a command where there is no
// mount namespace (Landlock only): the go command's GOCACHEPROG, run by the
// go command inside the sandbox as the harvey executable with Arg.
//
// There, commands cannot have a private layer over your Go build cache, so
// they get a private cache of the workspace's (sandboxpolicy's
// PrivateCaches) and your own stays read-only. Alone, that private cache
// starts empty: a first `go build` or `go test` compiled the standard
// library and every module again, tens of seconds on a laptop, minutes on
// a Raspberry Pi. With this program a lookup that the private cache misses
// is answered from yours, read-only; what the command builds is written to
// the private cache only. So nothing a command does can change what your
// own builds later read (the cache cannot be poisoned), and its build is as
// warm as yours.
//
// Contract: Main serves the GOCACHEPROG protocol (cmd/go's cacheprog: JSON
// requests and responses, one a line, on stdin and stdout) with the
// private cache and your cache (what is found there is copied to the
// private cache, and answered from it), both in the go command's own layout
// (DIR/xx/ACTIONID-a entries, DIR/xx/OUTPUTID-d outputs), so the private
// cache is an ordinary GOCACHE too. A go command older than 1.24 ignores
// GOCACHEPROG and uses the private GOCACHE, as before.
package gocache

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Arg is the harvey executable's first argument when the go command
// starts it as its cache program: Arg PRIVATE YOURS.
const Arg = "__harvey_gocache"

// Served is set by the executables that serve Arg (internal/launch's init,
// internal/launchtest's Main): only then is the executable named as the
// go command's cache program.
var Served bool

// Run serves Arg and exits when the process was started as the cache
// program; otherwise it marks this executable as one that serves it.
func Run() {
	if len(os.Args) > 1 && os.Args[1] == Arg {
		os.Exit(Main(os.Args[2:]))
	}
	Served = true
}

// request and response are cmd/go/internal/cacheprog's Request and
// Response, as they travel.
type request struct {
	ID       int64
	Command  string
	ActionID []byte `json:",omitempty"`
	OutputID []byte `json:",omitempty"`
	BodySize int64  `json:",omitempty"`
}

type response struct {
	ID            int64
	Err           string     `json:",omitempty"`
	KnownCommands []string   `json:",omitempty"`
	Miss          bool       `json:",omitempty"`
	OutputID      []byte     `json:",omitempty"`
	Size          int64      `json:",omitempty"`
	Time          *time.Time `json:",omitempty"`
	DiskPath      string     `json:",omitempty"`
}

// Main serves the go command on stdin and stdout: args are the private
// cache (written) and yours (read; "" for none).
func Main(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "harvey gocache: PRIVATE YOURS")
		return 2
	}
	if err := Serve(os.Stdin, os.Stdout, args[0], args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "harvey gocache:", err)
		return 1
	}
	return 0
}

// Serve answers the go command's requests until it closes or asks to.
func Serve(in io.Reader, out io.Writer, private, yours string) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	if err := enc.Encode(response{KnownCommands: []string{"get", "put", "close"}}); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	dec := json.NewDecoder(r)
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		res := response{ID: req.ID}
		switch req.Command {
		case "get":
			res = get(req, private, yours)
		case "put":
			var body []byte
			if req.BodySize > 0 {
				if err := dec.Decode(&body); err != nil { // a JSON string of base64: []byte's own encoding
					return fmt.Errorf("put %d: its body: %w", req.ID, err)
				}
			}
			res = put(req, body, private)
		case "close":
			if err := enc.Encode(res); err != nil {
				return err
			}
			return w.Flush()
		default:
			res.Err = "unknown command " + strconv.Quote(req.Command)
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// get looks the action up in the private cache, then in yours. What is
// found in yours is copied to the private cache first and answered from
// there: your own go commands trim and rewrite your cache while this build
// runs, and a file answered in place could be gone when the go command
// opens it (a build that failed in CI: "open ~/.cache/go-build/...-d: no
// such file or directory"). A copy that cannot be made whole is a miss:
// the go command builds it.
func get(req request, private, yours string) response {
	if res, ok := lookup(private, req.ActionID); ok {
		res.ID = req.ID
		return res
	}
	if yours == "" {
		return response{ID: req.ID, Miss: true}
	}
	res, ok := lookup(yours, req.ActionID)
	if !ok || filepath.Base(filepath.Dir(res.DiskPath)) != fmt.Sprintf("%02x", res.OutputID[0]) { // a cached executable (a directory): built again
		return response{ID: req.ID, Miss: true}
	}
	out := fileName(private, res.OutputID, "d")
	if err := copyWhole(res.DiskPath, out, res.Size); err != nil {
		return response{ID: req.ID, Miss: true}
	}
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", req.ActionID, res.OutputID, res.Size, res.Time.UnixNano())
	if err := writeWhole(fileName(private, req.ActionID, "a"), []byte(entry)); err != nil {
		return response{ID: req.ID, Miss: true}
	}
	res.ID, res.DiskPath = req.ID, out
	return res
}

// copyWhole copies src, which must hold size bytes, to dst through a file
// beside it.
func copyWhole(src, dst string, size int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o777); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(dst), ".tmp-*")
	if err != nil {
		return err
	}
	n, err := io.Copy(f, in)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = fmt.Errorf("%s: %d bytes, not %d", src, n, size)
	}
	if err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// entryLen is the length of an action entry: "v1 ACTION OUTPUT SIZE TIME\n"
// with the hashes in hex and size and time each 20 characters wide.
const entryLen = 2 + 1 + 64 + 1 + 64 + 1 + 20 + 1 + 20 + 1

// lookup reads action id's entry in the cache at dir, and finds its output.
func lookup(dir string, id []byte) (response, bool) {
	if len(id) != 32 {
		return response{}, false
	}
	b, err := os.ReadFile(fileName(dir, id, "a"))
	if err != nil || len(b) != entryLen || string(b[:3]) != "v1 " || b[len(b)-1] != '\n' {
		return response{}, false
	}
	f := strings.Fields(string(b))
	if len(f) != 5 || f[1] != hex.EncodeToString(id) {
		return response{}, false
	}
	out, err := hex.DecodeString(f[2])
	size, err2 := strconv.ParseInt(f[3], 10, 64)
	ns, err3 := strconv.ParseInt(f[4], 10, 64)
	if err != nil || err2 != nil || err3 != nil || len(out) != 32 || size < 0 {
		return response{}, false
	}
	p := fileName(dir, out, "d")
	fi, err := os.Stat(p)
	if err != nil {
		return response{}, false
	}
	if fi.IsDir() { // a cached executable: the one file in the directory
		ents, err := os.ReadDir(p)
		if err != nil || len(ents) != 1 {
			return response{}, false
		}
		p = filepath.Join(p, ents[0].Name())
	} else if fi.Size() != size {
		return response{}, false
	}
	t := time.Unix(0, ns)
	return response{OutputID: out, Size: size, Time: &t, DiskPath: p}, true
}

// put writes the output and its action entry to the private cache, each
// whole or not at all (written aside, then renamed).
func put(req request, body []byte, private string) response {
	res := response{ID: req.ID}
	if len(req.ActionID) != 32 || len(req.OutputID) != 32 || int64(len(body)) != req.BodySize {
		res.Err = "a put needs a 32-byte action and output id and its whole body"
		return res
	}
	out := fileName(private, req.OutputID, "d")
	if err := writeWhole(out, body); err != nil {
		res.Err = err.Error()
		return res
	}
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", req.ActionID, req.OutputID, len(body), time.Now().UnixNano())
	if err := writeWhole(fileName(private, req.ActionID, "a"), []byte(entry)); err != nil {
		res.Err = err.Error()
		return res
	}
	res.DiskPath = out
	return res
}

// fileName is where the go command keeps id's file of kind key ("a", "d").
func fileName(dir string, id []byte, key string) string {
	return filepath.Join(dir, fmt.Sprintf("%02x", id[0]), fmt.Sprintf("%x-%s", id, key))
}

// writeWhole writes b to p through a file beside it.
func writeWhole(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
