package mcpauth

import "testing"

func TestCheckClientMetadataURL(t *testing.T) {
	for u, ok := range map[string]bool{
		"https://conformance-test.local/client-metadata.json": true,
		"https://example.com/oauth/harvey?v=2":                true,
		"http://example.com/harvey.json":                      false,
		"https://example.com":                                 false,
		"https://example.com/":                                false,
		"https://example.com/harvey.json#x":                   false,
		"https://me@example.com/harvey.json":                  false,
		"/harvey.json":                                        false,
		"":                                                    false,
	} {
		if err := CheckClientMetadataURL(u); (err == nil) != ok {
			t.Errorf("%q: %v", u, err)
		}
	}
}
