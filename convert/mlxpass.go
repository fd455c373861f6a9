package convert

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/mlx"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// GGUF's Q8_0 and Q4_0 blocks are MLX affine groups of 32 as they are:
//
//	Q8_0  x = d·q,      q ∈ [−128, 127]  →  8-bit code q+128, scale d, bias −128·d
//	Q4_0  x = d·(q−8),  q ∈ [0, 15]      →  4-bit code q,     scale d, bias −8·d
//
// With the scales and biases in f32, MLX's dequantization (c·s, then + b,
// each rounded to f32) is exact — c·s and 128·s need at most 19 bits — and
// equals ggml's d·q value for value (a zero is +0 where ggml's may be −0),
// so the MLX model is the GGUF's, and re-quantizing it to the GGUF type
// gives the blocks back (TestMLXPassThroughGGUF).
var mlxPassBits = map[tensor.DType]int{tensor.Q8_0: 8, tensor.Q4_0: 4}

// mlxPassThrough rewrites, in an MLX plan made from a GGUF, every Q8_0 and
// Q4_0 weight whose mapping only renames it or reorders its rows (LLaMA's
// Q/K permutation) as the MLX layer holding its blocks exactly
// (mlxPassBits); every other tensor stays as planned (float). config.json
// gets the quantization: the bits most layers have, the others listed as
// layers of their own.
func mlxPassThrough(p *plan) (*plan, error) {
	count := map[int]int{}
	var jobs []*job
	for _, j := range p.jobs {
		bits, ok := mlxPassBits[j.src.DType]
		perm, okPerm := rowOrder(j)
		if !ok || !okPerm || !mlx.Quantizable(j.out.Name, j.out.Shape, 32) {
			jobs = append(jobs, j)
			continue
		}
		jobs = append(jobs, mlxPassJobs(j, bits, perm)...)
		count[bits]++
	}
	p.jobs = jobs
	if err := finishJobs(jobs); err != nil {
		return nil, err
	}
	experts, err := mlxSplitPacked(p)
	if err != nil {
		return nil, err
	}
	if len(count) == 0 && len(experts) == 0 {
		return p, nil
	}
	jobs = p.jobs
	if len(count) > 0 {
		// a MoE's passed experts stacked as mlx-lm keeps them
		if _, err := mlxStackExperts(p, mlx.WeightSuffix, mlx.ScalesSuffix, mlx.BiasesSuffix); err != nil {
			return nil, err
		}
		jobs = p.jobs
	}
	if len(count) == 0 {
		// Only MXFP4 experts: mlx-lm quantizes every layer with scales
		// by the top-level mode.
		q := &mlx.Quantization{Params: mxfp4Params}
		if err := mlxSetConfig(p, q); err != nil {
			return nil, err
		}
		p.outType = "mlx-mxfp4-experts-copied"
		return p, nil
	}
	def := mostBits(count)
	q := &mlx.Quantization{Params: mlx.Params{Bits: def, GroupSize: 32, Mode: mlx.ModeAffine}}
	for _, path := range experts {
		if q.Layers == nil {
			q.Layers = map[string]*mlx.Params{}
		}
		prm := mxfp4Params
		q.Layers[path] = &prm
	}
	for _, j := range jobs {
		if j.passBits != 0 && j.passBits != def && j.out.DType == tensor.U32 {
			if q.Layers == nil {
				q.Layers = map[string]*mlx.Params{}
			}
			path := j.out.Name[:len(j.out.Name)-len(mlx.WeightSuffix)]
			q.Layers[path] = &mlx.Params{Bits: j.passBits, GroupSize: 32, Mode: mlx.ModeAffine}
		}
	}
	if err := mlxSetConfig(p, q); err != nil {
		return nil, err
	}
	p.outType = fmt.Sprintf("mlx-affine-%d-bit-g32-from-gguf", def)
	return p, nil
}

// mostBits is the bits most layers have (the larger on a tie), 0 for none.
func mostBits(count map[int]int) int {
	def := 0
	for b, n := range count {
		if n > count[def] || n == count[def] && b > def {
			def = b
		}
	}
	return def
}

// mlxPassDefaultBits is the bits mlxPassThrough would give p's MLX
// config (most of its passed layers'), 0 when it would pass none.
func mlxPassDefaultBits(p *plan) int {
	count := map[int]int{}
	for _, j := range p.jobs {
		bits, ok := mlxPassBits[j.src.DType]
		if _, okPerm := rowOrder(j); ok && okPerm && mlx.Quantizable(j.out.Name, j.out.Shape, 32) {
			count[bits]++
		}
	}
	return mostBits(count)
}

// rowOrder reports whether j's output is its source with whole rows
// reordered (or as it is; the source may be an expert cut from a stack),
// and the source row of each output row. A
// Transform is probed with row and column indices (exact in float32 below
// 2^24).
func rowOrder(j *job) ([]int, bool) {
	m := j.m
	// One part of a stack cut along its outermost dimension (a MoE's
	// expert of a GGUF's ffn_*_exps) is read as that part's own tensor
	// (checkpoint's Tensor.Part): its rows as they are.
	part := m.Parts > 0 && !m.Interleaved
	if m.Copy || len(m.Stack) > 0 || m.Parts > 0 && !part || m.Cut > 0 || m.PadRows > 0 || m.Blocks != 0 || m.OCP != "" {
		return nil, false
	}
	if len(j.out.Shape) != 2 || !j.src.Shape.Equal(j.out.Shape) {
		return nil, false
	}
	rows, cols := int(j.out.Shape[0]), int(j.out.Shape[1])
	perm := make([]int, rows)
	for r := range perm {
		perm[r] = r
	}
	if m.Transform == nil {
		return perm, true
	}
	if rows*cols >= 1<<24 || rows >= 1<<24 {
		return nil, false
	}
	src, dst := make([]float32, rows*cols), make([]float32, rows*cols)
	for i := range src {
		src[i] = float32(i)
	}
	m.Transform(dst, src)
	seen := make([]bool, rows)
	for r := 0; r < rows; r++ {
		first := int(dst[r*cols])
		if first%cols != 0 || first/cols >= rows || seen[first/cols] {
			return nil, false
		}
		for c := 0; c < cols; c++ {
			if dst[r*cols+c] != float32(first+c) {
				return nil, false
			}
		}
		perm[r] = first / cols
		seen[first/cols] = true
	}
	return perm, true
}

// mlxPassJobs replaces j (a Q8_0 or Q4_0 source, rows reordered by perm)
// by its MLX layer: codes, and f32 scales and biases, from its blocks.
func mlxPassJobs(j *job, bits int, perm []int) []*job {
	path := j.out.Name[:len(j.out.Name)-len(mlx.WeightSuffix)]
	rows, cols := j.out.Shape[0], j.out.Shape[1]
	l := &mlxPassLayer{src: j.src, bits: bits, perm: perm, cols: int(cols)}
	part := func(name string, d tensor.DType, shape tensor.Shape, i int) *job {
		info := tensor.Info{Name: name, DType: d, Shape: shape}
		info.Size, _ = d.ShapeBytes(shape)
		src := checkpoint.LazyTensor(info, j.src.File, func() ([]byte, error) { return l.part(i) })
		return &job{out: info, src: src, m: Mapping{Name: name, Source: j.src.Name, Shape: shape}, from: j.src, passBits: bits}
	}
	return []*job{
		part(path+mlx.WeightSuffix, tensor.U32, tensor.Shape{rows, cols * int64(bits) / 32}, 0),
		part(path+mlx.ScalesSuffix, tensor.F32, tensor.Shape{rows, cols / 32}, 1),
		part(path+mlx.BiasesSuffix, tensor.F32, tensor.Shape{rows, cols / 32}, 2),
	}
}

// mlxPassLayer is one GGUF weight being rewritten as an MLX layer.
type mlxPassLayer struct {
	src  *checkpoint.Tensor
	bits int
	perm []int
	cols int
	mlxLayer
}

func (l *mlxPassLayer) part(i int) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.parts[i] == nil {
		if err := l.convert(); err != nil {
			return nil, fmt.Errorf("convert: tensor %q: %w", l.src.Name, err)
		}
	}
	b := l.parts[i]
	l.taken[i] = true
	if l.taken == [3]bool{true, true, true} {
		l.parts, l.taken = [3][]byte{}, [3]bool{}
	}
	return b, nil
}

// convert reads the blocks and writes codes, scales and biases, row by
// row in output order.
func (l *mlxPassLayer) convert() error {
	raw, err := io.ReadAll(io.LimitReader(l.src.Open(), l.src.Size))
	if err != nil {
		return err
	}
	bb := int(l.src.DType.BlockBytes())
	blocksPerRow := l.cols / 32
	rowBytes := blocksPerRow * bb
	if len(raw) != rowBytes*len(l.perm) {
		return fmt.Errorf("%d bytes of blocks, want %d", len(raw), rowBytes*len(l.perm))
	}
	groups := len(l.perm) * blocksPerRow
	codes := make([]byte, groups*32*l.bits/8)
	sc, bi := make([]byte, 4*groups), make([]byte, 4*groups)
	g := 0
	for _, r := range l.perm {
		row := raw[r*rowBytes : (r+1)*rowBytes]
		for b := 0; b < blocksPerRow; b++ {
			blk := row[b*bb : (b+1)*bb]
			d := quant.F16ToF32(binary.LittleEndian.Uint16(blk))
			out := codes[g*32*l.bits/8 : (g+1)*32*l.bits/8]
			var bias float32
			switch l.bits {
			case 8:
				for k, q := range blk[2:34] {
					out[k] = byte(int8(q)) + 128
				}
				bias = -128 * d
			case 4:
				for k := 0; k < 16; k++ {
					lo, hi := blk[2+k]&0xf, blk[2+k]>>4 // elements k and k+16
					setNibble(out, k, lo)
					setNibble(out, k+16, hi)
				}
				bias = -8 * d
			}
			binary.LittleEndian.PutUint32(sc[4*g:], math.Float32bits(d))
			binary.LittleEndian.PutUint32(bi[4*g:], math.Float32bits(bias))
			g++
		}
	}
	l.parts = [3][]byte{codes, sc, bi}
	l.taken = [3]bool{}
	return nil
}

// setNibble sets 4-bit code i of MLX's little-endian stream.
func setNibble(b []byte, i int, v byte) {
	if i%2 == 0 {
		b[i/2] = b[i/2]&0xf0 | v
	} else {
		b[i/2] = b[i/2]&0x0f | v<<4
	}
}

// mxfp4Pass carries the mxfp4 layers of an MLX checkpoint into GGUF as
// MXFP4 blocks (checkpoint.MXFP4Blocks: MLX's e8m0 scale and e2m1 codes
// are ggml's block_mxfp4, the nibbles reordered), whatever the outtype,
// as the converter keeps gpt-oss's MXFP4 experts. A layer whose mapping is
// more than a rename and a row permutation (Llama's Q/K rows) stays as
// planned, at the outtype, from its float values. With requantize
// (Options.Requantize) a layer that would be carried is MXFP4 still, but
// encoded again from its float values by tfconv's encoder. jobs keep their
// order; any reports whether a job became MXFP4.
func mxfp4Pass(jobs []*job, requantize bool) (out []*job, any bool, err error) {
	out = make([]*job, len(jobs))
	for i, j := range jobs {
		out[i] = j
		rows, ok := rowOrder(j)
		if !ok || j.src.MXFP4 == nil || j.m.Blocks != 0 || j.m.Interleaved || j.out.Shape[1]%32 != 0 {
			continue
		}
		any = true
		if requantize {
			j.out.DType = tensor.MXFP4
			continue
		}
		b, err := checkpoint.MXFP4Blocks(j.src.Name, j.src, rows)
		if err != nil {
			return nil, false, err
		}
		m := j.m
		out[i] = &job{out: tensor.Info{Name: m.Name, DType: tensor.MXFP4, Shape: m.Shape.Clone()}, src: b,
			m: Mapping{Name: m.Name, Source: m.Source, Shape: m.Shape, Blocks: tensor.MXFP4}, ggufBF16: j.ggufBF16}
	}
	return out, any, finishJobs(out)
}

// mxfp4Params are MLX's mxfp4 mode, as config.json gives them.
var mxfp4Params = mlx.Params{GroupSize: mlx.FPModes[mlx.ModeMXFP4].GroupSize, Bits: mlx.FPModes[mlx.ModeMXFP4].Bits, Mode: mlx.ModeMXFP4}

// mlxMXFP4Job is the first job of p that writes GGUF MXFP4 blocks as
// Hugging Face's packed experts (gpt-oss's "_blocks" and "_scales"), nil
// when there is none.
func mlxMXFP4Job(p *plan) *job {
	for _, j := range p.jobs {
		if j.m.OCP != "" && j.m.Blocks == tensor.MXFP4 {
			return j
		}
	}
	return nil
}

// mlxSplitPacked replaces, in an MLX plan, the Hugging Face tensors that
// mlx-lm's sanitize splits (arch.Family.MLXSplits: gpt-oss's experts,
// "P_blocks" uint8 [E, rows, cols/32, 16], "P_scales" uint8 [E, rows,
// cols/32] and "P_bias", with gate_up_proj's gate and up rows
// alternating) by the MLX tensors it makes of them: each module's mxfp4
// layer, the blocks' bytes as its uint32 codes and the scale bytes as its
// scales (OCP's nibble order is MLX's: copies), and its bias, the rows
// r ≡ k (mod parts) going to part k (mlx-lm d78bf58's gpt_oss sanitize).
// It returns the module paths, sorted, which config.json names mxfp4
// layers. The blocks come from the source's own (a Hugging Face
// checkpoint) or from GGUF MXFP4 blocks moved into OCP order (planToHF's
// packed experts); either way nothing is dequantized.
func mlxSplitPacked(p *plan) ([]string, error) {
	f, err := mlxFamily(p)
	if err != nil || f == nil {
		return nil, err
	}
	at := map[string]int{}
	for i, j := range p.jobs {
		at[j.out.Name] = i
	}
	replace := map[int][]*job{}
	var paths []string
	for bid := 0; ; bid++ {
		found := false
		for _, s := range f.MLXSplits(bid) {
			i, ok := at[s.HF]
			if !ok {
				continue
			}
			found = true
			j := p.jobs[i]
			ts, err := lazyTensors([]*job{j}, Options{})
			if err != nil {
				return nil, err
			}
			t, k := ts[0], int64(len(s.MLX))
			if len(t.Shape) < 2 || t.Shape[1]%k != 0 || s.Codes && (len(t.Shape) != 4 || t.Shape[3] != 16 || t.DType != tensor.U8) {
				return nil, fmt.Errorf("convert: tensor %q (%v %v) does not split into %d MLX layers", s.HF, t.DType, t.Shape, k)
			}
			for x, name := range s.MLX {
				shape := t.Shape.Clone()
				shape[1] /= k
				part, err := checkpoint.InterleavedPart(arch.Mapping{Name: name, Part: x, Parts: int(k), Shape: shape}, t)
				if err != nil {
					return nil, fmt.Errorf("convert: %w", err)
				}
				if s.Codes {
					if part, err = checkpoint.Retyped(part, name, tensor.U32, tensor.Shape{shape[0], shape[1], shape[2] * 4}); err != nil {
						return nil, fmt.Errorf("convert: %w", err)
					}
					paths = append(paths, strings.TrimSuffix(name, mlx.WeightSuffix))
				}
				replace[i] = append(replace[i], &job{out: part.Info, src: part, m: Mapping{Name: name, Source: s.HF, Shape: part.Shape.Clone()},
					passMXFP4: !strings.HasSuffix(name, ".bias"), allowOverflow: j.allowOverflow, ggufBF16: j.ggufBF16})
			}
		}
		if !found {
			break
		}
	}
	if len(replace) == 0 {
		return nil, nil
	}
	var jobs []*job
	for i, j := range p.jobs {
		if r, ok := replace[i]; ok {
			jobs = append(jobs, r...)
		} else {
			jobs = append(jobs, j)
		}
	}
	p.jobs = jobs
	sort.Strings(paths)
	return paths, finishJobs(jobs)
}
