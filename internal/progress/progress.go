package progress

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Every keeps the line readable and the cost of printing nil.
const Every = 200 * time.Millisecond

// Unit is what a Meter counts.
type Unit uint8

// The units.
const (
	Items Unit = iota // shown as counts ("12/40 chunks")
	Bytes             // shown in MiB
)

// Meter is one progress line. A nil *Meter is silent, so callers need not
// check whether progress was asked for. It is safe for concurrent use.
type Meter struct {
	mu           sync.Mutex
	w            io.Writer
	label, what  string
	unit         Unit
	total, done  int64
	start, shown time.Time
	finished     bool
}

// New returns a meter writing to w, or nil (silent) when w is nil. what
// names the counted items ("chunks", "tensors"; ignored for Bytes).
func New(w io.Writer, label string, total int64, unit Unit, what string) *Meter {
	if w == nil {
		return nil
	}
	now := time.Now()
	return &Meter{w: w, label: label, what: what, unit: unit, total: total, start: now}
}

// Add counts n more.
func (m *Meter) Add(n int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done += n
	m.maybePrint()
}

// Set sets the count done (and total, when > 0).
func (m *Meter) Set(done, total int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done = done
	if total > 0 {
		m.total = total
	}
	m.maybePrint()
}

// Write counts len(b) bytes; it never fails, so it can sit in an
// io.MultiWriter.
func (m *Meter) Write(b []byte) (int, error) {
	m.Add(int64(len(b)))
	return len(b), nil
}

func (m *Meter) maybePrint() {
	if now := time.Now(); now.Sub(m.shown) >= Every {
		m.shown = now
		m.print(now)
	}
}

func (m *Meter) print(now time.Time) {
	secs := now.Sub(m.start).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(m.done) / secs
	}
	pct := 100.0
	if m.total > 0 {
		pct = 100 * float64(m.done) / float64(m.total)
	}
	switch m.unit {
	case Bytes:
		fmt.Fprintf(m.w, "\r%s: %s / %s (%5.1f%%) %s/s   ", m.label, mib(m.done), mib(m.total), pct, mib(int64(rate)))
	default:
		fmt.Fprintf(m.w, "\r%s: %d/%d %s (%5.1f%%) %.1f/s   ", m.label, m.done, m.total, m.what, pct, rate)
	}
}

// Finish prints the last state and ends the line (once).
func (m *Meter) Finish() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.finished {
		return
	}
	m.finished = true
	m.print(time.Now())
	fmt.Fprintln(m.w)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
