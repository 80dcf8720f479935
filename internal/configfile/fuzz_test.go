// Feature: any harvey.yaml parses within its ceilings or fails in one line.
package configfile

import (
	"strings"
	"testing"

	"github.com/harvey-agent/harvey/internal/config"
)

// FuzzParseConfig: any harvey.yaml either fails with a one-line error or
// gives a config within its ceilings.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"model: llama3.2\nnum_ctx: 4096\nrun_timeout: 90s\n",
		"tools:\n  max_output_bytes: 999999999\n  max_tool_calls_per_turn: -5\n",
		"models:\n  mistral:\n    tools_enabled: false\n    num_ctx: 2048\n",
		"routes:\n  - name: box\n    provider: vllm\n    url: http://x\n",
		"run_timeout: 300\nollama_timeout: \"5m\"\n",
		"permissions:\n  src/: [read, write]\n",
		"model: [unclosed\n",
		"- a list\n",
		"num_ctx: 1e9\n",
		"&a [*a]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cf := &File{Config: config.Default()}
		_, err := Parse(data, cf)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		c := cf.Config
		if c.MaxOutputBytes() <= 0 || c.MaxOutputBytes() > config.DefaultMaxOutputBytes {
			t.Fatalf("max_output_bytes = %d", c.MaxOutputBytes())
		}
		for _, m := range []string{"", c.Model, "llama3.2", "mistral"} {
			if n := c.MaxToolCalls(m); n <= 0 || n > config.DefaultMaxToolCalls {
				t.Fatalf("max_tool_calls(%q) = %d", m, n)
			}
			if n := c.EffectiveNumCtx(m); n <= 0 {
				t.Fatalf("num_ctx(%q) = %d", m, n)
			}
		}
		if c.RunTimeout < 0 || c.OllamaTimeout < 0 {
			t.Fatalf("negative timeout: %v %v", c.RunTimeout, c.OllamaTimeout)
		}
	})
}
