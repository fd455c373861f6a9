package quantize

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// recorder is a Sink that keeps every body, in the order they come.
type recorder struct {
	names  []string
	bodies map[string]*bytes.Buffer
	fail   string // Next of this name fails
}

func (r *recorder) Next(name string) (io.Writer, error) {
	if name == r.fail {
		return nil, errors.New("disk full")
	}
	if r.bodies == nil {
		r.bodies = map[string]*bytes.Buffer{}
	}
	r.names = append(r.names, name)
	r.bodies[name] = &bytes.Buffer{}
	return r.bodies[name], nil
}

func randWeights(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 0.02)
	}
	return x
}

func f16Tensor(name string, shape tensor.Shape, x []float32) *checkpoint.Tensor {
	b := make([]byte, 2*len(x))
	quant.EncodeF16Bytes(b, x)
	return checkpoint.MemTensor(tensor.Info{Name: name, DType: tensor.F16, Shape: shape}, b)
}

func f32Tensor(name string, shape tensor.Shape, x []float32) *checkpoint.Tensor {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return checkpoint.MemTensor(tensor.Info{Name: name, DType: tensor.F32, Shape: shape}, b)
}

// TestRunChunks streams tensors several chunks long (rows and copies, a
// stacked weight with one importance entry per matrix, int8 rows with their
// scale companion) with 1 to 5 workers, and checks every body against the
// quant package's encoders run on the whole tensor at once, the order of
// the bodies, and that the report does not depend on the worker count.
func TestRunChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const cols = 256
	rowsQ4 := 2*chunkElems/cols + 517 // two chunks and a bit
	xq4 := randWeights(r, rowsQ4*cols)
	// the f16 input's values are what gets quantized
	h := make([]byte, 2*len(xq4))
	quant.EncodeF16Bytes(h, xq4)
	quant.DecodeF16Bytes(xq4, h)

	const mats, matRows = 3, 700
	xq6 := randWeights(r, mats*matRows*cols)
	imp := make([]float32, mats*cols)
	for i := range imp {
		imp[i] = float32(r.ExpFloat64())
	}
	norm := randWeights(r, copyChunk/4*2+33) // a copy of three chunks
	xi8 := randWeights(r, 1500*cols)

	plan := []Choice{
		{Tensor: f16Tensor("q4", tensor.Shape{int64(rowsQ4), cols}, xq4), Type: tensor.Q4_K},
		{Tensor: f32Tensor("norm", tensor.Shape{int64(len(norm))}, norm), Type: tensor.F32, Copy: true},
		{Tensor: f32Tensor("q6", tensor.Shape{mats, matRows, cols}, xq6), Type: tensor.Q6_K, Importance: imp},
		{Tensor: f32Tensor("i8", tensor.Shape{1500, cols}, xi8), Type: tensor.I8},
		{Tensor: f32Tensor("empty", tensor.Shape{0, cols}, nil), Type: tensor.Q8_0},
	}

	want := map[string][]byte{}
	want["q4"] = make([]byte, rowsQ4*cols/256*144)
	if err := quant.Quantize(want["q4"], xq4, tensor.Q4_K); err != nil {
		t.Fatal(err)
	}
	want["norm"], _ = plan[1].Tensor.ReadAll()
	per := matRows * cols / 256 * 210
	want["q6"] = make([]byte, mats*per)
	for m := range mats {
		if err := quant.QuantizeRows(want["q6"][m*per:(m+1)*per], xq6[m*matRows*cols:(m+1)*matRows*cols], tensor.Q6_K, cols, imp[m*cols:(m+1)*cols]); err != nil {
			t.Fatal(err)
		}
	}
	q := make([]int8, len(xi8))
	sc := make([]float32, 1500)
	if err := quant.QuantizeInt8Rows(q, sc, xi8, 1500, cols); err != nil {
		t.Fatal(err)
	}
	want["i8"] = make([]byte, len(q))
	for i, v := range q {
		want["i8"][i] = byte(v)
	}
	want["i8"+tensor.ScaleSuffix] = make([]byte, 4*len(sc))
	for i, v := range sc {
		binary.LittleEndian.PutUint32(want["i8"+tensor.ScaleSuffix][4*i:], math.Float32bits(v))
	}
	want["empty"] = []byte{}

	var first *Report
	for _, threads := range []int{1, 2, 5} {
		var rec recorder
		var progress []string
		rep, err := Run(plan, &rec, RunOptions{Threads: threads, Progress: func(i, n int, name string) {
			progress = append(progress, fmt.Sprintf("%d/%d %s", i, n, name))
		}})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, in := range OutputInfos(plan) {
			names = append(names, in.Name)
		}
		if strings.Join(rec.names, " ") != strings.Join(names, " ") {
			t.Fatalf("threads %d: bodies %v, want %v", threads, rec.names, names)
		}
		if p := strings.Join(progress, ", "); p != "0/5 q4, 1/5 norm, 2/5 q6, 3/5 i8, 4/5 empty" {
			t.Errorf("threads %d: progress %s", threads, p)
		}
		for name, w := range want {
			if got := rec.bodies[name].Bytes(); !bytes.Equal(got, w) {
				t.Fatalf("threads %d: %s: %d bytes differ from the whole-tensor encoding (%d bytes)", threads, name, len(got), len(w))
			}
		}
		if rep.Tensors[0].SQNR < 10 || rep.Tensors[0].Bytes != int64(len(want["q4"])) || rep.Tensors[3].Bytes != int64(len(q)+4*len(sc)) {
			t.Errorf("threads %d: report %+v", threads, rep.Tensors)
		}
		if first == nil {
			first = rep
			continue
		}
		for i := range rep.Tensors {
			a, b := rep.Tensors[i], first.Tensors[i]
			if a.RMSE != b.RMSE && !(math.IsNaN(a.RMSE) && math.IsNaN(b.RMSE)) || a.MaxAbs != b.MaxAbs || a.SQNR != b.SQNR {
				t.Errorf("threads %d: %s: %+v, with 1 worker %+v", threads, a.Name, a, b)
			}
		}
	}
}

// TestRunErrors: an error anywhere in the stream (a tensor that cannot be
// read, a sink that refuses a body) comes back from Run, naming the tensor,
// after the tensors before it were written.
func TestRunErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := randWeights(r, 3*chunkElems)
	good := f16Tensor("good", tensor.Shape{int64(len(x)) / 512, 512}, x)
	info := tensor.Info{Name: "bad", DType: tensor.F16, Shape: tensor.Shape{4, 512}}
	info.Size = 4 * 512 * 2
	bad := checkpoint.LazyTensor(info, "bad.gguf", func() ([]byte, error) { return nil, errors.New("read error") })
	plan := []Choice{{Tensor: good, Type: tensor.Q4_K}, {Tensor: bad, Type: tensor.Q4_K}, {Tensor: good, Type: tensor.Q8_0}}
	for _, threads := range []int{1, 3} {
		var rec recorder
		_, err := Run(plan, &rec, RunOptions{Threads: threads})
		if err == nil || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), "read error") {
			t.Errorf("threads %d: %v", threads, err)
		}
		if len(rec.names) != 1 || rec.bodies["good"].Len() != len(x)/256*144 {
			t.Errorf("threads %d: wrote %v", threads, rec.names)
		}
		rec = recorder{fail: "good"}
		if _, err := Run(plan, &rec, RunOptions{Threads: threads}); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("threads %d: failing sink: %v", threads, err)
		}
	}
}
