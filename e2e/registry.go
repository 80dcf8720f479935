package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

// NPMFixture serves packages (name → file → content, at version 1.0.0) as
// an npm registry does — metadata and tarballs — on 127.0.0.2, and returns
// its base URL and each tarball's integrity.
func NPMFixture(t testing.TB, pkgs map[string]map[string]string) (string, map[string]string) {
	t.Helper()
	return NPMFixtureCounted(t, pkgs, new(atomic.Int64))
}

// NPMFixtureCounted is NPMFixture counting the tarballs it serves.
func NPMFixtureCounted(t testing.TB, pkgs map[string]map[string]string, tarballs *atomic.Int64) (string, map[string]string) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2: %v", err)
	}
	base := "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	integrity := map[string]string{}
	for name, files := range pkgs {
		var tgz bytes.Buffer
		gz := gzip.NewWriter(&tgz)
		tw := tar.NewWriter(gz)
		for fname, body := range files {
			tw.WriteHeader(&tar.Header{Name: "package/" + fname, Mode: 0o755, Size: int64(len(body))})
			tw.Write([]byte(body))
		}
		tw.Close()
		gz.Close()
		sum := sha512.Sum512(tgz.Bytes())
		integ := "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
		integrity[name] = integ
		tarball := fmt.Sprintf("%s/%s/-/%s-1.0.0.tgz", base, name, name)
		data := tgz.Bytes()
		mux.HandleFunc("/"+name+"/-/"+name+"-1.0.0.tgz", func(w http.ResponseWriter, r *http.Request) { tarballs.Add(1); w.Write(data) })
		var pj map[string]any
		json.Unmarshal([]byte(files["package.json"]), &pj)
		pj["dist"] = map[string]any{"tarball": tarball, "integrity": integ}
		meta, _ := json.Marshal(map[string]any{"name": name, "dist-tags": map[string]string{"latest": "1.0.0"}, "versions": map[string]any{"1.0.0": pj}})
		mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) { w.Write(meta) })
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return base, integrity
}

// LeftpadPackage is one small package for NPMFixture.
var LeftpadPackage = map[string]map[string]string{"leftpad": {
	"package.json": `{"name":"leftpad","version":"1.0.0","main":"index.js"}`,
	"index.js":     "module.exports = (s, n) => String(s).padStart(n, '0');\n",
}}
