package convert

import (
	"fmt"
	"io"
	"time"
)

// progress prints bytes written, the total and the rate on one line that
// it rewrites, at most every progressEvery. A nil *progress is silent.
type progress struct {
	w            io.Writer
	total, done  int64
	start, shown time.Time
}

// progressEvery keeps the line readable and the cost of printing nil.
const progressEvery = 200 * time.Millisecond

func newProgress(w io.Writer, total int64) *progress {
	if w == nil {
		return nil
	}
	now := time.Now()
	return &progress{w: w, total: total, start: now}
}

// Write counts p; it never fails, so it can sit in an io.MultiWriter.
func (p *progress) Write(b []byte) (int, error) {
	if p == nil {
		return len(b), nil
	}
	p.done += int64(len(b))
	if now := time.Now(); now.Sub(p.shown) >= progressEvery {
		p.shown = now
		p.print(now)
	}
	return len(b), nil
}

func (p *progress) print(now time.Time) {
	secs := now.Sub(p.start).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(p.done) / secs
	}
	pct := 100.0
	if p.total > 0 {
		pct = 100 * float64(p.done) / float64(p.total)
	}
	fmt.Fprintf(p.w, "\rconvert: %s / %s (%5.1f%%) %s/s   ", mib(p.done), mib(p.total), pct, mib(int64(rate)))
}

// finish prints the last state and ends the line.
func (p *progress) finish() {
	if p == nil {
		return
	}
	p.print(time.Now())
	fmt.Fprintln(p.w)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
