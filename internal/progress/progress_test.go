package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestLineEndedBeforeMessage: a message written while a progress line is
// drawn starts on a line of its own, and Finish does not add an empty line
// after it.
func TestLineEndedBeforeMessage(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	l := NewLine(&b)
	m := New(l, "quantize", 40, Items, "tensors")
	m.Add(10) // the first count is drawn at once
	l.Write([]byte("tfconv: warning: something\n"))
	m.Finish()
	l.Write([]byte("done\n"))
	got := b.String()
	lines := strings.Split(got, "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "\rquantize: 10/40 tensors") || lines[1] != "tfconv: warning: something" ||
		!strings.HasPrefix(lines[2], "\rquantize: 10/40 tensors") || lines[3] != "done" {
		t.Errorf("stream:\n%q", got)
	}
	if !strings.Contains(lines[0], "ETA ") || !strings.Contains(lines[2], " in ") {
		t.Errorf("no ETA while running or no total time at the end:\n%q", got)
	}
}

func TestETA(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		done, total int64
		spent       time.Duration
		finished    bool
		want        string
	}{
		{0, 100, time.Second, false, "ETA ?"},
		{25, 100, 10 * time.Second, false, "ETA 30s"},
		{1 << 30, 4 << 30, 71 * time.Second, false, "ETA 3m33s"},
		{100, 100, 12340 * time.Millisecond, false, "in 12.3s"},
		{7, 0, time.Second, true, "in 1s"},
	} {
		if got := eta(c.done, c.total, c.spent, c.finished); got != c.want {
			t.Errorf("eta(%d, %d, %v, %v) = %q, want %q", c.done, c.total, c.spent, c.finished, got, c.want)
		}
	}
}
