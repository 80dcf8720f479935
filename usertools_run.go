package harvey

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/harvey-agent/harvey/internal/coerce"
	"github.com/harvey-agent/harvey/internal/termtext"
	"github.com/harvey-agent/harvey/internal/wspath"
)

// A user tool as it runs: its arguments put in its command line (never
// through a shell), each path through the path policy, and the run through
// the gate run_command uses.

// buildArgv substitutes the (already coerced) arguments into the command.
// An element that mentions an absent optional parameter is left out. A
// string that starts with "-" cannot fill a whole element before a literal
// "--" (the program would read it as an option).
func (t *UserTool) buildArgv(args map[string]any) ([]string, error) {
	byName := map[string]UserParam{}
	for _, p := range t.Params {
		byName[p.Name] = p
		if err := p.check(args); err != nil {
			return nil, err
		}
	}
	argv := []string{t.Command[0]}
	endOfOptions := false
	for _, el := range t.Command[1:] {
		if el == "--" {
			endOfOptions = true
			argv = append(argv, el)
			continue
		}
		refs := placeholderRE().FindAllStringSubmatch(el, -1)
		switch {
		case len(refs) == 0:
			argv = append(argv, el)
		case anyAbsent(refs, args):
			// an element that mentions an absent optional parameter is left out
		case len(refs) == 1 && refs[0][0] == el:
			vals, err := wholeElement(byName[refs[0][1]], args[refs[0][1]], endOfOptions)
			if err != nil {
				return nil, err
			}
			argv = append(argv, vals...)
		default:
			out, err := substituteInElement(el, refs, args, endOfOptions)
			if err != nil {
				return nil, err
			}
			argv = append(argv, out)
		}
	}
	return argv, nil
}

// check applies required and enum to the argument for p.
func (p UserParam) check(args map[string]any) error {
	v, present := args[p.Name]
	if (!present || v == nil) && p.Required {
		return fmt.Errorf("missing required argument %q", p.Name)
	}
	if present && v != nil && len(p.Enum) > 0 {
		if s := fmt.Sprint(v); !slices.Contains(p.Enum, s) {
			return fmt.Errorf("argument %q must be one of %s", p.Name, strings.Join(p.Enum, ", "))
		}
	}
	return nil
}

func anyAbsent(refs [][]string, args map[string]any) bool {
	for _, m := range refs {
		if v, ok := args[m[1]]; !ok || v == nil {
			return true
		}
	}
	return false
}

// wholeElement is "{{name}}" as a whole element: the value (an array's
// items), none of which may start with "-" before a literal "--" (the
// program would read it as an option) unless it is a number.
func wholeElement(p UserParam, v any, endOfOptions bool) ([]string, error) {
	vals, err := argText(p.Name, v)
	if err != nil {
		return nil, err
	}
	for _, s := range vals {
		if strings.HasPrefix(s, "-") && !endOfOptions && p.Type != "number" && p.Type != "integer" {
			return nil, fmt.Errorf("argument %q may not start with \"-\" (the program would read it as an option)", p.Name)
		}
	}
	return vals, nil
}

// substituteInElement fills placeholders inside a larger element; the
// result may not start with "-" unless the element itself does.
func substituteInElement(el string, refs [][]string, args map[string]any, endOfOptions bool) (string, error) {
	var ferr error
	out := placeholderRE().ReplaceAllStringFunc(el, func(m string) string {
		name := placeholderRE().FindStringSubmatch(m)[1]
		vals, err := argText(name, args[name])
		if err != nil {
			ferr = err
		}
		return strings.Join(vals, " ")
	})
	if ferr != nil {
		return "", ferr
	}
	if strings.HasPrefix(out, "-") && !strings.HasPrefix(el, "-") && !endOfOptions {
		// "{{rev}}..HEAD" with rev=--output=FILE would be an option.
		return "", fmt.Errorf("argument %s may not start with \"-\" (the program would read %q as an option)", termtext.QuoteArgv([]string{refs[0][1]}), out)
	}
	return out, nil
}

// argText renders one argument as argv text (an array as one string per
// item). NUL bytes cannot be passed to a program and are refused.
func argText(name string, v any) ([]string, error) {
	var out []string
	switch x := v.(type) {
	case []any:
		for _, it := range x {
			s, err := scalarText(it)
			if err != nil {
				return nil, fmt.Errorf("argument %q: %v", name, err)
			}
			out = append(out, s)
		}
	default:
		s, err := scalarText(x)
		if err != nil {
			return nil, fmt.Errorf("argument %q: %v", name, err)
		}
		out = []string{s}
	}
	for _, s := range out {
		if strings.IndexByte(s, 0) >= 0 {
			return nil, fmt.Errorf("argument %q contains a NUL byte", name)
		}
		if len(s) > 8192 {
			return nil, fmt.Errorf("argument %q is too long (over 8 KB)", name)
		}
	}
	return out, nil
}

func scalarText(v any) (string, error) {
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
	return "", fmt.Errorf("expected a plain value, got %s", coerce.JSONType(v))
}

// checkToolPaths puts every path parameter through the path policy of
// read_file (write_file for a path that does not exist yet, in a tool that
// is not read-only) and passes the resolved workspace-relative path on:
// the program gets the checked object, never the spelling the model chose
// (a link, "..", agents/, a denied file are refused here).
func (g *Gate) checkToolPaths(t *UserTool, args map[string]any) (map[string]any, error) {
	var out map[string]any
	for _, p := range t.Params {
		v, ok := args[p.Name].(string)
		if p.Type != "path" || !ok {
			continue
		}
		rp, err := g.ws.Resolve(v, wspath.OpRead)
		if err != nil && t.Effect != EffectRead {
			if wp, werr := g.ws.Resolve(v, wspath.OpWrite); werr == nil && wp.Info == nil {
				rp, err = wp, nil
			} else if werr == nil {
				wp.Close()
			}
		}
		if err != nil {
			return nil, fmt.Errorf("argument %q: %w", p.Name, err)
		}
		rp.Close()
		rel := rp.Rel
		if strings.HasPrefix(rel, "-") {
			rel = "./" + rel
		}
		if out == nil {
			out = maps.Clone(args)
		}
		out[p.Name] = rel
	}
	if out == nil {
		return args, nil
	}
	return out, nil
}

// runUserTool runs a user tool through the gate run_command uses
// (runGated): its path parameters checked, exec permission, safe mode's
// allowlist, approval by effect (read-only tools run without asking), the
// sandboxed runner, the audit record.
func (g *Gate) runUserTool(ctx context.Context, t *UserTool, args map[string]any) (string, error) {
	r, err := g.userToolRequest(t, args, "")
	if err != nil {
		return "", err
	}
	res, err := g.runGated(ctx, r)
	if err != nil {
		return "", err
	}
	return res.Text(g.resultCap()), nil
}

// userToolRequest is the run of t with args: its path parameters checked
// and its command line built (a refusal is audited); how says what the
// approval adds ("" for a call that returns its result).
func (g *Gate) userToolRequest(t *UserTool, args map[string]any, how string) (runRequest, error) {
	args, err := g.checkToolPaths(t, args)
	if err != nil {
		g.audit("tool", t.Name, err, 0)
		return runRequest{}, err
	}
	argv, err := t.buildArgv(args)
	if err != nil {
		return runRequest{}, err
	}
	shown := t.Name + ": " + termtext.QuoteArgv(argv)
	ask := ""
	if t.Effect != EffectRead {
		ask = t.Name
	}
	return runRequest{audit: "tool", shown: shown, tool: ask, action: "run " + t.Name + " (" + string(t.Effect) + how + "): " + termtext.QuoteArgv(argv), argv: argv, timeout: t.Timeout}, nil
}
