package configfile

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/config"
	"github.com/harvey-agent/harvey/internal/secrets"
	"github.com/harvey-agent/harvey/internal/termtext"
)

// What a hook or a server of a config is, in words for the user: the
// confirmation list's lines, the hooks' audit records and listings. Here
// and not in internal/config, which stays a leaf (the schema renders
// nothing).

// HookShown is the hook in a few words for the user: its event, tools and
// command.
func HookShown(h config.HookConfig) string {
	if h.Event == config.HookPrompt || config.IsStop(h.Event) {
		return fmt.Sprintf("%s: %s", h.Event, termtext.QuoteArgv(h.Command))
	}
	return fmt.Sprintf("%s %s: %s", h.Event, cmp.Or(h.Match, "*"), termtext.QuoteArgv(h.Command))
}

// DescribeServer says exactly what the server runs or sends, for a
// confirmation: the argv, the environment's names, the network; or the
// URL and each header as it will be sent; and the tools it says run
// without asking (read_only). A ${VAR} of a workspace's server
// is sent as written, and the line says so.
func DescribeServer(s config.MCPServer) string {
	var b strings.Builder
	if s.URL != "" {
		b.WriteString("connects to " + s.URL)
		if len(s.Headers) > 0 {
			var hs []string
			for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
				hs = append(hs, k+": "+secrets.Redact(s.Headers[k]))
			}
			b.WriteString(" sending headers " + strings.Join(hs, ", "))
		}
	} else {
		b.WriteString("runs " + termtext.QuoteArgv(s.Command) + " (sandboxed")
		if s.Network {
			b.WriteString(", with network")
		}
		b.WriteString(")")
		if len(s.Env) > 0 {
			b.WriteString(" with environment " + strings.Join(slices.Sorted(maps.Keys(s.Env)), ", "))
		}
	}
	if len(s.ReadOnly) > 0 {
		b.WriteString("; its tools " + strings.Join(s.ReadOnly, ", ") + " run without asking (read_only)")
	}
	if s.FromWorkspace && s.NamesVariables() {
		b.WriteString("; ${VAR} values are sent as written, not filled from your environment (to pass one, add the server to your own config: harvey mcp import)")
	}
	return b.String()
}
