package mcpauth

import (
	"testing"

	"github.com/harvey-agent/harvey/internal/config"
)

// Each flag writes its key; CheckFlags says what a block lacks.
func TestFlags(t *testing.T) {
	set := func(pairs ...string) *config.MCPOAuth {
		o := &config.MCPOAuth{}
		for i := 0; i < len(pairs); i++ {
			if !IsFlag(pairs[i]) {
				t.Fatalf("%s is not a flag", pairs[i])
			}
			if !SetFlag(o, pairs[i], pairs[min(i+1, len(pairs)-1)]) {
				i++
			}
		}
		return o
	}
	o := set("--client-id", "c", "--private-key", "/k.pem", "--client-credentials", "--issuer", "https://as.example", "--workload-token-command", "gcloud x")
	if o.ClientID != "c" || o.PrivateKey != "/k.pem" || !o.ClientCredentials || o.Issuer != "https://as.example" || len(o.WorkloadTokenCommand) != 3 {
		t.Fatalf("%+v", o)
	}
	if err := CheckFlags(o, true); err != nil {
		t.Error(err)
	}
	if IsFlag("--url") || IsFlag("--client") {
		t.Error("not OAuth flags")
	}
	for _, c := range []struct {
		o   *config.MCPOAuth
		url bool
		ok  bool
	}{
		{nil, false, true},
		{set("--issuer", "https://as.example"), true, true},
		{set("--client-id", "c"), false, false},
		{set("--client-secret", "s"), true, false},
		{set("--client-id", "c", "--idp-client-id", "h"), true, false},
		{set("--client-id", "c", "--idp-issuer", "https://idp", "--idp-client-id", "h"), true, true},
		{set("--client-metadata-url", "https://h.example/c.json", "--issuer", "https://as.example"), true, true},
		{set("--client-metadata-url", "https://h.example/c.json", "--client-id", "c"), true, false},
		{set("--client-metadata-url", "http://h.example/c.json"), true, false},
	} {
		if err := CheckFlags(c.o, c.url); (err == nil) != c.ok {
			t.Errorf("%+v (url %v): %v", c.o, c.url, err)
		}
	}
}
