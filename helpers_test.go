package harvey

import (
	"encoding/json"

	anyllm "github.com/mozilla-ai/any-llm-go"
)

type anyllmToolCall = anyllm.ToolCall

func fc(name, args string) anyllm.FunctionCall {
	return anyllm.FunctionCall{Name: name, Arguments: args}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
