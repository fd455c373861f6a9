//go:build !noasm

package kernels

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// TestARM64Sets checks that an arm64 build without noasm runs the NEON
// kernels, with the SDOT set first exactly when the CPU has the
// dot-product extension, so that the suite cannot silently test plain Go
// only.
func TestARM64Sets(t *testing.T) {
	var names []string
	for _, s := range simdSets {
		names = append(names, s.name)
	}
	want := []string{"neon"}
	if cpu.ARM64.HasASIMDDP {
		want = []string{"neon-dotprod", "neon"}
	}
	if len(names) != len(want) || names[0] != want[0] || names[len(names)-1] != "neon" {
		t.Fatalf("simdSets = %v, want %v (HasASIMDDP %v)", names, want, cpu.ARM64.HasASIMDDP)
	}
	if got := Implementation(); got != want[0] {
		t.Fatalf("Implementation() = %q, want %q", got, want[0])
	}
	t.Logf("sets %v", names)
}
