package ollama

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An embedding endpoint that answers something other than Ollama's JSON
// (a proxy's page) is named for what it is, not with the decoder's words
// (issue 49).
func TestEmbedderNotJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("OK <html>a captive portal</html>"))
	}))
	defer srv.Close()
	e := &Embedder{base: srv.URL, model: "nomic-embed-text", hc: srv.Client()}
	_, err := e.Embed(t.Context(), []string{"x"})
	if err == nil || strings.Contains(err.Error(), "invalid character") || !strings.Contains(err.Error(), "not Ollama's JSON") || !strings.Contains(err.Error(), "text/html") {
		t.Fatalf("%v", err)
	}
}
