package sandboxpolicy

import (
	"slices"
	"testing"
)

// Only loopback addresses with a port are the user's services on this
// machine; other entries are hosts for the proxy's HTTP clients.
func TestLocalServices(t *testing.T) {
	got := LocalServices([]string{"127.0.0.1:5432", "localhost:6379", "[::1]:5433", "db.internal:5432", "pypi.example.com",
		"*.example.com", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:99999", "10.0.0.5:5432", "LOCALHOST:5432", "127.0.0.2:3000", "[::ffff:127.0.0.1]:80"})
	want := []string{"127.0.0.1:5432", "127.0.0.1:6379", "[::1]:5433", "127.0.0.2:3000", "127.0.0.1:80"}
	if !slices.Equal(got, want) {
		t.Errorf("LocalServices = %v, want %v", got, want)
	}
}
