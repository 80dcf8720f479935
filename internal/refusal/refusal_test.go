package refusal

import (
	"errors"
	"fmt"
	"testing"
)

func TestRefusalIsItsKind(t *testing.T) {
	err := Errorf("refused: %s", "agents/ is Harvey's")
	if !errors.Is(err, ErrRefused) || err.Error() != "refused: agents/ is Harvey's" {
		t.Fatalf("%v", err)
	}
	if wrapped := fmt.Errorf("git: %w", err); !errors.Is(wrapped, ErrRefused) {
		t.Fatal("a wrapped refusal is not one")
	}
	if errors.Is(errors.New("refused"), ErrRefused) {
		t.Fatal("any error that says refused is one")
	}
}
