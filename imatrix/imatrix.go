package imatrix

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Entry is one weight's statistics.
type Entry struct {
	Name string // the weight's GGUF name
	// Sums are the sums of squared input activations, [mats][cols]: one
	// matrix for a plain weight, one per expert for a stacked one.
	Sums []float32
	// Counts are the rows (tokens) each matrix saw, [mats].
	Counts []int64
}

// Cols is the weight's row length (its input width).
func (e *Entry) Cols() int {
	if len(e.Counts) == 0 {
		return 0
	}
	return len(e.Sums) / len(e.Counts)
}

// Matrix is an importance matrix: its entries sorted by name, and where it
// came from.
type Matrix struct {
	Entries []Entry
	// Datasets are the calibration texts' names as given.
	Datasets []string
	// ChunkCount is the chunks evaluated, ChunkSize their length in tokens
	// (0: not known, a legacy file).
	ChunkCount, ChunkSize int
	// Legacy marks a matrix read from a .dat: Counts then hold each entry's
	// ncall and Sums the stored values (means × ncall).
	Legacy bool
}

// Entry returns the entry named name.
func (m *Matrix) Entry(name string) (*Entry, bool) {
	i := sort.Search(len(m.Entries), func(i int) bool { return m.Entries[i].Name >= name })
	if i < len(m.Entries) && m.Entries[i].Name == name {
		return &m.Entries[i], true
	}
	return nil, false
}

// Importance returns, per weight name, what llama-quantize weighs the
// quantization error of that weight's columns with: sums/count per matrix
// (1 for a matrix that saw no rows), or, for a legacy file, value/ncall
// (the value itself when ncall ≤ 0), in float32 as llama-quantize divides.
func (m *Matrix) Importance() map[string][]float32 {
	out := make(map[string][]float32, len(m.Entries))
	for _, e := range m.Entries {
		v := make([]float32, len(e.Sums))
		if m.Legacy {
			n := float32(e.Counts[0])
			for i, s := range e.Sums {
				if e.Counts[0] > 0 {
					s /= n
				}
				v[i] = s
			}
		} else {
			cols := e.Cols()
			for j, c := range e.Counts {
				for i := j * cols; i < (j+1)*cols; i++ {
					if c > 0 {
						v[i] = e.Sums[i] / float32(c)
					} else {
						v[i] = 1
					}
				}
			}
		}
		out[e.Name] = v
	}
	return out
}

// Select keeps the importance of the weights whose names contain one of
// include (all when include is empty) and none of exclude, as
// llama-quantize's --include-weights and --exclude-weights do.
func Select(imp map[string][]float32, include, exclude []string) (map[string][]float32, error) {
	if len(include) > 0 && len(exclude) > 0 {
		return nil, errors.New("imatrix: --include-weights and --exclude-weights cannot be used together")
	}
	out := make(map[string][]float32, len(imp))
	for name, v := range imp {
		keep := len(include) == 0
		for _, s := range include {
			keep = keep || strings.Contains(name, s)
		}
		for _, s := range exclude {
			keep = keep && !strings.Contains(name, s)
		}
		if keep {
			out[name] = v
		}
	}
	return out, nil
}

// Collector accumulates a Matrix from model.MatMul reports (Observe).
type Collector struct {
	// ProcessOutput also collects output.weight (llama-imatrix's
	// --process-output).
	ProcessOutput bool
	stats         map[string]*Entry
}

// minRows is llama-imatrix's threshold: a plain matrix is collected only in
// evaluations of at least this many tokens.
const minRows = 16

// Add accumulates the input x [rows][cols] of weight (expert e of n when
// n > 0). It fails when the same weight comes with another shape.
func (c *Collector) Add(weight string, e, n int, x []float32, rows, cols int) error {
	if !strings.HasPrefix(weight, "blk.") && !(c.ProcessOutput && weight == "output.weight") {
		return nil
	}
	if n == 0 && rows < minRows {
		return nil
	}
	mats := max(n, 1)
	if c.stats == nil {
		c.stats = map[string]*Entry{}
	}
	st := c.stats[weight]
	if st == nil {
		st = &Entry{Name: weight, Sums: make([]float32, mats*cols), Counts: make([]int64, mats)}
		c.stats[weight] = st
	}
	if len(st.Counts) != mats || st.Cols() != cols || e < 0 || e >= mats {
		return fmt.Errorf("imatrix: %s: input of %d×%d columns, expert %d, after %d×%d before", weight, mats, cols, e, len(st.Counts), st.Cols())
	}
	s := st.Sums[e*cols : (e+1)*cols]
	for r := 0; r < rows; r++ {
		for j, v := range x[r*cols : (r+1)*cols] {
			s[j] += v * v
		}
	}
	st.Counts[e] += int64(rows)
	for _, v := range s {
		if math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) {
			return fmt.Errorf("imatrix: %s: the sum of squared activations is %v", weight, v)
		}
	}
	return nil
}

// Matrix returns what was collected, sorted by name.
func (c *Collector) Matrix() *Matrix {
	m := &Matrix{}
	for _, e := range c.stats {
		m.Entries = append(m.Entries, Entry{Name: e.Name, Sums: append([]float32(nil), e.Sums...), Counts: append([]int64(nil), e.Counts...)})
	}
	sort.Slice(m.Entries, func(i, j int) bool { return m.Entries[i].Name < m.Entries[j].Name })
	return m
}
