// Package coerce fits the arguments a small model sends to a tool's JSON
// schema, once per call, before a handler decodes them.
//
// Contract: Args(schema, args) either returns nil, and then every argument
// the schema describes has the schema's type ("30" became 30 for an
// integer, "true" true for a boolean, one string a list of one where an
// array is wanted, a number its decimal text where a string is wanted, an
// enum's value matched), or returns an error that names the argument and
// the type it wanted, in words a model can act on. Required arguments must
// be present and not null; arguments the schema does not name are left as
// they are. It never guesses between two readings: a value that fits no
// type of the schema is an error, not a default.
package coerce

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Args fits arguments from a small model to the tool's JSON schema
// before the handler runs: "30" for an integer, "true" for a boolean, a single
// string where an array of strings is expected, a number where a string is
// expected. Required fields must be present. What still does not fit is an
// error naming the field and the expected type.
func Args(schema map[string]any, args map[string]any) error {
	props := Props(schema)
	for _, k := range required(schema) {
		if v, present := args[k]; !present || v == nil {
			return fmt.Errorf("missing required argument %q", k)
		}
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p, ok := props[k].(map[string]any)
		if !ok {
			continue // unknown keys are ignored
		}
		v, err := coerceValue(p, args[k])
		if err != nil {
			return fmt.Errorf("argument %q: %v", k, err)
		}
		args[k] = v
	}
	return nil
}

func coerceValue(p map[string]any, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	typ, _ := p["type"].(string)
	if types := schemaTypes(p["type"]); len(types) > 1 {
		return coerceUnion(p, types, v)
	}
	if c, ok := coercers[typ]; ok {
		return c(p, v)
	}
	return v, nil
}

// coerceUnion fits a value to a union type ("array" or "string"): a value
// of one of the types is kept as that type; otherwise the first type that
// fits wins.
func coerceUnion(p map[string]any, types []string, v any) (any, error) {
	typ := jsonTypeName(v)
	if typ == "number" && !slices.Contains(types, "number") && slices.Contains(types, "integer") {
		typ = "integer"
	}
	if slices.Contains(types, typ) {
		return coercers[typ](p, v)
	}
	var firstErr error
	for _, t := range types {
		q := map[string]any{"type": t, "items": p["items"], "enum": p["enum"]}
		c, err := coerceValue(q, v)
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

// coercers fit a decoded JSON value to one schema type.
var coercers map[string]func(p map[string]any, v any) (any, error)

func init() {
	coercers = map[string]func(map[string]any, any) (any, error){
		"integer": coerceInteger,
		"number":  coerceNumber,
		"boolean": coerceBoolean,
		"string":  coerceString,
		"array":   coerceArray,
		"object":  coerceObject,
		"null":    func(_ map[string]any, v any) (any, error) { return v, nil },
	}
}

func coerceInteger(_ map[string]any, v any) (any, error) {
	if n, ok := numberOf(v); ok && n == math.Trunc(n) {
		return n, nil
	}
	return nil, fmt.Errorf("expected an integer, got %s", describeValue(v))
}

func coerceNumber(_ map[string]any, v any) (any, error) {
	if n, ok := numberOf(v); ok {
		return n, nil
	}
	return nil, fmt.Errorf("expected a number, got %s", describeValue(v))
}

// numberOf reads a number, or a string that holds one ("30").
func numberOf(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case string:
		n, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return n, err == nil
	}
	return 0, false
}

func coerceBoolean(_ map[string]any, v any) (any, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "yes", "1":
			return true, nil
		case "false", "no", "0":
			return false, nil
		}
	case float64:
		if x == 0 || x == 1 {
			return x == 1, nil
		}
	}
	return nil, fmt.Errorf("expected a boolean, got %s", describeValue(v))
}

func coerceString(p map[string]any, v any) (any, error) {
	switch x := v.(type) {
	case string:
		if err := checkEnum(p, x); err != nil {
			return nil, err
		}
		return x, nil
	case float64, bool:
		return ScalarText(x)
	}
	return nil, fmt.Errorf("expected a string, got %s", describeValue(v))
}

// coerceArray accepts a single value where a list is expected.
func coerceArray(p map[string]any, v any) (any, error) {
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	items, _ := p["items"].(map[string]any)
	if items == nil {
		return list, nil
	}
	for i, it := range list {
		c, err := coerceValue(items, it)
		if err != nil {
			return nil, fmt.Errorf("item %d: %v", i, err)
		}
		list[i] = c
	}
	return list, nil
}

func coerceObject(_ map[string]any, v any) (any, error) {
	if m, ok := v.(map[string]any); ok {
		return m, nil
	}
	return nil, fmt.Errorf("expected an object, got %s", describeValue(v))
}

func checkEnum(p map[string]any, s string) error {
	var allowed []string
	switch e := p["enum"].(type) {
	case []string:
		allowed = e
	case []any:
		for _, x := range e {
			if xs, ok := x.(string); ok {
				allowed = append(allowed, xs)
			}
		}
	default:
		return nil
	}
	for _, a := range allowed {
		if a == s {
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %s", s, strings.Join(allowed, ", "))
}

// JSONType names the JSON type of a decoded value.
func JSONType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64, int, int64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func describeValue(v any) string {
	s := fmt.Sprintf("%v", v)
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return fmt.Sprintf("%s (%s)", JSONType(v), s)
}

// schemaTypes reads a schema "type": a string or a list of strings.
func schemaTypes(t any) []string {
	switch x := t.(type) {
	case string:
		return []string{x}
	case []string:
		return x
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// jsonTypeName is the JSON Schema type name of a decoded value.
func jsonTypeName(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64, int, int64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

// required is a schema's required names, as Go code writes them
// ([]string) or as JSON decodes them ([]any: an MCP server's schema).
func required(schema map[string]any) []string {
	switch r := schema["required"].(type) {
	case []string:
		return r
	case []any:
		var out []string
		for _, x := range r {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// ScalarText is a plain JSON value (string, boolean, number) as text, the
// way a program's argument or a form's field takes it.
func ScalarText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	}
	return "", fmt.Errorf("expected a plain value, got %s", JSONType(v))
}
