package model

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/internal/hugepages"
	"github.com/tfconv/tfconv/internal/progress"
	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// linear is y = x·Wᵀ + b with W of shape [out][in] in its checkpoint dtype.
type linear struct {
	W *kernels.Matrix // [out][in]
	B []float32       // [out], nil without bias
	// Name is the weight's GGUF name, for an Observer; set by the decoder
	// families' loader.
	Name string
	// Scale [out] multiplies each output (Falcon-H1's μP multipliers on
	// Hugging Face input, where the GGUF has them in W); nil without.
	Scale []float32
}

// apply sets dst[T][out] = (x[T][in]·Wᵀ + b) ⊙ scale.
func (l *linear) apply(dst, x []float32, T int) {
	kernels.MatMul(dst, x, T, l.W)
	n := l.W.Rows
	if l.B != nil {
		for t := 0; t < T; t++ {
			kernels.Add(dst[t*n:(t+1)*n], l.B)
		}
	}
	if l.Scale != nil {
		for t := 0; t < T; t++ {
			kernels.Mul(dst[t*n:(t+1)*n], l.Scale)
		}
	}
}

// norm is LayerNorm (W, B, mean removed) or RMSNorm (RMS set, B nil).
type norm struct {
	W   []float32 // [d]
	B   []float32 // [d], nil for RMSNorm and bias-free LayerNorm
	Eps float32
	RMS bool
	// Width, when set, is narrower than d: each row is normalised in
	// pieces of Width, piece j with W[j·Width:(j+1)·Width] (one norm per
	// head, StableLM's).
	Width int
}

// apply normalizes each of the T rows of x (width d) into dst.
func (n *norm) apply(dst, x []float32, T, d int) {
	w := d
	if n.Width > 0 {
		w = n.Width
	}
	per := len(n.W) / w // weight rows
	for r := 0; r < T*d/w; r++ {
		j := r % per
		W := n.W[j*w : (j+1)*w]
		var B []float32
		if n.B != nil {
			B = n.B[j*w : (j+1)*w]
		}
		if n.RMS {
			kernels.RMSNorm(dst[r*w:(r+1)*w], x[r*w:(r+1)*w], W, n.Eps)
		} else {
			kernels.LayerNorm(dst[r*w:(r+1)*w], x[r*w:(r+1)*w], W, B, n.Eps)
		}
	}
}

// applyOrCopy is apply, or a copy of x for an absent norm (nil).
func (n *norm) applyOrCopy(dst, x []float32, T, d int) {
	if n == nil {
		copy(dst[:T*d], x[:T*d])
		return
	}
	n.apply(dst, x, T, d)
}

// activate applies the named activation in place.
func activate(x []float32, act string) error {
	switch act {
	case "gelu":
		kernels.GELU(x)
	case "gelu_tanh":
		kernels.GELUTanh(x)
	case "gelu_ggml":
		kernels.GELUFP16(x)
	case "bloom_gelu":
		bloomGELU(x)
	case "quick_gelu": // x·σ(1.702·x), CLIP's
		for i, v := range x {
			x[i] = v * float32(1/(1+math.Exp(-float64(float32(1.702)*v))))
		}
	case "silu":
		kernels.SiLU(x)
	case "relu":
		kernels.ReLU(x)
	case "relu2": // squared ReLU (Nemotron-H's MLP)
		kernels.ReLU(x)
		for i, v := range x {
			x[i] = v * v
		}
	default:
		return tensor.Unsupported("model: activation %q is not supported", act)
	}
	return nil
}

// hfActivation maps a transformers activation name to ours.
func hfActivation(name string) (string, error) {
	switch name {
	case "gelu":
		return "gelu", nil
	case "gelu_new", "gelu_pytorch_tanh", "gelu_fast":
		return "gelu_tanh", nil
	case "silu", "swish":
		return "silu", nil
	case "relu", "relu2", "quick_gelu":
		return name, nil
	case "sqrelu": // fla's name of it (RWKV-7's channel mix)
		return "relu2", nil
	}
	return "", tensor.Unsupported("model: activation %q is not supported", name)
}

// attend runs scaled dot-product attention through kernels.Attention and,
// when tr asks for this layer, records the probabilities of one head.
func attend(dst, q, k, v []float32, Tq, Tk int, p kernels.AttentionParams, tr *Trace, layer int) {
	kernels.Attention(dst, q, k, v, Tq, Tk, p)
	if tr != nil && tr.AttnLayer == layer && tr.AttnHead >= 0 && tr.AttnHead < p.Heads {
		tr.Attention = attentionProbs(q, k, Tq, Tk, tr.AttnHead, p)
	}
}

// reach limits p to the keys a layer of pattern l attends to: its sliding
// window or its chunk.
func reach(p kernels.AttentionParams, l spec.Layer) kernels.AttentionParams {
	switch l.Mixer {
	case spec.SlidingAttention:
		p.Window = l.Window
	case spec.ChunkedAttention:
		p.Chunk = l.Window
	}
	return p
}

// attentionProbs returns the [Tq][Tk] softmax probabilities of head h,
//
//	P[i][j] = softmax_j(Scale·q[i,h]·k[j,g] + Bias(h,i,j)),
//
// with masked keys at 0. kernels.Attention never materializes this matrix,
// so the trace recomputes it here in plain Go (heat maps only).
func attentionProbs(q, k []float32, Tq, Tk, h int, p kernels.AttentionParams) [][]float32 {
	H, G, D := p.Heads, p.KVHeads, p.HeadDim
	g := h / (H / G)
	out := make([][]float32, Tq)
	for i := range out {
		row := make([]float32, Tk)
		qv := q[(i*H+h)*D : (i*H+h+1)*D]
		for j := range row {
			pos := p.QPos0 + i
			together := p.Groups != nil && p.Groups[pos] >= 0 && p.Groups[j] == p.Groups[pos]
			masked := (p.KeyMask != nil && !p.KeyMask[j]) || !together && ((p.Causal && j > pos) ||
				(p.Window > 0 && pos-j >= p.Window) || (p.Chunk > 0 && j < pos/p.Chunk*p.Chunk))
			if masked {
				row[j] = float32(math.Inf(-1))
				continue
			}
			s := p.Scale * kernels.Dot(qv, k[(j*G+g)*D:(j*G+g+1)*D])
			if p.SoftCap > 0 {
				one := []float32{s}
				kernels.SoftCap(one, p.SoftCap)
				s = one[0]
			}
			if p.Bias != nil {
				s += p.Bias(h, i, j)
			}
			row[j] = s
		}
		if p.Sinks != nil {
			// The sink's share of the softmax goes to no key.
			row = append(row, p.Sinks[h])
			kernels.Softmax(row)
			row = row[:Tk]
		} else {
			kernels.Softmax(row)
		}
		out[i] = row
	}
	return out
}

// loader reads weights from a checkpoint, remembering the first error so
// that the architecture files read like a list of tensors.
type loader struct {
	c   *checkpoint.Checkpoint
	err error
	// mats are the weight matrices loaded so far (LoadOptions.MatchLlamaCpp
	// sets their RoundActivations).
	mats []*kernels.Matrix
	// meter counts the bytes read (nil: silent).
	meter *progress.Meter
	// packed are the GGUF-named tensors a Hugging Face checkpoint's packed
	// tensors make (arch.Family.Packed: gpt-oss's experts), by name.
	packed map[string]*checkpoint.Tensor
	// scaled are the weight scales (NAME.scale) the linears loaded so far
	// apply (weightScale), by name.
	scaled map[string]bool
	// loaded are the tensors read so far (the vision encoders' Tensors).
	loaded []tensor.Info
}

// weightScale is the product factor of a GGUF weight NAME.weight of out
// rows: llama.cpp's per-tensor NAME.scale (F32 [1]: an NVFP4 checkpoint's
// second-level scale, which its converter writes beside the blocks and
// llama.cpp d32676d7 multiplies into the product, build_lora_mm's w_s), as
// a factor per output row, or nil when there is none.
func (l *loader) weightScale(name string, out int) []float32 {
	name += ".scale"
	if !l.has(name) {
		return nil
	}
	v := l.vector(name, 1)
	if v == nil {
		return nil
	}
	if l.scaled == nil {
		l.scaled = map[string]bool{}
	}
	l.scaled[name] = true
	s := make([]float32, out)
	for i := range s {
		s[i] = v[0]
	}
	return s
}

// expertScales are the product factors of the n experts of a GGUF weight
// NAME.weight ([n][out][in]): llama.cpp's per-expert NAME.scale (F32 [n]:
// each expert's NVFP4 second-level scale, which its converter writes
// beside the stacked blocks and llama.cpp d32676d7 multiplies into that
// expert's product, build_lora_mm_id's w_s), each as a factor per output
// row, or n nils when there is none.
func (l *loader) expertScales(name string, n, out int) [][]float32 {
	s := make([][]float32, n)
	name += ".scale"
	if !l.has(name) {
		return s
	}
	v := l.vector(name, n)
	if v == nil {
		return s
	}
	if l.scaled == nil {
		l.scaled = map[string]bool{}
	}
	l.scaled[name] = true
	for x := range s {
		s[x] = make([]float32, out)
		for i := range s[x] {
			s[x][i] = v[x]
		}
	}
	return s
}

// packedView sets l.packed to the GGUF-named tensors family f's Packed
// entries make of the checkpoint's (the MXFP4 experts of gpt-oss, their
// blocks as the GGUF holds them).
func (l *loader) packedView(f *spec.Family, c spec.Config) error {
	infos := make([]tensor.Info, len(l.c.Tensors))
	for i, t := range l.c.Tensors {
		infos[i] = t.Info
	}
	maps, err := f.PackedMappings(infos)
	if err != nil {
		return fmt.Errorf("model: %s: %w", l.c.Path, err)
	}
	l.packed = map[string]*checkpoint.Tensor{}
	for _, m := range maps {
		t, err := checkpoint.PackedTensor(l.c, m)
		if err != nil {
			return fmt.Errorf("model: %s: %w", l.c.Path, err)
		}
		l.packed[m.Name] = t
	}
	// The roles a RowSplit regroups (Qwen3-Next's in_proj_qkvz), their
	// rows picked as the converter picks them, in float32.
	splits, err := f.SplitMappings(c, infos)
	if err != nil {
		return fmt.Errorf("model: %s: %w", l.c.Path, err)
	}
	for _, m := range splits {
		src, ok := l.c.Tensor(m.Source)
		if !ok {
			return fmt.Errorf("model: %s: missing tensor %q", l.c.Path, m.Source)
		}
		n, err := m.Shape.NumElements()
		if err != nil {
			return fmt.Errorf("model: %s: tensor %q: %w", l.c.Path, m.Name, err)
		}
		info := tensor.Info{Name: m.Name, DType: tensor.F32, Shape: m.Shape.Clone(), Size: 4 * n}
		l.packed[m.Name] = checkpoint.LazyTensor(info, src.File, func() ([]byte, error) {
			raw, err := io.ReadAll(src.Open())
			if err != nil {
				return nil, err
			}
			in := make([]float32, src.NumElements())
			if err := quant.Dequantize(in, raw, src.DType); err != nil {
				return nil, fmt.Errorf("tensor %q: %w", src.Name, err)
			}
			out := make([]float32, info.NumElements())
			m.Transform(out, in)
			b := make([]byte, 4*len(out))
			for i, v := range out {
				binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
			}
			return b, nil
		})
	}
	return nil
}

// tensor is the checkpoint's tensor name, or the packed view's
// (loader.packed).
func (l *loader) tensor(name string) (*checkpoint.Tensor, bool) {
	if t, ok := l.packed[name]; ok {
		return t, true
	}
	return l.c.Tensor(name)
}

func (l *loader) fail(err error) {
	if l.err == nil {
		l.err = err
	}
}

func (l *loader) has(name string) bool {
	_, ok := l.tensor(name)
	return ok
}

func (l *loader) read(name string) (*checkpoint.Tensor, []byte) {
	if l.err != nil {
		return nil, nil
	}
	t, ok := l.tensor(name)
	if !ok {
		l.fail(fmt.Errorf("model: %s: tensor %q missing", l.c.Path, name))
		return nil, nil
	}
	// The size comes from a header the checkpoint reader checked against
	// the file's length.
	b := make([]byte, t.Size)
	hugepages.Advise(b)
	if _, err := io.ReadFull(t.Open(), b); err != nil {
		l.fail(fmt.Errorf("model: %s: tensor %q: %w", t.File, name, err))
		return nil, nil
	}
	l.meter.Add(t.Size)
	l.loaded = append(l.loaded, t.Info)
	return t, b
}

// matrix loads a [rows][cols] weight kept in its checkpoint dtype.
func (l *loader) matrix(name string, rows, cols int) *kernels.Matrix {
	t, b := l.read(name)
	if t == nil {
		return nil
	}
	if !shapeIs(t.Shape, rows, cols) {
		l.fail(fmt.Errorf("model: %s: tensor %q has shape %v, want [%d %d]", t.File, name, t.Shape, rows, cols))
		return nil
	}
	var scales []float32
	if t.DType == tensor.I8 {
		if scales = l.int8Scales(t, rows); scales == nil {
			return nil
		}
	}
	m, err := kernels.NewMatrix(t.DType, rows, cols, b, scales)
	if err != nil {
		l.fail(fmt.Errorf("model: %s: tensor %q: %w", t.File, name, err))
		return nil
	}
	l.mats = append(l.mats, m)
	return m
}

// stackedMatrices loads a [n][rows][cols] weight (a mixture's experts,
// stacked as GGUF keeps them) as n matrices over one read of its bytes.
func (l *loader) stackedMatrices(name string, n, rows, cols int) []*kernels.Matrix {
	t, b := l.read(name)
	if t == nil {
		return nil
	}
	if len(t.Shape) != 3 || t.Shape[0] != int64(n) || !shapeIs(t.Shape[1:], rows, cols) || len(b)%n != 0 {
		l.fail(fmt.Errorf("model: %s: tensor %q has shape %v, want [%d %d %d]", t.File, name, t.Shape, n, rows, cols))
		return nil
	}
	per := len(b) / n
	out := make([]*kernels.Matrix, n)
	for x := range out {
		m, err := kernels.NewMatrix(t.DType, rows, cols, b[x*per:(x+1)*per], nil)
		if err != nil {
			l.fail(fmt.Errorf("model: %s: tensor %q, expert %d: %w", t.File, name, x, err))
			return nil
		}
		l.mats = append(l.mats, m)
		out[x] = m
	}
	return out
}

// matrixT loads a weight stored transposed, [cols][rows] (Hugging Face's
// Conv1D in GPT-2 keeps [in][out]), and transposes it once, keeping its
// dtype. Only element-wise dtypes can be transposed; block-quantized rows
// cannot be cut across.
func (l *loader) matrixT(name string, rows, cols int) *kernels.Matrix {
	t, b := l.read(name)
	if t == nil {
		return nil
	}
	if !shapeIs(t.Shape, cols, rows) {
		l.fail(fmt.Errorf("model: %s: tensor %q has shape %v, want [%d %d] (transposed at load)", t.File, name, t.Shape, cols, rows))
		return nil
	}
	if t.DType == tensor.I8 {
		// The scales run along the stored rows, which become columns: keep
		// the exact values scale·q as float32 instead.
		w := l.int8Values(t, b, cols, rows)
		if w == nil {
			return nil
		}
		wt := make([]float32, len(w))
		for i := 0; i < cols; i++ {
			for j := 0; j < rows; j++ {
				wt[j*cols+i] = w[i*rows+j]
			}
		}
		m := kernels.F32Matrix(rows, cols, wt)
		l.mats = append(l.mats, m)
		return m
	}
	es := 0
	switch t.DType {
	case tensor.F32:
		es = 4
	case tensor.F16, tensor.BF16:
		es = 2
	default:
		l.fail(tensor.Unsupported("model: %s: tensor %q: cannot transpose %v weights", t.File, name, t.DType))
		return nil
	}
	if len(b) != rows*cols*es {
		l.fail(fmt.Errorf("model: %s: tensor %q: %d bytes for %d×%d %v", t.File, name, len(b), cols, rows, t.DType))
		return nil
	}
	out := make([]byte, len(b))
	for i := 0; i < cols; i++ {
		for j := 0; j < rows; j++ {
			copy(out[(j*cols+i)*es:(j*cols+i+1)*es], b[(i*rows+j)*es:(i*rows+j+1)*es])
		}
	}
	m, err := kernels.NewMatrix(t.DType, rows, cols, out, nil)
	if err != nil {
		l.fail(fmt.Errorf("model: %s: tensor %q: %w", t.File, name, err))
		return nil
	}
	l.mats = append(l.mats, m)
	return m
}

// vector loads a tensor of n elements (any shape) decoded to float32.
func (l *loader) vector(name string, n int) []float32 {
	t, b := l.read(name)
	if t == nil {
		return nil
	}
	if ne, err := t.Shape.NumElements(); err != nil || ne != int64(n) {
		l.fail(fmt.Errorf("model: %s: tensor %q has shape %v, want %d elements", t.File, name, t.Shape, n))
		return nil
	}
	if t.DType == tensor.I8 {
		rowLen := int(t.Shape.RowLen())
		if rowLen <= 0 {
			l.fail(fmt.Errorf("model: %s: int8 tensor %q has shape %v", t.File, name, t.Shape))
			return nil
		}
		return l.int8Values(t, b, n/rowLen, rowLen)
	}
	out := make([]float32, n)
	if err := quant.Dequantize(out, b, t.DType); err != nil {
		l.fail(fmt.Errorf("model: %s: tensor %q: %w", t.File, name, err))
		return nil
	}
	return out
}

// shaped is vector for a tensor that must have exactly shape (outermost
// first): its values decoded to float32.
func (l *loader) shaped(name string, shape tensor.Shape) []float32 {
	t, ok := l.c.Tensor(name)
	if !ok {
		l.fail(fmt.Errorf("model: %s: missing tensor %q", l.c.Path, name))
		return nil
	}
	if !slices.Equal(t.Shape, shape) {
		l.fail(fmt.Errorf("model: %s: tensor %q has shape %v, want %v", t.File, name, t.Shape, shape))
		return nil
	}
	n, err := shape.NumElements()
	if err != nil {
		l.fail(fmt.Errorf("model: %s: tensor %q: %w", t.File, name, err))
		return nil
	}
	return l.vector(name, int(n))
}

// int8Scales returns one scale per row of the I8 weight t (rows rows): the
// int8 values alone are not the weights (checkpoint.ReadInt8Scales).
func (l *loader) int8Scales(t *checkpoint.Tensor, rows int) []float32 {
	if l.err != nil {
		return nil
	}
	s, err := l.c.ReadInt8Scales(t)
	if err == nil && len(s) != rows {
		err = fmt.Errorf("%d scales for %d rows", len(s), rows)
	}
	if err != nil {
		l.fail(fmt.Errorf("model: %w", err))
		return nil
	}
	return s
}

// int8Values decodes the I8 tensor t (bytes b, rows×cols) to its values
// scale·q, for the few places that need float32 (a transposed weight, a
// vector).
func (l *loader) int8Values(t *checkpoint.Tensor, b []byte, rows, cols int) []float32 {
	scales := l.int8Scales(t, rows)
	if scales == nil {
		return nil
	}
	out := make([]float32, rows*cols)
	if len(b) != len(out) {
		l.fail(fmt.Errorf("model: %s: int8 tensor %q: %d bytes for %d×%d", t.File, t.Name, len(b), rows, cols))
		return nil
	}
	if err := quant.Dequantize(out, b, tensor.I8); err != nil {
		l.fail(fmt.Errorf("model: %s: tensor %q: %w", t.File, t.Name, err))
		return nil
	}
	for r, s := range scales {
		kernels.Scale(out[r*cols:(r+1)*cols], s)
	}
	return out
}

// optVector is vector for a tensor that may be absent (nil then).
func (l *loader) optVector(name string, n int) []float32 {
	if !l.has(name) {
		return nil
	}
	return l.vector(name, n)
}

// lin loads name+".weight" [out][in] and, when present, name+".bias".
func (l *loader) lin(name string, out, in int) linear {
	return linear{W: l.matrix(name+".weight", out, in), B: l.optVector(name+".bias", out)}
}

// layerNorm loads name+".weight" and name+".bias" (bias optional).
func (l *loader) layerNorm(name string, d int, eps float32) norm {
	return norm{W: l.vector(name+".weight", d), B: l.optVector(name+".bias", d), Eps: eps}
}

// rowsOf returns the first dimension of a 2-D tensor, or 0.
func (l *loader) rowsOf(name string) int {
	t, ok := l.c.Tensor(name)
	if !ok || len(t.Shape) != 2 {
		return 0
	}
	return int(t.Shape[0])
}

func shapeIs(s tensor.Shape, rows, cols int) bool {
	if len(s) == 1 && rows == 1 {
		// A single row: GGUF drops trailing ne of 1 (llama-quantize writes
		// Qwen2-MoE's [1][d] shared-expert gate as [d]).
		return s[0] == int64(cols)
	}
	return len(s) == 2 && s[0] == int64(rows) && s[1] == int64(cols)
}

// checkDims rejects configurations the forward pass cannot run.
func checkDims(c *Config, path string) error {
	bad := func(msg string, args ...any) error {
		return fmt.Errorf("model: %s: %s config: %s", path, c.Arch, fmt.Sprintf(msg, args...))
	}
	const maxDim = 1 << 20
	// A model whose layers do not attend (Mamba's) has no heads: 0 and 0.
	noAttention := c.attentionFree && c.Heads == 0 && c.KVHeads == 0
	for _, v := range []int{c.Layers, c.DModel, c.Vocab, c.Heads, c.KVHeads, c.HeadDim, c.FFN} {
		if (v <= 0 && !(v == 0 && noAttention)) || v > maxDim {
			return bad("dimension %d out of range (layers %d, d_model %d, vocab %d, heads %d/%d, head_dim %d, ffn %d)",
				v, c.Layers, c.DModel, c.Vocab, c.Heads, c.KVHeads, c.HeadDim, c.FFN)
		}
	}
	if !noAttention && c.Heads%c.KVHeads != 0 {
		return bad("%d heads are not a multiple of %d kv heads", c.Heads, c.KVHeads)
	}
	if c.RopeTheta > 0 && (c.RopeDim <= 0 || c.RopeDim > c.HeadDim || c.RopeDim%2 != 0) {
		return bad("rope dimension %d with head dim %d", c.RopeDim, c.HeadDim)
	}
	return nil
}

// mdInt reads an integer GGUF key with a default.
func mdInt(md tensor.Metadata, key string, def int) int {
	if v, ok := md.Int(key); ok && v >= 0 && v < 1<<31 {
		return int(v)
	}
	return def
}

func mdFloat(md tensor.Metadata, key string, def float64) float64 {
	if v, ok := md.Get(key); ok {
		if f, ok := v.Float(); ok {
			return f
		}
	}
	return def
}

func mdBool(md tensor.Metadata, key string, def bool) bool {
	if v, ok := md.Get(key); ok {
		if b, ok := v.BoolValue(); ok {
			return b
		}
	}
	return def
}

// embed writes the token embeddings of tokens into x [T][d].
func embed(x []float32, e *kernels.Matrix, tokens []int) {
	d := e.Cols
	for t, id := range tokens {
		e.Row(x[t*d:(t+1)*d], id)
	}
}
