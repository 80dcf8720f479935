package fakeopenai

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A scripted reply streams as SSE data lines ending with [DONE]; the
// request is recorded; with no reply left the answer is a 400 a retry
// cannot fix; a scripted status is answered as is.
func TestScriptedChat(t *testing.T) {
	f := New(t)
	f.Script(Text("hello world"), Reply{Status: 503, Body: `{"error":{"message":"busy"}}`})
	post := func() (*http.Response, string) {
		resp, err := http.Post(f.URL()+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	resp, body := post()
	if resp.Header.Get("Content-Type") != "text/event-stream" || !strings.HasSuffix(body, "data: [DONE]\n\n") || strings.Count(body, `"content":`) != 3 {
		t.Errorf("the text reply: %s %q", resp.Header.Get("Content-Type"), body)
	}
	if resp, _ := post(); resp.StatusCode != 503 {
		t.Errorf("the scripted status: %d", resp.StatusCode)
	}
	if resp, _ := post(); resp.StatusCode != 400 {
		t.Errorf("no reply left: %d", resp.StatusCode)
	}
	if n := len(f.ChatRequests()); n != 3 {
		t.Errorf("%d requests recorded", n)
	}
}

// Embeddings come back for every input, by index, as floats or base64.
func TestEmbeddings(t *testing.T) {
	f := New(t)
	for _, format := range []string{"float", "base64"} {
		resp, err := http.Post(f.URL()+"/v1/embeddings", "application/json", strings.NewReader(`{"model":"e","input":["a b","c"],"encoding_format":"`+format+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Data []struct {
				Index     int `json:"index"`
				Embedding any `json:"embedding"`
			} `json:"data"`
		}
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if len(out.Data) != 2 {
			t.Fatalf("%s: %d embeddings", format, len(out.Data))
		}
		if _, isString := out.Data[0].Embedding.(string); isString != (format == "base64") {
			t.Errorf("%s: embedding %T", format, out.Data[0].Embedding)
		}
	}
}
