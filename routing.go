package harvey

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// RouteRegistry holds named remote endpoints, persisted in harvey.yaml under
// routes:. A prompt starting with @NAME goes to that endpoint for one turn,
// e.g. to send a heavy turn from a Raspberry Pi to a bigger Ollama box.
type RouteRegistry struct{ cf *ConfigFile }

// newRouteRegistry wraps the config's routes.
func newRouteRegistry(cf *ConfigFile) *RouteRegistry { return &RouteRegistry{cf: cf} }

func (r *RouteRegistry) find(name string) (int, *Route) {
	for i := range r.cf.Routes {
		if strings.EqualFold(r.cf.Routes[i].Name, name) {
			return i, &r.cf.Routes[i]
		}
	}
	return -1, nil
}

// providerHosts are the cloud providers' own API hosts. Their keys come
// from the environment (OPENAI_API_KEY, ...) and go only there.
var providerHosts = map[string]string{
	"openai": "api.openai.com", "anthropic": "api.anthropic.com", "mistral": "api.mistral.ai",
	"gemini": "generativelanguage.googleapis.com", "deepseek": "api.deepseek.com", "groq": "api.groq.com",
}

// client builds a backend for a route.
func (r *RouteRegistry) client(rt *Route, timeout time.Duration, numCtx int) (LLMClient, error) {
	if host, ok := providerHosts[rt.Provider]; ok && rt.URL != "" {
		if u, err := url.Parse(rt.URL); err != nil || !strings.EqualFold(u.Hostname(), host) {
			return nil, fmt.Errorf("route @%s: provider %s with URL %s would send your %s API key to another host; use provider openai-compatible for other servers", rt.Name, rt.Provider, rt.URL, rt.Provider)
		}
	}
	if rt.Provider == "ollama" {
		return newOllamaClient(rt.URL, rt.Model, numCtx, "", timeout)
	}
	return newAnyLLMClient(rt.Provider, rt.URL, rt.Model, timeout)
}

func cmdRoute(_ context.Context, a *Agent, args []string, out io.Writer) error {
	if len(args) == 0 {
		args = []string{"list"}
	}
	rr := a.Routes
	changed := false
	switch args[0] {
	case "list":
		if len(rr.cf.Routes) == 0 {
			fmt.Fprintln(out, "no routes; add one with /route add NAME PROVIDER URL MODEL")
		}
		for _, rt := range rr.cf.Routes {
			state := "enabled"
			if !rt.Enabled {
				state = "disabled"
			}
			fmt.Fprintf(out, "@%-12s %-18s %-32s %-20s %s\n", rt.Name, rt.Provider, rt.URL, rt.Model, state)
		}
		return nil
	case "add":
		if len(args) == 4 {
			return errors.New("give a MODEL for the route: /route add NAME PROVIDER URL MODEL")
		}
		if len(args) != 5 {
			return a.commands.usageError("route")
		}
		name, provider, url := args[1], strings.ToLower(args[2]), args[3]
		if provider != "ollama" && !contains(Providers, provider) {
			return fmt.Errorf("unknown provider %q (known: ollama, %s)", provider, strings.Join(Providers, ", "))
		}
		if _, existing := rr.find(name); existing != nil {
			return fmt.Errorf("route %q exists; remove it first", name)
		}
		rt := Route{Name: name, Provider: provider, URL: url, Model: args[4], Enabled: true}
		rr.cf.Routes = append(rr.cf.Routes, rt)
		fmt.Fprintf(out, "route @%s added\n", name)
		changed = true
	case "remove", "rm":
		if len(args) != 2 {
			return a.commands.usageError("route")
		}
		i, rt := rr.find(args[1])
		if rt == nil {
			return fmt.Errorf("no route %q", args[1])
		}
		rr.cf.Routes = append(rr.cf.Routes[:i], rr.cf.Routes[i+1:]...)
		fmt.Fprintf(out, "route @%s removed\n", args[1])
		changed = true
	case "enable", "disable":
		if len(args) != 2 {
			return a.commands.usageError("route")
		}
		_, rt := rr.find(args[1])
		if rt == nil {
			return fmt.Errorf("no route %q", args[1])
		}
		rt.Enabled = args[0] == "enable"
		fmt.Fprintf(out, "route @%s %sd\n", rt.Name, args[0])
		changed = true
	default:
		return a.commands.usageError("route")
	}
	if changed {
		if err := rr.cf.Save(a.Workspace, "routes"); err != nil {
			return fmt.Errorf("changed for this session, but not saved: %v", err)
		}
	}
	return nil
}

// splitMention splits "@name rest" into the route name and the prompt.
func splitMention(line string) (string, string, bool) {
	if !strings.HasPrefix(line, "@") {
		return "", line, false
	}
	name, rest, _ := strings.Cut(line[1:], " ")
	if name == "" {
		return "", line, false
	}
	return name, strings.TrimSpace(rest), true
}
