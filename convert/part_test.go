package convert

import (
	"strings"
	"testing"
)

// TestParsePart: K/N, and auto/N from a Kubernetes Indexed Job's
// JOB_COMPLETION_INDEX (from 0) or a Slurm array's SLURM_ARRAY_TASK_ID
// relative to SLURM_ARRAY_TASK_MIN.
func TestParsePart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    string
		env  map[string]string
		want Part
		err  string
	}{
		{s: "1/1", want: Part{1, 1}},
		{s: "3/7", want: Part{3, 7}},
		{s: "auto/4", env: map[string]string{"JOB_COMPLETION_INDEX": "0"}, want: Part{1, 4}},
		{s: "auto/4", env: map[string]string{"JOB_COMPLETION_INDEX": "3"}, want: Part{4, 4}},
		{s: "auto/4", env: map[string]string{"JOB_COMPLETION_INDEX": "4"}, err: "part 5 is not between 1 and 4"},
		// Kubernetes wins when both are set (a Slurm job that starts pods).
		{s: "AUTO/4", env: map[string]string{"JOB_COMPLETION_INDEX": "1", "SLURM_ARRAY_TASK_ID": "9", "SLURM_ARRAY_TASK_MIN": "0"}, want: Part{2, 4}},
		{s: "auto/3", env: map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "0"}, want: Part{1, 3}},
		{s: "auto/3", env: map[string]string{"SLURM_ARRAY_TASK_ID": "12", "SLURM_ARRAY_TASK_MIN": "10"}, want: Part{3, 3}},
		{s: "auto/3", env: map[string]string{"SLURM_ARRAY_TASK_ID": "5"}, err: "SLURM_ARRAY_TASK_MIN"},
		{s: "auto/3", env: map[string]string{"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "7"}, err: "below"},
		{s: "auto/3", env: map[string]string{"JOB_COMPLETION_INDEX": "x"}, err: "JOB_COMPLETION_INDEX"},
		{s: "auto/3", err: "neither is set"},
		{s: "0/3", err: "not between"},
		{s: "4/3", err: "not between"},
		{s: "3", err: "want K/N"},
		{s: "1/0", err: "want K/N"},
		{s: "a/2", err: "want K/N"},
	} {
		got, err := ParsePart(tc.s, func(k string) string { return tc.env[k] })
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q %v: error %v, want one saying %q", tc.s, tc.env, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q %v: %v, %v; want %v", tc.s, tc.env, got, err, tc.want)
		}
	}
}

// TestPartRange: the N ranges cover the shards once, in order, and differ
// in length by at most one.
func TestPartRange(t *testing.T) {
	t.Parallel()
	for _, shards := range []int{1, 2, 7, 10, 64} {
		for n := 1; n <= 9; n++ {
			next, lo, hi := 0, shards, 0
			for k := 1; k <= n; k++ {
				first, end := Part{k, n}.Range(shards)
				if first != next || end < first {
					t.Fatalf("%d shards, part %d/%d: [%d, %d) after %d", shards, k, n, first, end, next)
				}
				next = end
				lo, hi = min(lo, end-first), max(hi, end-first)
			}
			if next != shards || hi-lo > 1 {
				t.Errorf("%d shards in %d parts: end %d, lengths %d..%d", shards, n, next, lo, hi)
			}
		}
	}
	if f, e := (Part{}).Range(5); f != 0 || e != 5 {
		t.Errorf("whole: [%d, %d)", f, e)
	}
}
