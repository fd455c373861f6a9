package convert

import (
	"fmt"
	"strconv"
	"strings"
)

// Part is --part K/N: the K-th (from 1) of N contiguous ranges of a split
// set's shards, so that N processes (a Kubernetes Indexed Job, a Slurm job
// array) each write one range. The zero Part is the whole set.
type Part struct {
	K, N int
}

// Whole reports whether p is the whole set.
func (p Part) Whole() bool { return p.N == 0 }

// String is "K/N", or "" for the whole set.
func (p Part) String() string {
	if p.Whole() {
		return ""
	}
	return fmt.Sprintf("%d/%d", p.K, p.N)
}

// Range returns the shards [first, end) (from 0) of a set of n that part
// K of N writes: shard i belongs to the part whose range holds it, the
// ranges cut at ⌊k·n/N⌋, so they differ in length by at most one and a part
// may be empty when N > n.
func (p Part) Range(n int) (first, end int) {
	if p.Whole() {
		return 0, n
	}
	return (p.K - 1) * n / p.N, p.K * n / p.N
}

// The variables --part auto/N reads the part from.
const (
	// EnvJobCompletionIndex is set by a Kubernetes Indexed Job, from 0.
	EnvJobCompletionIndex = "JOB_COMPLETION_INDEX"
	// EnvSlurmArrayTaskID and EnvSlurmArrayTaskMin are set by a Slurm job
	// array (sbatch --array MIN-MAX): the task's index and the smallest.
	EnvSlurmArrayTaskID  = "SLURM_ARRAY_TASK_ID"
	EnvSlurmArrayTaskMin = "SLURM_ARRAY_TASK_MIN"
)

// ParsePart parses --part K/N (K from 1 to N), or auto/N, where K is
// JOB_COMPLETION_INDEX+1 (a Kubernetes Indexed Job's, from 0) or else
// SLURM_ARRAY_TASK_ID−SLURM_ARRAY_TASK_MIN+1 (a Slurm array's), read
// through getenv.
func ParsePart(s string, getenv func(string) string) (Part, error) {
	k, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	nn, err := strconv.Atoi(n)
	if !ok || err != nil || nn < 1 || nn > 1<<16 {
		return Part{}, fmt.Errorf("convert: --part %q: want K/N with 1 ≤ K ≤ N, or auto/N", s)
	}
	var kk int
	if strings.EqualFold(k, "auto") {
		if kk, err = autoPart(getenv); err != nil {
			return Part{}, fmt.Errorf("convert: --part %s: %w", s, err)
		}
	} else if kk, err = strconv.Atoi(k); err != nil {
		return Part{}, fmt.Errorf("convert: --part %q: want K/N with 1 ≤ K ≤ N, or auto/N", s)
	}
	if kk < 1 || kk > nn {
		return Part{}, fmt.Errorf("convert: --part %s: part %d is not between 1 and %d", s, kk, nn)
	}
	return Part{K: kk, N: nn}, nil
}

// autoPart is the part number (from 1) the job runner gives this process.
func autoPart(getenv func(string) string) (int, error) {
	if v := getenv(EnvJobCompletionIndex); v != "" {
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 {
			return 0, fmt.Errorf("%s=%q is not an index from 0", EnvJobCompletionIndex, v)
		}
		return i + 1, nil
	}
	if v := getenv(EnvSlurmArrayTaskID); v != "" {
		id, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("%s=%q is not a number", EnvSlurmArrayTaskID, v)
		}
		minV := getenv(EnvSlurmArrayTaskMin)
		lo, err := strconv.Atoi(minV)
		if err != nil {
			return 0, fmt.Errorf("%s=%s but %s=%q is not a number", EnvSlurmArrayTaskID, v, EnvSlurmArrayTaskMin, minV)
		}
		if id < lo {
			return 0, fmt.Errorf("%s=%d is below %s=%d", EnvSlurmArrayTaskID, id, EnvSlurmArrayTaskMin, lo)
		}
		return id - lo + 1, nil
	}
	return 0, fmt.Errorf("auto needs %s (a Kubernetes Indexed Job) or %s and %s (a Slurm job array), and neither is set",
		EnvJobCompletionIndex, EnvSlurmArrayTaskID, EnvSlurmArrayTaskMin)
}
