package usertools

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/coerce"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// A tool's command line, its arguments put in (never through a shell).

// BuildArgv substitutes the (already coerced) arguments into the command.
// An element that mentions an absent optional parameter is left out. A
// string that starts with "-" cannot fill a whole element before a literal
// "--" (the program would read it as an option).
func (t *Tool) BuildArgv(args map[string]any) ([]string, error) {
	byName := map[string]Param{}
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
func (p Param) check(args map[string]any) error {
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
func wholeElement(p Param, v any, endOfOptions bool) ([]string, error) {
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
	case map[string]any:
		// An object parameter is passed as its JSON, one argument.
		b, err := json.Marshal(x)
		if err != nil {
			return nil, fmt.Errorf("argument %q: %v", name, err)
		}
		out = []string{string(b)}
	case []any:
		for _, it := range x {
			s, err := coerce.ScalarText(it)
			if err != nil {
				return nil, fmt.Errorf("argument %q: %v", name, err)
			}
			out = append(out, s)
		}
	default:
		s, err := coerce.ScalarText(x)
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
