package fakeollama

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// The contract: replies in the order scripted, streamed as NDJSON lines
// ending in a done line; every chat request recorded; none left: 400; a
// model not installed: 404 from /api/show.
func TestScriptedReplies(t *testing.T) {
	f := New(t, "llama3.2:latest")
	f.Script(TextReply("llama3.2", "Hello there"), ToolReply("llama3.2", Call{ID: "c1", Name: "read_file", Args: map[string]any{"path": "a.go"}}))
	chat := func() (*http.Response, []map[string]any) {
		body, _ := json.Marshal(map[string]any{"model": "llama3.2", "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
		resp, err := http.Post(f.URL()+"/api/chat", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var lines []map[string]any
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var m map[string]any
			json.Unmarshal(sc.Bytes(), &m)
			lines = append(lines, m)
		}
		return resp, lines
	}
	_, lines := chat()
	var text strings.Builder
	for _, l := range lines {
		msg, _ := l["message"].(map[string]any)
		text.WriteString(msg["content"].(string))
	}
	if text.String() != "Hello there" || lines[len(lines)-1]["done"] != true {
		t.Errorf("the text reply: %q, %v", text.String(), lines)
	}
	_, lines = chat()
	calls, _ := lines[0]["message"].(map[string]any)["tool_calls"].([]any)
	if len(calls) != 1 || calls[0].(map[string]any)["id"] != "c1" {
		t.Errorf("the tool call: %v", lines)
	}
	if resp, _ := chat(); resp.StatusCode != 400 {
		t.Errorf("no reply left: %d", resp.StatusCode)
	}
	if n := len(f.ChatRequests()); n != 3 || len(MessagesOf(f.ChatRequests()[0])) != 1 {
		t.Errorf("recorded %d requests", n)
	}
	resp, err := http.Post(f.URL()+"/api/show", "application/json", strings.NewReader(`{"model":"mistral"}`))
	if err != nil || resp.StatusCode != 404 {
		t.Errorf("a model not installed: %v %v", resp.StatusCode, err)
	}
}
