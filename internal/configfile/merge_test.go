package configfile

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/wspath"
	"gopkg.in/yaml.v3"
)

// Every setting has a merge rule, and the rule's kind has what it needs:
// the gated list is computed from the rules, so a new field without one
// fails here instead of being merged from a cloned repository unseen.
func TestEveryConfigKeyHasARule(t *testing.T) {
	ct := reflect.TypeOf(config.Config{})
	for i := 0; i < ct.NumField(); i++ {
		key, _, _ := strings.Cut(ct.Field(i).Tag.Get("yaml"), ",")
		r := findRule(key)
		switch {
		case r == nil:
			t.Errorf("%s: no merge rule", key)
		case r.kind == ruleLimit && (r.strict == nil || r.adds == nil || r.take == nil):
			t.Errorf("%s: a limit needs strict, adds and take", key)
		case r.kind == ruleSends && (r.adds == nil || r.take == nil):
			t.Errorf("%s: a sender needs adds and take", key)
		case r.kind == rulePlain && r.take == nil:
			t.Errorf("%s: a plain setting needs take", key)
		}
	}
}

// randomLimits makes a config with random limits.
func randomLimits(rng *rand.Rand) *config.Config {
	c := config.Default()
	pick := func(xs []string) []string {
		var out []string
		for _, x := range xs {
			if rng.IntN(2) == 0 {
				out = append(out, x)
			}
		}
		return out
	}
	b := func() *bool {
		switch rng.IntN(3) {
		case 0:
			return nil
		case 1:
			v := true
			return &v
		}
		v := false
		return &v
	}
	c.SafeMode = rng.IntN(2) == 0
	c.AllowedCommands = pick([]string{"ls", "go", "curl", "make", "npm"})
	c.Permissions = map[string][]string{}
	for _, p := range pick([]string{".", "src", "src/gen", "secret", "docs"}) {
		c.Permissions[p] = pick(wspath.ValidPerms)
	}
	if rng.IntN(4) == 0 {
		c.Permissions = nil
	}
	c.RunTimeout = config.Duration(rng.IntN(3)) * config.Duration(config.DefaultRunTimeout)
	c.Tools = config.ToolsConfig{Enabled: b(), MaxToolCallsPerTurn: rng.IntN(config.DefaultMaxToolCalls + 1), MaxOutputBytes: rng.IntN(3) * 1000,
		AllowedTools: pick([]string{"read_file", "write_file", "run_command", "list_files"})}
	c.Models = map[string]config.ModelConfig{}
	for _, n := range pick([]string{"llama3.2", "mistral"}) {
		c.Models[n] = config.ModelConfig{ToolsEnabled: b(), MaxToolCallsPerTurn: rng.IntN(12), MaxTools: rng.IntN(30)}
	}
	return c
}

// The stricter value wins: merging a workspace never loosens the user's
// config nor the workspace's own, for any pair of random limits; and
// whatever the workspace would loosen is gated.
func TestStricterValueWins(t *testing.T) {
	var limits []string
	for _, r := range configRules {
		if r.kind == ruleLimit {
			limits = append(limits, r.key)
		}
	}
	rng := rand.New(rand.NewPCG(27, 2))
	for i := 0; i < 3000; i++ {
		base, ws := randomLimits(rng), randomLimits(rng)
		merged := mergeWorkspace(base, ws, limits)
		for _, g := range gatedKeys(base, merged, limits) {
			t.Fatalf("case %d: the merge loosens the user's %s: %s\nbase %+v\nws   %+v", i, g.Key, g.Shown, base, ws)
		}
		for _, g := range gatedKeys(ws, merged, limits) {
			t.Fatalf("case %d: the merge loosens the workspace's %s: %s\nbase %+v\nws   %+v", i, g.Key, g.Shown, base, ws)
		}
		// Paths: what the merge permits, both permit.
		for _, p := range []string{"x", "src/a.go", "src/gen/b.go", "secret/k", "docs/d.md"} {
			for _, perm := range wspath.ValidPerms {
				if wspath.Permits(merged.Permissions, p, perm) != (wspath.Permits(base.Permissions, p, perm) && wspath.Permits(ws.Permissions, p, perm)) {
					t.Fatalf("case %d: %s %s: merged %v base %v ws %v", i, p, perm, merged.Permissions, base.Permissions, ws.Permissions)
				}
			}
		}
		// Taking the workspace as written is gated exactly when it loosens.
		taken := mergeConfig(base, ws, limits)
		if loosens := len(gatedKeys(base, taken, limits)) > 0; loosens != (len(gatedKeys(base, ws, limits)) > 0) {
			t.Fatalf("case %d: gated %v, but taking it loosens %v", i, gatedKeys(base, ws, limits), gatedKeys(base, taken, limits))
		}
	}
}

// Issue 27's cases: a repository's tools: and models: cannot widen the
// user's, and a wider permissions: rule cannot hide a narrower one of yours.
func TestWorkspaceCannotLoosenUnconfirmed(t *testing.T) {
	f, tr := false, true
	base := config.Default()
	base.Tools = config.ToolsConfig{AllowedTools: []string{"read_file", "list_files"}}
	base.Models = map[string]config.ModelConfig{"llama3.2": {ToolsEnabled: &f}}
	base.Permissions = map[string][]string{".": wspath.ValidPerms, "secret": {}}
	ws := config.Default()
	ws.Tools = config.ToolsConfig{AllowedTools: []string{"read_file", "write_file", "run_command"}, Enabled: &tr}
	ws.Models = map[string]config.ModelConfig{"llama3.2": {ToolsEnabled: &tr, NumCtx: 8192}}
	ws.Permissions = map[string][]string{".": wspath.ValidPerms}
	keys := []string{"tools", "models", "permissions"}
	gated := gatedKeys(base, ws, keys)
	if got := GatedNames(gated); !slices.Equal(got, keys) {
		t.Fatalf("gated %v", gated)
	}
	m := mergeWorkspace(base, ws, keys)
	if !slices.Equal(m.Tools.AllowedTools, []string{"read_file"}) || m.ToolsEnabled("llama3.2") || wspath.Permits(m.Permissions, "secret/k", wspath.PermRead) {
		t.Fatalf("merged %+v %+v %v", m.Tools, m.Models, m.Permissions)
	}
	if m.EffectiveNumCtx("llama3.2") != 8192 {
		t.Fatalf("a window size is the workspace's to choose: %d", m.EffectiveNumCtx("llama3.2"))
	}
}

// Every setting is either merged from a workspace's agents/harvey.yaml or
// named in userOnlyKeys (and then warned about there): the two lists of
// what a workspace may set cannot drift apart silently.
func TestWorkspaceKeysMergedOrUserOnly(t *testing.T) {
	var nonZero func(reflect.Type) reflect.Value
	nonZero = func(ty reflect.Type) reflect.Value {
		if ty == reflect.TypeOf(yaml.Node{}) { // recursive: a scalar is not zero
			return reflect.ValueOf(yaml.Node{Kind: yaml.ScalarNode, Value: "x"})
		}
		v := reflect.New(ty).Elem()
		switch ty.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int64:
			v.SetInt(7)
		case reflect.Slice:
			v = reflect.Append(reflect.MakeSlice(ty, 0, 1), nonZero(ty.Elem()))
		case reflect.Map:
			v = reflect.MakeMap(ty)
			v.SetMapIndex(nonZero(ty.Key()), nonZero(ty.Elem()))
		case reflect.Pointer:
			v = reflect.New(ty.Elem())
			v.Elem().Set(nonZero(ty.Elem()))
		case reflect.Struct:
			for i := 0; i < ty.NumField(); i++ {
				if ty.Field(i).IsExported() {
					v.Field(i).Set(nonZero(ty.Field(i).Type))
				}
			}
		}
		return v
	}
	ct := reflect.TypeOf(config.Config{})
	for i := 0; i < ct.NumField(); i++ {
		f := ct.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		over := &config.Config{}
		reflect.ValueOf(over).Elem().Field(i).Set(nonZero(f.Type))
		out := mergeConfig(&config.Config{}, over, []string{key})
		merged := !reflect.ValueOf(out).Elem().Field(i).IsZero()
		if merged == slices.Contains(userOnlyKeys, key) {
			t.Errorf("%s: merged from a workspace %v, listed as user-only %v", key, merged, slices.Contains(userOnlyKeys, key))
		}
	}
}
