package e2e

import "testing"

func TestMain(m *testing.M) {
	Main(m, "e2e: everyday work, caches, the session's network and the release binaries through the built binary, in each kernel mode (minutes on 2 cores; HARVEY_TEST_QUIET=1 hushes this)")
}
