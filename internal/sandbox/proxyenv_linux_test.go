//go:build linux

package sandbox

import (
	"slices"
	"strings"
	"testing"
)

// The proxy reaches every tool: the variables for most, and Java's system
// properties in MAVEN_OPTS and GRADLE_OPTS after the user's own options
// (the last of a property wins), never a user's proxy of their own.
func TestSetProxyEnv(t *testing.T) {
	spec := Spec{Env: []string{"PATH=/usr/bin", "MAVEN_OPTS=-Xmx1g -Dhttps.proxyHost=evil.example", "https_proxy=http://corp:3128",
		"GRADLE_OPTS=-Xmx1g -Dhttps.proxyHost=evil.example"}}
	setProxyEnv(&spec, "http://127.0.0.1:40123")
	for _, name := range []string{"MAVEN_OPTS", "GRADLE_OPTS"} {
		var opts []string
		for _, kv := range spec.Env {
			if v, ok := strings.CutPrefix(kv, name+"="); ok {
				opts = append(opts, v)
			}
			if kv == "https_proxy=http://corp:3128" {
				t.Errorf("the user's proxy is kept: %v", spec.Env)
			}
		}
		if len(opts) != 1 {
			t.Fatalf("%s: %q", name, opts)
		}
		words := strings.Fields(opts[0])
		if words[0] != "-Xmx1g" || slices.Index(words, "-Dhttps.proxyHost=127.0.0.1") < slices.Index(words, "-Dhttps.proxyHost=evil.example") ||
			!slices.Contains(words, "-Dhttps.proxyPort=40123") || !slices.Contains(words, "-Dhttp.proxyPort=40123") {
			t.Errorf("%s=%s", name, opts[0])
		}
	}
	if !slices.Contains(spec.Env, "https_proxy=http://127.0.0.1:40123") {
		t.Errorf("no proxy variable: %v", spec.Env)
	}

	fresh := Spec{}
	setProxyEnv(&fresh, "http://127.0.0.1:9")
	for _, name := range []string{"MAVEN_OPTS", "GRADLE_OPTS"} {
		if !slices.ContainsFunc(fresh.Env, func(kv string) bool { return strings.HasPrefix(kv, name+"=-Dhttp.proxyHost=127.0.0.1 ") }) {
			t.Errorf("no %s of its own: %v", name, fresh.Env)
		}
	}
	none := Spec{Env: []string{"MAVEN_OPTS=-Xmx1g"}}
	setProxyEnv(&none, "")
	if !slices.Equal(none.Env, []string{"MAVEN_OPTS=-Xmx1g"}) {
		t.Errorf("no proxy, yet: %v", none.Env)
	}
}
