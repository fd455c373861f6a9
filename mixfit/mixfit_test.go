package mixfit

import (
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/convert"
	"github.com/tfconv/tfconv/quantize"
	"github.com/tfconv/tfconv/tensor"
)

// planFor opens the tiny llama HF fixture through convert's GGUF view (what
// quantize reads) and plans Q4_K_M.
func planFor(t *testing.T) (*checkpoint.Checkpoint, []quantize.Choice) {
	t.Helper()
	c, err := checkpoint.Open("../testdata/model/hf-tiny/llama")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	v, err := convert.Source(c, convert.Options{To: convert.GGUF, OutType: convert.OutF32})
	if err != nil {
		t.Fatal(err)
	}
	target, _ := quantize.ParseTarget("q4_k_m")
	plan, err := quantize.Plan(v, quantize.Options{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	return v, plan
}

func dataBytes(t *testing.T, plan []quantize.Choice) (int64, map[tensor.DType]int) {
	t.Helper()
	var n int64
	types := map[tensor.DType]int{}
	for _, ch := range plan {
		b := ch.Tensor.Size
		if !ch.Copy {
			var err error
			if b, err = ch.Type.ShapeBytes(ch.Tensor.Shape); err != nil {
				t.Fatal(err)
			}
		}
		n += b
		types[ch.Type]++
	}
	return n, types
}

// TestFitBudget: the mixture Fit chooses never exceeds the budget, a budget
// every tensor's Q8_0 fits gives Q8_0 everywhere (the divergence falls as
// the bits grow), the smallest budget gives the smallest types, one below
// that is refused, and the unquantized tensors keep their plan.
func TestFitBudget(t *testing.T) {
	c, plan := planFor(t)
	toks := make([]int, 64)
	for i := range toks {
		toks[i] = (i*37 + 11) % 1000
	}
	planned, _ := dataBytes(t, plan)
	for _, budget := range []int64{planned, planned * 85 / 100, planned * 3} {
		got, err := Fit(c, plan, Options{Tokens: toks, Ctx: 32, Budget: budget})
		if err != nil {
			t.Fatal(err)
		}
		n, types := dataBytes(t, got)
		if n > budget {
			t.Errorf("budget %d: %d bytes", budget, n)
		}
		for i, ch := range got {
			if ch.Type.Quantized() != plan[i].Type.Quantized() || ch.Copy != plan[i].Copy {
				t.Errorf("%s: %v from %v", ch.Tensor.Name, ch.Type, plan[i].Type)
			}
		}
		if budget == planned*3 {
			for ty, k := range types {
				if ty.Quantized() && ty != tensor.Q8_0 {
					t.Errorf("ample budget: %d tensors of %v", k, ty)
				}
			}
		}
		t.Logf("budget %d: %d bytes, %v", budget, n, types)
	}
	if _, err := Fit(c, plan, Options{Tokens: toks, Ctx: 32, Budget: planned / 10}); err == nil || !strings.Contains(err.Error(), "fit no mixture") {
		t.Errorf("tiny budget: %v", err)
	}
}

// TestHull keeps the options on the lower convex hull: dominated and
// above-the-line options go.
func TestHull(t *testing.T) {
	h := hull([]option{{tensor.Q8_0, 100, 0.1}, {tensor.Q2_K, 20, 5}, {tensor.Q3_K, 30, 2}, {tensor.Q4_K, 40, 1.9}, {tensor.Q5_K, 50, 0.5}, {tensor.Q6_K, 60, 0.6}})
	var got []tensor.DType
	for _, o := range h {
		got = append(got, o.t)
	}
	want := []tensor.DType{tensor.Q2_K, tensor.Q3_K, tensor.Q5_K, tensor.Q8_0}
	if len(got) != len(want) {
		t.Fatalf("hull %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("hull %v, want %v", got, want)
		}
	}
}

// TestFitProgress: Fit reports its model runs as it goes (quantize
// --target-bpw's calibration printed nothing for minutes): 0 of N first,
// then one step per run, ending at N of N.
func TestFitProgress(t *testing.T) {
	c, plan := planFor(t)
	toks := make([]int, 33)
	for i := range toks {
		toks[i] = (i*37 + 11) % 1000
	}
	planned, _ := dataBytes(t, plan)
	var calls [][2]int64
	_, err := Fit(c, plan, Options{Tokens: toks, Ctx: 32, Budget: planned,
		Progress: func(done, total int64) { calls = append(calls, [2]int64{done, total}) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) < 3 {
		t.Fatalf("%d progress calls: %v", len(calls), calls)
	}
	total := calls[0][1]
	for i, c := range calls {
		if c[0] != int64(i) || c[1] != total {
			t.Fatalf("call %d: %d of %d, want %d of %d (all: %v)", i, c[0], c[1], i, total, calls)
		}
	}
	if last := calls[len(calls)-1]; last[0] != total {
		t.Errorf("last call %d of %d: not finished", last[0], last[1])
	}
}
