package harvey

import (
	"encoding/json"
	"runtime"

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

// runtimeMem measures bytes allocated between start and grown.
type runtimeMem struct{ before uint64 }

func (m *runtimeMem) start() {
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.before = s.TotalAlloc
}

func (m *runtimeMem) grown() uint64 {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return s.TotalAlloc - m.before
}
