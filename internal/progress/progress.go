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
	source       func() int64 // bytes fetched over the network, or nil
}

// Source makes each line also show the bytes fetched so far over the
// network (a remote checkpoint's) and their rate.
func (m *Meter) Source(fetched func() int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.source = fetched
	m.mu.Unlock()
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
	var line string
	switch m.unit {
	case Bytes:
		line = fmt.Sprintf("\r%s: %s / %s (%5.1f%%) %s/s", m.label, mib(m.done), mib(m.total), pct, mib(int64(rate)))
	default:
		line = fmt.Sprintf("\r%s: %d/%d %s (%5.1f%%) %.1f/s", m.label, m.done, m.total, m.what, pct, rate)
	}
	line += " " + eta(m.done, m.total, now.Sub(m.start), m.finished)
	if m.source != nil {
		n := m.source()
		r := 0.0
		if secs > 0 {
			r = float64(n) / secs
		}
		line += fmt.Sprintf(", fetched %s (%s/s)", mib(n), mib(int64(r)))
	}
	line += "   "
	if l, ok := m.w.(*Line); ok {
		l.progress(line)
		return
	}
	io.WriteString(m.w, line)
}

// eta says how long the rest will take at the rate so far ("ETA 3m12s"),
// or, once finished, how long it all took ("in 3m12s"); "ETA ?" until a
// first part is done.
func eta(done, total int64, spent time.Duration, finished bool) string {
	if finished || (total > 0 && done >= total) {
		return "in " + spent.Round(time.Second/10).String()
	}
	if done <= 0 || total <= 0 {
		return "ETA ?"
	}
	left := time.Duration(float64(spent) * float64(total-done) / float64(done))
	return "ETA " + left.Round(time.Second).String()
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
	if l, ok := m.w.(*Line); ok {
		l.end()
		return
	}
	fmt.Fprintln(m.w)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// Line is the stream progress lines and messages share (a command's
// stderr): a message written to it while a meter's line is open first ends
// that line, so that "tfconv: warning: …" never lands after a half-drawn
// "quantize: 12/40 tensors". Meters that write to a Line mark their line
// open; Finish ends it. It is safe for concurrent use.
type Line struct {
	mu   sync.Mutex
	w    io.Writer
	open bool
}

// NewLine wraps w.
func NewLine(w io.Writer) *Line { return &Line{w: w} }

// Write ends an open progress line with a newline, then writes b.
func (l *Line) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endLocked()
	return l.w.Write(b)
}

// Fd is the file descriptor of the wrapped writer when it is a file (so
// that terminal checks see through the Line), else an invalid one.
func (l *Line) Fd() uintptr {
	if f, ok := l.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}

func (l *Line) progress(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	io.WriteString(l.w, s)
	l.open = true
}

func (l *Line) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endLocked()
}

func (l *Line) endLocked() {
	if l.open {
		l.open = false
		io.WriteString(l.w, "\n")
	}
}
