package gocache

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain serves Arg when the go command starts this test binary as its
// cache program, as the harvey executable serves it.
func TestMain(m *testing.M) {
	Run()
	os.Exit(m.Run())
}

// The protocol as the go command speaks it: the capabilities first; a put
// of a body written as base64 on its own line lands in the private cache in
// the go command's layout; a get finds it there, or in yours, or misses.
func TestServeSpeaksTheProtocol(t *testing.T) {
	private, yours := t.TempDir(), t.TempDir()
	id := func(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }
	// An entry of yours, as the go command writes it.
	if err := writeWhole(fileName(yours, id(3), "d"), []byte("yours")); err != nil {
		t.Fatal(err)
	}
	if err := writeWhole(fileName(yours, id(4), "a"), []byte("v1 "+hexOf(id(4))+" "+hexOf(id(3))+" "+pad(5)+" "+pad(1)+"\n")); err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	in.WriteString(`{"ID":1,"Command":"put","ActionID":"` + b64(id(1)) + `","OutputID":"` + b64(id(2)) + `","BodySize":5}` + "\n")
	in.WriteString(`"` + b64([]byte("hello")) + `"` + "\n")
	in.WriteString(`{"ID":2,"Command":"get","ActionID":"` + b64(id(1)) + `"}` + "\n")
	in.WriteString(`{"ID":3,"Command":"get","ActionID":"` + b64(id(4)) + `"}` + "\n")
	in.WriteString(`{"ID":4,"Command":"get","ActionID":"` + b64(id(9)) + `"}` + "\n")
	in.WriteString(`{"ID":5,"Command":"close"}` + "\n")
	var out bytes.Buffer
	if err := Serve(&in, &out, private, yours); err != nil {
		t.Fatal(err)
	}
	var res []response
	dec := json.NewDecoder(&out)
	for dec.More() {
		var r response
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	if len(res) != 6 || strings.Join(res[0].KnownCommands, ",") != "get,put,close" {
		t.Fatalf("%+v", res)
	}
	if put := res[1]; put.Err != "" || !strings.HasPrefix(put.DiskPath, private) || string(must(os.ReadFile(put.DiskPath))) != "hello" {
		t.Errorf("put: %+v", put)
	}
	if got := res[2]; got.Miss || got.Size != 5 || !bytes.Equal(got.OutputID, id(2)) || !strings.HasPrefix(got.DiskPath, private) {
		t.Errorf("get from the private cache: %+v", got)
	}
	// Found in yours, answered from a copy in the private cache (yours may
	// be trimmed under the build), yours left as it was.
	if got := res[3]; got.Miss || got.Size != 5 || !strings.HasPrefix(got.DiskPath, private) || string(must(os.ReadFile(got.DiskPath))) != "yours" {
		t.Errorf("get from yours: %+v", got)
	}
	if _, err := os.Stat(fileName(private, id(4), "a")); err != nil {
		t.Errorf("what was found in yours has no entry in the private cache: %v", err)
	}
	if n := outputs(yours); n != 1 {
		t.Errorf("yours holds %d outputs", n)
	}
	if !res[4].Miss || res[5].ID != 5 {
		t.Errorf("a miss, then close: %+v %+v", res[4], res[5])
	}
	if _, err := os.Stat(fileName(private, id(1), "a")); err != nil {
		t.Errorf("the put's entry is not in the go command's layout: %v", err)
	}
}

// The real go command with this program: a build whose private cache is
// empty compiles only the module's own package — what it needs of the
// standard library comes from your cache, copied to the private one — and
// a second build compiles nothing; your cache is only read.
func TestGoBuildsWarmFromYourCache(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go here")
	}
	yours := strings.TrimSpace(string(must(exec.Command(goBin, "env", "GOCACHE").Output())))
	if fi, err := os.Stat(yours); err != nil || !fi.IsDir() {
		t.Skip("no Go build cache here")
	}
	warm := exec.Command(goBin, "build", "fmt") // what the module needs is in your cache
	if out, err := warm.CombinedOutput(); err != nil {
		t.Skipf("go build fmt outside the test: %v %s", err, out)
	}
	mod := t.TempDir()
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module m\n\ngo 1.21\n"), 0o644)
	os.WriteFile(filepath.Join(mod, "m.go"), []byte("package m\n\nimport \"fmt\"\n\nfunc S() string { return fmt.Sprint(1) }\n"), 0o644)
	private := t.TempDir()
	exe, _ := os.Executable()
	compiles := func() int { // how many packages the build compiled (go build -x)
		t.Helper()
		c := exec.Command(goBin, "build", "-x", "./...")
		c.Dir = mod
		c.Env = append(os.Environ(), "GOCACHE="+private, "GOCACHEPROG="+exe+" "+Arg+" "+private+" "+yours, "GOFLAGS=", "GOTOOLCHAIN=local")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("go build with the cache program: %v %s", err, out)
		}
		return strings.Count(string(out), "/compile -o")
	}
	if n := compiles(); n != 1 {
		t.Errorf("the first build compiled %d packages: want the module's own, the rest from your cache", n)
	}
	if n := compiles(); n != 0 {
		t.Errorf("a second build compiled %d packages", n)
	}
	if outputs(private) == 0 {
		t.Error("nothing was written to the private cache")
	}
}

// outputs counts the output files (-d) under dir.
func outputs(dir string) int {
	n := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, "-d") {
			n++
		}
		return nil
	})
	return n
}

func b64(b []byte) string   { return base64.StdEncoding.EncodeToString(b) }
func hexOf(b []byte) string { return hex.EncodeToString(b) }
func pad(n int) string      { return fmt.Sprintf("%20d", n) }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
