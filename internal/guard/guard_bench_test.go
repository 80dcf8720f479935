package guard

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkCommandCheck is the check around one command (Command, then
// Check), journal included, in a new repository and in one of 20,000
// tracked files (an index of about 1.6 MB), as commands back to back
// meet it: git's files unchanged since the last command.
func BenchmarkCommandCheck(b *testing.B) {
	racy := racyWindow
	racyWindow = 0 // the repository was made a moment ago; a user's was not
	defer func() { racyWindow = racy }()
	for _, files := range []int{0, 20000} {
		b.Run(fmt.Sprintf("%dtracked", files), func(b *testing.B) {
			dir := b.TempDir()
			b.Setenv("XDG_DATA_HOME", b.TempDir())
			for i := 0; i < files; i++ {
				p := filepath.Join(dir, "src", fmt.Sprint(i/100), fmt.Sprintf("f%d.txt", i))
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.WriteFile(p, []byte("x\n"), 0o644)
			}
			c := exec.Command("sh", "-c", "git init -q && git add -A")
			c.Dir = dir
			if out, err := c.CombinedOutput(); err != nil {
				b.Fatal(err, string(out))
			}
			Command(dir, "warm").Check() // the session's tracker
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				Command(dir, "true").Check()
			}
		})
	}
}
