package harvey

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/configfile"
	"github.com/harvey-agent/harvey/internal/llm"
)

// The configuration's schema is internal/config's (every part of Harvey
// reads its types, so they live below all of them), and the session's
// config file internal/configfile's: loading it (the user's own, then the
// workspace's over it, with what needs the user's confirmation held back)
// and saving it without losing its comments. What stays here is the part
// of the config the agent edits as it runs: the routes.

// RouteRegistry holds named remote endpoints, persisted in harvey.yaml under
// routes:. A prompt starting with @NAME goes to that endpoint for one turn,
// e.g. to send a heavy turn from a Raspberry Pi to a bigger Ollama box.
type RouteRegistry struct{ cf *configfile.File }

// newRouteRegistry wraps the config's routes.
func newRouteRegistry(cf *configfile.File) *RouteRegistry { return &RouteRegistry{cf: cf} }

func (r *RouteRegistry) find(name string) (int, *config.Route) {
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
func (r *RouteRegistry) client(rt *config.Route, timeout time.Duration, numCtx int) (llm.LLMClient, error) {
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
