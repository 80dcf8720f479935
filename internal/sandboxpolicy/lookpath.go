package sandboxpolicy

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// LookPath finds a program on PATH, never in the workspace through a relative
// PATH entry (exec.ErrDot is an error here).
func LookPath(name string) (string, error) {
	if strings.ContainsRune(name, '/') {
		return name, nil // a path: ./script in the workspace is the user's code
	}
	p, err := exec.LookPath(name)
	if err != nil {
		if errors.Is(err, exec.ErrDot) {
			return "", fmt.Errorf("%s: found only through a relative PATH entry; refused", name)
		}
		return "", fmt.Errorf("%s: command not found", name)
	}
	return p, nil
}
