//go:build ignore

// notices writes the licence notices of every module harvey's binary is
// built from (go list's build list of ./cmd/harvey), for release archives:
//
//	go run ./release/notices.go -o .release/THIRD_PARTY_NOTICES
//
// A module's LICENSE, COPYING and NOTICE files are copied whole, in module
// path order, so two runs on one commit write the same bytes.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	out := flag.String("o", "THIRD_PARTY_NOTICES", "file to write")
	flag.Parse()
	list, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}\t{{.Version}}\t{{.Dir}}{{end}}{{end}}", "./cmd/harvey").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "notices: go list:", err)
		os.Exit(1)
	}
	mods := map[string][2]string{}
	sc := bufio.NewScanner(bytes.NewReader(list))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) == 3 && f[0] != "" {
			mods[f[0]] = [2]string{f[1], f[2]}
		}
	}
	var paths []string
	for p := range mods {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var b strings.Builder
	b.WriteString("Harvey is built from these modules; each one's licence notices follow.\n")
	for _, p := range paths {
		m := mods[p]
		fmt.Fprintf(&b, "\n================================================================\n%s %s\n================================================================\n", p, m[0])
		entries, _ := os.ReadDir(m[1])
		found := false
		for _, e := range entries {
			up := strings.ToUpper(e.Name())
			if e.Type().IsRegular() && (strings.HasPrefix(up, "LICENSE") || strings.HasPrefix(up, "LICENCE") || strings.HasPrefix(up, "COPYING") || strings.HasPrefix(up, "NOTICE")) {
				data, err := os.ReadFile(filepath.Join(m[1], e.Name()))
				if err == nil {
					fmt.Fprintf(&b, "\n--- %s ---\n%s\n", e.Name(), strings.TrimRight(string(data), "\n"))
					found = true
				}
			}
		}
		if !found {
			b.WriteString("\n(no licence file in the module; see its repository)\n")
		}
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "notices:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "notices:", err)
		os.Exit(1)
	}
}
