package tensor

import (
	"errors"
	"fmt"
	"testing"
)

func TestUnsupported(t *testing.T) {
	cause := errors.New("cause")
	err := fmt.Errorf("pkg: %w", Unsupported("thing %q is not supported: %w", "x", cause))
	if !errors.Is(err, ErrUnsupported) || !errors.Is(err, cause) || errors.Is(err, ErrFormat) {
		t.Errorf("errors.Is: %v", err)
	}
	if got := err.Error(); got != `pkg: thing "x" is not supported: cause` {
		t.Errorf("text %q", got)
	}
}
