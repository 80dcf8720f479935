package npxshare

import (
	"slices"
	"testing"
)

// Packages reads a command line as npx does, and shares only registry
// packages read that way.
func TestPackages(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want []string
	}{
		{[]string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"}, []string{"@modelcontextprotocol/server-filesystem"}},
		{[]string{"/usr/bin/npx", "--yes", "tiny-mcp@1.0.0"}, []string{"tiny-mcp@1.0.0"}},
		{[]string{"npx", "server-memory@^0.6"}, []string{"server-memory@^0.6"}},
		{[]string{"npx", "-y", "pkg", "-p", "other"}, []string{"pkg"}}, // options after the package are its own
		{[]string{"npx", "-p", "a", "--package=@s/b@2", "--", "serve", "-x"}, []string{"a", "@s/b@2"}},
		{[]string{"npx", "--package", "a", "a-bin"}, []string{"a"}},
		{[]string{"npx", "--registry=https://evil.example", "pkg"}, nil},
		{[]string{"npx", "-c", "pkg"}, nil},
		{[]string{"npx", "./local-server"}, nil},
		{[]string{"npx", "github:me/server"}, nil},
		{[]string{"npx", "https://example.com/s.tgz"}, nil},
		{[]string{"npx", "alias@npm:real"}, nil},
		{[]string{"npx", "Pkg"}, nil},
		{[]string{"npx", "-y"}, nil},
		{[]string{"npx", "-p", "a"}, nil},
		{[]string{"node", "server.js"}, nil},
		{[]string{"uvx", "mcp-server-git"}, nil},
	} {
		if got := Packages(c.argv); !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, want %q", c.argv, got, c.want)
		}
	}
}

// A store is named by its packages (in any order) and every env: setting.
func TestKey(t *testing.T) {
	a := Key([]string{"a", "b"}, map[string]string{"X": "1"})
	if a != Key([]string{"b", "a"}, map[string]string{"X": "1"}) {
		t.Error("the packages' order changed the key")
	}
	for _, other := range []string{
		Key([]string{"a", "b"}, nil),
		Key([]string{"a", "b"}, map[string]string{"X": "2"}),
		Key([]string{"a", "b"}, map[string]string{"X": "1", "NODE_OPTIONS": "--require /x.js"}),
		Key([]string{"a"}, map[string]string{"X": "1"}),
	} {
		if other == a {
			t.Error("a different server shares the key")
		}
	}
}
