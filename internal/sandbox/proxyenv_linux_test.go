//go:build linux

package sandbox

import (
	"slices"
	"strings"
	"testing"
)

// The proxy reaches every tool: the variables for most, and Java's system
// properties in MAVEN_OPTS after the user's own options (the last of a
// property wins), never a user's proxy of their own.
func TestSetProxyEnv(t *testing.T) {
	spec := Spec{Env: []string{"PATH=/usr/bin", "MAVEN_OPTS=-Xmx1g -Dhttps.proxyHost=evil.example", "https_proxy=http://corp:3128"}}
	setProxyEnv(&spec, "http://127.0.0.1:40123")
	var maven []string
	for _, kv := range spec.Env {
		if v, ok := strings.CutPrefix(kv, "MAVEN_OPTS="); ok {
			maven = append(maven, v)
		}
		if kv == "https_proxy=http://corp:3128" {
			t.Errorf("the user's proxy is kept: %v", spec.Env)
		}
	}
	if len(maven) != 1 {
		t.Fatalf("MAVEN_OPTS: %q", maven)
	}
	words := strings.Fields(maven[0])
	if words[0] != "-Xmx1g" || slices.Index(words, "-Dhttps.proxyHost=127.0.0.1") < slices.Index(words, "-Dhttps.proxyHost=evil.example") ||
		!slices.Contains(words, "-Dhttps.proxyPort=40123") || !slices.Contains(words, "-Dhttp.proxyPort=40123") {
		t.Errorf("MAVEN_OPTS=%s", maven[0])
	}
	if !slices.Contains(spec.Env, "https_proxy=http://127.0.0.1:40123") {
		t.Errorf("no proxy variable: %v", spec.Env)
	}

	fresh := Spec{}
	setProxyEnv(&fresh, "http://127.0.0.1:9")
	if !slices.ContainsFunc(fresh.Env, func(kv string) bool { return strings.HasPrefix(kv, "MAVEN_OPTS=-Dhttp.proxyHost=127.0.0.1 ") }) {
		t.Errorf("no MAVEN_OPTS of its own: %v", fresh.Env)
	}
	none := Spec{Env: []string{"MAVEN_OPTS=-Xmx1g"}}
	setProxyEnv(&none, "")
	if !slices.Equal(none.Env, []string{"MAVEN_OPTS=-Xmx1g"}) {
		t.Errorf("no proxy, yet: %v", none.Env)
	}
}
