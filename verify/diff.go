package verify

import (
	"bytes"
	"io"

	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"github.com/tfconv/tfconv/internal/progress"
	"math"
	"sort"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// CanonicalTensor is one tensor of a checkpoint seen under its canonical
// (Hugging Face) name and layout.
type CanonicalTensor struct {
	Name   string             // canonical name
	Tensor *checkpoint.Tensor // where the data is
	Shape  tensor.Shape       // canonical shape, row-major
	// Transform rearranges the decoded elements from the file's layout to
	// the canonical one (dst and src have the same length); nil = as is.
	Transform func(dst, src []float32)
	// TiedTo, when set, marks a copy of that tensor (a tied head written
	// twice): reported as tied, not compared.
	TiedTo string
}

// Canonicalizer lists a checkpoint's tensors under canonical names, in a
// stable order. Tensors it deliberately leaves out (buffers a format does
// not keep) are simply absent.
type Canonicalizer func(c *checkpoint.Checkpoint) ([]CanonicalTensor, error)

// IdentityNames is the Canonicalizer that keeps every tensor's own name and
// layout: right for two checkpoints that use the same naming (safetensors
// and its native repack, f32 and f16 of one HF model, two GGUF files).
// The per-row scales of an int8 weight are part of that weight (decoded
// with it), not a tensor of their own.
func IdentityNames(c *checkpoint.Checkpoint) ([]CanonicalTensor, error) {
	out := make([]CanonicalTensor, 0, len(c.Tensors))
	for _, t := range weightTensors(c) {
		out = append(out, CanonicalTensor{Name: t.Name, Tensor: t, Shape: t.Shape})
	}
	return out, nil
}

// weightTensors lists c's tensors without the scale companions of its int8
// weights.
func weightTensors(c *checkpoint.Checkpoint) []*checkpoint.Tensor {
	scale := map[string]bool{}
	for _, t := range c.Tensors {
		if s, ok := c.Int8Scale(t); ok && t.DType == tensor.I8 {
			scale[s.Name] = true
		}
	}
	out := make([]*checkpoint.Tensor, 0, len(c.Tensors))
	for _, t := range c.Tensors {
		if !scale[t.Name] {
			out = append(out, t)
		}
	}
	return out
}

// Status of one tensor in a diff.
const (
	StatusIdentical = "identical" // decoded values bit-identical
	StatusDifferent = "different" // same shape, values differ
	StatusReshaped  = "reshaped"  // same name, different canonical shape
	StatusMissing   = "missing"   // in A only
	StatusExtra     = "extra"     // in B only
	StatusTied      = "tied"      // a copy of another tensor of its file (a tied head written twice); not compared
)

// TensorDiff is the comparison of one tensor.
type TensorDiff struct {
	Name   string       `json:"name"` // canonical name
	NameA  string       `json:"name_a,omitempty"`
	NameB  string       `json:"name_b,omitempty"`
	Status string       `json:"status"`
	DTypeA string       `json:"dtype_a,omitempty"`
	DTypeB string       `json:"dtype_b,omitempty"`
	ShapeA tensor.Shape `json:"shape_a,omitempty"`
	ShapeB tensor.Shape `json:"shape_b,omitempty"`
	// Retyped is set when both exist with different dtypes.
	Retyped bool `json:"retyped,omitempty"`
	// MaxAbs is max |b − a|; RelErr is ‖b − a‖₂ / ‖a‖₂.
	MaxAbs float64 `json:"max_abs"`
	RelErr float64 `json:"rel_err"`
	// SQNR is 10·log10(Σa² / Σ(b − a)²) in dB; null when it is not finite
	// (identical values, or an all-zero A).
	SQNR *float64 `json:"sqnr_db"`
	// HashA and HashB are SHA-256 of the decoded values as float32
	// little-endian in the canonical layout: equal hashes mean the same
	// numbers whatever the file formats and dtypes.
	HashA string `json:"sha256_a,omitempty"`
	HashB string `json:"sha256_b,omitempty"`
	// TiedTo names the tensor a tied copy repeats (status tied).
	TiedTo string `json:"tied_to,omitempty"`
}

// DiffReport is the comparison of two checkpoints' weights.
type DiffReport struct {
	A         string       `json:"a"`
	B         string       `json:"b"`
	Tensors   []TensorDiff `json:"tensors"`
	Matched   int          `json:"matched"`
	Identical int          `json:"identical"`
	Different int          `json:"different"`
	Reshaped  int          `json:"reshaped"`
	Retyped   int          `json:"retyped"`
	Missing   int          `json:"missing"`
	Extra     int          `json:"extra"`
	Tied      int          `json:"tied"`
	// ArchA and ArchB are the architectures (GGUF names; "" when unknown).
	// DifferentArchitectures is set when both are known and differ: the
	// tensors are then not compared (Tensors is empty).
	ArchA                  string `json:"arch_a"`
	ArchB                  string `json:"arch_b"`
	DifferentArchitectures bool   `json:"different_architectures"`
}

// Same reports whether every tensor is matched and identical.
func (r *DiffReport) Same() bool {
	return !r.DifferentArchitectures && r.Matched == r.Identical && r.Missing == 0 && r.Extra == 0 && r.Reshaped == 0
}

// Diff compares the weights of a and b tensor by tensor, matched by the
// canonical names ca and cb give (IdentityNames when nil). Memory holds one
// pair of decoded tensors at a time.
func Diff(a, b *checkpoint.Checkpoint, ca, cb Canonicalizer) (*DiffReport, error) {
	return DiffProgress(a, b, ca, cb, nil)
}

// DiffProgress is Diff with a progress line (tensors compared) on w when
// w is not nil.
func DiffProgress(a, b *checkpoint.Checkpoint, ca, cb Canonicalizer, w io.Writer) (*DiffReport, error) {
	if ca == nil {
		ca = IdentityNames
	}
	if cb == nil {
		cb = IdentityNames
	}
	ta, err := ca(a)
	if err != nil {
		return nil, err
	}
	tb, err := cb(b)
	if err != nil {
		return nil, err
	}
	rep := &DiffReport{A: a.Path, B: b.Path, ArchA: archOf(a), ArchB: archOf(b)}
	if rep.ArchA != "" && rep.ArchB != "" && rep.ArchA != rep.ArchB {
		rep.DifferentArchitectures = true
		return rep, nil
	}
	var tiedA, tiedB []CanonicalTensor
	ta, tiedA = splitTied(ta)
	tb, tiedB = splitTied(tb)
	byB := make(map[string]CanonicalTensor, len(tb))
	for _, t := range tb {
		if _, dup := byB[t.Name]; dup {
			return nil, fmt.Errorf("verify: %s: two tensors map to %q", b.Path, t.Name)
		}
		byB[t.Name] = t
	}
	seen := make(map[string]bool, len(ta))
	// The bytes of both tensors of each pair, which the comparison reads.
	pairBytes := func(x CanonicalTensor) int64 {
		n := x.Tensor.Size
		if y, ok := byB[x.Name]; ok {
			n += y.Tensor.Size
		}
		return n
	}
	var total int64
	for _, x := range ta {
		total += pairBytes(x)
	}
	meter := progress.New(w, "diff", total, progress.Bytes, "")
	defer meter.Finish()
	for _, x := range ta {
		meter.Add(pairBytes(x))
		if seen[x.Name] {
			return nil, fmt.Errorf("verify: %s: two tensors map to %q", a.Path, x.Name)
		}
		seen[x.Name] = true
		d := TensorDiff{Name: x.Name, NameA: x.Tensor.Name, DTypeA: x.Tensor.DType.String(), ShapeA: x.Shape}
		y, ok := byB[x.Name]
		if !ok {
			d.Status = StatusMissing
			rep.Missing++
			rep.Tensors = append(rep.Tensors, d)
			continue
		}
		d.NameB, d.DTypeB, d.ShapeB = y.Tensor.Name, y.Tensor.DType.String(), y.Shape
		d.Retyped = x.Tensor.DType != y.Tensor.DType
		if d.Retyped {
			rep.Retyped++
		}
		if !x.Shape.Equal(y.Shape) {
			d.Status = StatusReshaped
			rep.Reshaped++
			rep.Tensors = append(rep.Tensors, d)
			continue
		}
		rep.Matched++
		if x.Tensor.DType.Integer() && x.Tensor.DType == y.Tensor.DType && x.Transform == nil && y.Transform == nil {
			// Integer tensors (gpt-oss's MXFP4 blocks and scales in
			// Hugging Face's form, buffers) are their bytes.
			if err := compareIntegers(&d, x.Tensor, y.Tensor); err != nil {
				return nil, err
			}
		} else if err := compareDecoded(&d, a, b, x, y); err != nil {
			return nil, err
		}
		if d.Status == StatusIdentical {
			rep.Identical++
		} else {
			rep.Different++
		}
		rep.Tensors = append(rep.Tensors, d)
	}
	var extra []string
	for name := range byB {
		if !seen[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		y := byB[name]
		rep.Extra++
		rep.Tensors = append(rep.Tensors, TensorDiff{Name: name, NameB: y.Tensor.Name, Status: StatusExtra,
			DTypeB: y.Tensor.DType.String(), ShapeB: y.Shape})
	}
	for _, x := range tiedA {
		rep.Tied++
		rep.Tensors = append(rep.Tensors, TensorDiff{Name: x.Name, NameA: x.Tensor.Name, Status: StatusTied,
			DTypeA: x.Tensor.DType.String(), ShapeA: x.Shape, TiedTo: x.TiedTo})
	}
	for _, y := range tiedB {
		rep.Tied++
		rep.Tensors = append(rep.Tensors, TensorDiff{Name: y.Name, NameB: y.Tensor.Name, Status: StatusTied,
			DTypeB: y.Tensor.DType.String(), ShapeB: y.Shape, TiedTo: y.TiedTo})
	}
	// A remote side's files are checked against the Hub's sha256 once
	// every tensor compared has been read (fetching only what was not):
	// a report made from bytes that do not check out is not given.
	for _, c := range []*checkpoint.Checkpoint{a, b} {
		if err := c.VerifySources(); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// compareDecoded compares x and y by their decoded float32 values.
func compareDecoded(d *TensorDiff, a, b *checkpoint.Checkpoint, x, y CanonicalTensor) error {
	va, err := decodeCanonical(a, x)
	if err != nil {
		return err
	}
	vb, err := decodeCanonical(b, y)
	if err != nil {
		return err
	}
	compareValues(d, va, vb)
	return nil
}

// compareIntegers compares two integer tensors of one dtype and shape byte
// for byte: identical when the bytes are; otherwise different, MaxAbs the
// largest difference of two elements (exact: as int64 or uint64).
func compareIntegers(d *TensorDiff, x, y *checkpoint.Tensor) error {
	if x.Size != y.Size {
		return fmt.Errorf("verify: tensors %q (%d bytes) and %q (%d bytes) differ in size", x.Name, x.Size, y.Name, y.Size)
	}
	ra, err := x.ReadAll()
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	rb, err := y.ReadAll()
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	ha, hb := sha256.Sum256(ra), sha256.Sum256(rb)
	d.HashA, d.HashB = hex.EncodeToString(ha[:]), hex.EncodeToString(hb[:])
	if bytes.Equal(ra, rb) {
		d.Status = StatusIdentical
		return nil
	}
	d.Status = StatusDifferent
	es, err := x.DType.ByteSize(1)
	if err != nil || es <= 0 || es > 8 {
		return nil
	}
	signed := x.DType == tensor.I8 || x.DType == tensor.I16 || x.DType == tensor.I32 || x.DType == tensor.I64
	var sa, se float64
	for i := int64(0); i+es <= int64(len(ra)); i += es {
		var ua, ub uint64
		for k := es - 1; k >= 0; k-- {
			ua, ub = ua<<8|uint64(ra[i+k]), ub<<8|uint64(rb[i+k])
		}
		va, vb := float64(ua), float64(ub)
		if signed {
			sh := 64 - 8*uint(es)
			va, vb = float64(int64(ua<<sh)>>sh), float64(int64(ub<<sh)>>sh)
		}
		d.MaxAbs = max(d.MaxAbs, math.Abs(vb-va))
		sa += va * va
		se += (vb - va) * (vb - va)
	}
	d.RelErr = math.MaxFloat64
	if sa > 0 && !math.IsInf(se/sa, 0) {
		d.RelErr = math.Sqrt(se / sa)
	}
	return nil
}

// splitTied separates the copies (TiedTo set) from the tensors to compare.
func splitTied(ts []CanonicalTensor) (keep, tied []CanonicalTensor) {
	for _, t := range ts {
		if t.TiedTo != "" {
			tied = append(tied, t)
		} else {
			keep = append(keep, t)
		}
	}
	return keep, tied
}

// decodeCanonical reads a tensor of c, decodes it to float32 (an int8
// weight times its per-row scales) and puts it in the canonical layout.
func decodeCanonical(c *checkpoint.Checkpoint, x CanonicalTensor) ([]float32, error) {
	t := x.Tensor
	n, err := t.Shape.NumElements()
	if err != nil {
		return nil, fmt.Errorf("verify: tensor %q: %w", t.Name, err)
	}
	if cn, err := x.Shape.NumElements(); err != nil || cn != n {
		return nil, fmt.Errorf("verify: tensor %q: canonical shape %v does not hold its %d elements", t.Name, x.Shape, n)
	}
	if !quant.CanDequantize(t.DType) {
		return nil, tensor.Unsupported("verify: tensor %q: cannot decode %v", t.Name, t.DType)
	}
	// The checkpoint readers have checked Size against the file; the
	// element count must be what those bytes encode before allocating.
	if want, err := t.DType.ByteSize(n); err != nil || want != t.Size {
		return nil, fmt.Errorf("verify: tensor %q: %d bytes do not hold %v %v", t.Name, t.Size, t.DType, t.Shape)
	}
	raw, err := t.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	v := make([]float32, n)
	if err := quant.Dequantize(v, raw, t.DType); err != nil {
		return nil, fmt.Errorf("verify: tensor %q: %w", t.Name, err)
	}
	if _, ok := c.Int8Scale(t); ok && t.DType == tensor.I8 {
		scales, err := c.ReadInt8Scales(t)
		if err != nil {
			return nil, fmt.Errorf("verify: %w", err)
		}
		cols := len(v) / len(scales)
		for r, sc := range scales {
			for i := r * cols; i < (r+1)*cols; i++ {
				v[i] *= sc
			}
		}
	}
	if x.Transform != nil {
		out := make([]float32, n)
		x.Transform(out, v)
		v = out
	}
	return v, nil
}

// HashValues is the format-independent hash of decoded values: SHA-256 of
// their float32 little-endian bytes, in hex.
func HashValues(v []float32) string {
	h := sha256.New()
	var buf [4096]byte
	for len(v) > 0 {
		n := min(len(v), len(buf)/4)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v[i]))
		}
		h.Write(buf[:4*n])
		v = v[n:]
	}
	return hex.EncodeToString(h.Sum(nil))
}

func compareValues(d *TensorDiff, a, b []float32) {
	d.HashA, d.HashB = HashValues(a), HashValues(b)
	var sa, se float64
	same := true
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			same = false
		}
		x, y := float64(a[i]), float64(b[i])
		e := y - x
		sa += x * x
		se += e * e
		if ae := math.Abs(e); ae > d.MaxAbs || math.IsNaN(ae) {
			d.MaxAbs = ae
		}
	}
	if same {
		d.Status = StatusIdentical
		return
	}
	d.Status = StatusDifferent
	switch {
	case sa > 0:
		d.RelErr = math.Sqrt(se / sa)
	case se > 0:
		d.RelErr = math.Inf(1)
	}
	if se > 0 && sa > 0 {
		s := 10 * math.Log10(sa/se)
		d.SQNR = &s
	}
	if math.IsInf(d.RelErr, 0) || math.IsNaN(d.RelErr) {
		// JSON cannot carry Inf or NaN.
		d.RelErr = math.MaxFloat64
	}
	if math.IsNaN(d.MaxAbs) || math.IsInf(d.MaxAbs, 0) {
		d.MaxAbs = math.MaxFloat64
	}
}
