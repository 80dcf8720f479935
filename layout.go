package harvey

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/harvey-agent/harvey/internal/llm"
	anyllm "github.com/mozilla-ai/any-llm-go"
)

// Where a model's tools go in the prompt. Ollama reuses its KV cache for
// the common prefix of the prompt it renders with the model's template, and
// the templates of the two families small-model users run most move things
// between turns: llama3.2's puts the tool block inside the *last* user
// message (only while it is last, so it vanishes during tool rounds);
// mistral's puts [AVAILABLE_TOOLS] and the system prompt before the last
// user message. Every turn then re-evaluates the tool block and the last
// exchange — tens of seconds on a Raspberry Pi.
//
// For those families Harvey writes the tools into a part of the prompt that
// never moves, in the family's own words and format, and sends no tools
// field: the rendered prompt only grows. The model answers with the call
// format its template taught it, and Harvey recovers the call from the text
// (internal/textcalls), as Ollama's own parser would have. Unknown families keep
// the tools field (layoutNative).
type promptLayout int

const (
	layoutNative       promptLayout = iota // tools in the request; the template places them
	layoutLlama3System                     // llama3.x: the template's tool block, in the system message
	layoutMistralFirst                     // mistral: system prompt and tools at the head of the first user message
)

func (l promptLayout) String() string {
	switch l {
	case layoutLlama3System:
		return "llama3 tools in the system message"
	case layoutMistralFirst:
		return "mistral tools in the first message"
	}
	return "native tools field"
}

// layoutForTemplate recognises a family by its published chat template.
func layoutForTemplate(tmpl string) promptLayout {
	switch {
	case strings.Contains(tmpl, "Given the following functions, please respond with a JSON for a function call") && strings.Contains(tmpl, "<|start_header_id|>"):
		return layoutLlama3System
	case strings.Contains(tmpl, "[AVAILABLE_TOOLS]") && strings.Contains(tmpl, "[INST]"):
		return layoutMistralFirst
	}
	return layoutNative
}

// llama3ToolBlock is the tool block of Ollama's llama3.1/3.2 templates,
// word for word, followed by each tool as the template prints it.
func llama3ToolBlock(tools []anyllm.Tool) string {
	var b strings.Builder
	b.WriteString("Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n")
	b.WriteString(`Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}. Do not use variables.` + "\n\n")
	for _, t := range tools {
		b.WriteString(templateToolJSON(t))
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// mistralToolBlock describes the tools as mistral's template lists them,
// with the call format its [TOOL_CALLS] training uses.
func mistralToolBlock(tools []anyllm.Tool) string {
	var parts []string
	for _, t := range tools {
		parts = append(parts, templateToolJSON(t))
	}
	return "You can call these tools: [" + strings.Join(parts, ", ") + "]\n" +
		`To call tools, reply with only [TOOL_CALLS] [{"name": tool name, "arguments": {argument name: value}}].`
}

// templateToolJSON renders a tool the way Ollama's templates print one
// (type, then function with name, description, parameters).
func templateToolJSON(t anyllm.Tool) string {
	type fn struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}{"function", fn{t.Function.Name, t.Function.Description, t.Function.Parameters}})
	return strings.TrimSpace(b.String())
}

// apply returns the messages to send for this layout (history is not
// changed); with a non-native layout no tools field is sent.
func (l promptLayout) apply(msgs []llm.Message, tools []anyllm.Tool) ([]llm.Message, []anyllm.Tool) {
	if l == layoutNative || len(tools) == 0 {
		return msgs, tools
	}
	out := append([]llm.Message(nil), msgs...)
	switch l {
	case layoutLlama3System:
		block := llama3ToolBlock(tools)
		if len(out) > 0 && out[0].Role == llm.RoleSystem {
			out[0].Content += "\n\n" + block
		} else {
			out = append([]llm.Message{{Role: llm.RoleSystem, Content: block}}, out...)
		}
	case layoutMistralFirst:
		// The template moves the system prompt to the last user message:
		// it goes, with the tools, at the head of the first one instead.
		head := mistralToolBlock(tools)
		if len(out) > 0 && out[0].Role == llm.RoleSystem {
			head = out[0].Content + "\n\n" + head
			out = out[1:]
		}
		for i := range out {
			if out[i].Role == llm.RoleUser {
				out[i].Content = head + "\n\n" + out[i].Content
				return out, nil
			}
		}
		out = append(out, llm.Message{Role: llm.RoleUser, Content: head})
	}
	return out, nil
}

// pinnedTools is a model's tool block as first written, and the tools the
// model has been told about since (announced in a turn's prompt).
type pinnedTools struct {
	block     []anyllm.Tool
	announced []string
}

// pinToolBlock keeps the tool block of model's prompt as it was at the
// session's first request: the tools offered now that the model has not
// been told about come back as an announcement for this turn's prompt,
// with their names for markAnnounced once the prompt is really sent (a
// turn built only to warm, or to summarise, must not use them up). A lazy
// server's tools or a list_changed arriving mid-session thus append to the
// conversation instead of rewriting its head, which Ollama would
// re-evaluate whole. Tools that went away stay in the block (a call to one
// fails by name).
func (be *backend) pinToolBlock(model string, l promptLayout, offered []anyllm.Tool) ([]anyllm.Tool, string, []string) {
	if be.toolBlocks == nil {
		be.toolBlocks = map[string]*pinnedTools{}
	}
	p, ok := be.toolBlocks[model]
	if !ok {
		be.toolBlocks[model] = &pinnedTools{block: offered}
		return offered, "", nil
	}
	var added []anyllm.Tool
	var names []string
	for _, t := range offered {
		name := t.Function.Name
		if !slices.ContainsFunc(p.block, func(b anyllm.Tool) bool { return b.Function.Name == name }) && !slices.Contains(p.announced, name) {
			added = append(added, t)
			names = append(names, name)
		}
	}
	if len(added) == 0 {
		return p.block, "", nil
	}
	return p.block, announceTools(l, added), names
}

// markAnnounced records that model's prompt now tells it about names.
func (be *backend) markAnnounced(model string, names []string) {
	if p := be.toolBlocks[model]; p != nil {
		p.announced = append(p.announced, names...)
	}
}

// announceTools introduces tools that arrived after the session started,
// in the layout's own words.
func announceTools(l promptLayout, tools []anyllm.Tool) string {
	var parts []string
	for _, t := range tools {
		parts = append(parts, templateToolJSON(t))
	}
	if l == layoutMistralFirst {
		return "You can also call these tools: [" + strings.Join(parts, ", ") + "]"
	}
	return "These functions are now available too (call them in the same format):\n\n" + strings.Join(parts, "\n")
}

// resetToolBlocks forgets the pinned blocks: after the conversation's head
// was rewritten anyway (a summary, /clear, a new system prompt), the next
// request pins the full tool list again.
func (be *backend) resetToolBlocks() { be.toolBlocks = nil }
