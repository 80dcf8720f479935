package coerce

import (
	"reflect"
	"strings"
	"testing"
)

var schema = map[string]any{
	"type":     "object",
	"required": []string{"path"},
	"properties": map[string]any{
		"path":    map[string]any{"type": "string"},
		"offset":  map[string]any{"type": "integer"},
		"ratio":   map[string]any{"type": "number"},
		"all":     map[string]any{"type": "boolean"},
		"args":    map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"mode":    map[string]any{"type": "string", "enum": []any{"fast", "slow"}},
		"timeout": map[string]any{"type": []any{"integer", "null"}},
	},
}

// What a small model sends, and what the handler then gets.
func TestArgsFitsTheSchema(t *testing.T) {
	for _, c := range []struct {
		in, want map[string]any
	}{
		{map[string]any{"path": "a.go", "offset": "30"}, map[string]any{"path": "a.go", "offset": 30.0}},
		{map[string]any{"path": "a.go", "all": "true"}, map[string]any{"path": "a.go", "all": true}},
		{map[string]any{"path": "a.go", "args": "--oneline"}, map[string]any{"path": "a.go", "args": []any{"--oneline"}}},
		{map[string]any{"path": 12.0}, map[string]any{"path": "12"}},
		{map[string]any{"path": "a.go", "ratio": "0.5"}, map[string]any{"path": "a.go", "ratio": 0.5}},
		{map[string]any{"path": "a.go", "timeout": "5"}, map[string]any{"path": "a.go", "timeout": 5.0}},
		{map[string]any{"path": "a.go", "unknown": []any{1.0}}, map[string]any{"path": "a.go", "unknown": []any{1.0}}},
	} {
		if err := Args(schema, c.in); err != nil || !reflect.DeepEqual(c.in, c.want) {
			t.Errorf("got %#v, %v; want %#v", c.in, err, c.want)
		}
	}
}

// What does not fit is an error naming the argument, never a default.
func TestArgsRefusesWithTheArgumentsName(t *testing.T) {
	for _, c := range []struct {
		in   map[string]any
		want string
	}{
		{map[string]any{"offset": 1.0}, `missing required argument "path"`},
		{map[string]any{"path": nil}, `missing required argument "path"`},
		{map[string]any{"path": "a.go", "offset": "ten"}, `argument "offset"`},
		{map[string]any{"path": "a.go", "offset": 1.5}, `argument "offset"`},
		{map[string]any{"path": "a.go", "all": "maybe"}, `argument "all"`},
		{map[string]any{"path": "a.go", "mode": "medium"}, `argument "mode"`},
		{map[string]any{"path": []any{"a", "b"}}, `argument "path"`},
	} {
		err := Args(schema, c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%#v: err %v, want %q", c.in, err, c.want)
		}
	}
}
