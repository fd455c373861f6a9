package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tfconv/tfconv/model"
)

func TestBenchCommand(t *testing.T) {
	for i, m := range []string{filepath.Join("hf-tiny", "llama"), filepath.Join("hf-tiny", "t5"), filepath.Join("gguf", "llama-Q4_K_M.gguf")} {
		// The GGUF runs three times (-r 3): the rates are their mean.
		reps := 1 + 2*(i/2)
		stdout, stderr, code := runModelCmd(t, "bench", filepath.Join(modelTestdata, m), "--prompt", "16", "--gen", "4", "--threads", "1", "--json", "--bandwidth=false",
			"-r", strconv.Itoa(reps))
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", m, code, stderr)
		}
		var got benchJSON
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatal(err)
		}
		if got.PrefillTokS <= 0 || got.DecodeTokS <= 0 || got.Threads != 1 || got.Prompt != 16 || got.Gen != 4 ||
			got.DecodeWeightBytes <= 0 || got.ReadBandwidthGBs != 0 || got.Repetitions != reps {
			t.Errorf("%s: %+v", m, got)
		}
		// One run has no spread; three have one (timings never repeat to the nanosecond).
		if sdOK := func(sd float64) bool { return (reps == 1) == (sd == 0) && sd >= 0 && !math.IsInf(sd, 0) }; !sdOK(got.PrefillSd) || !sdOK(got.DecodeSd) {
			t.Errorf("%s, %d runs: standard deviations %g, %g", m, reps, got.PrefillSd, got.DecodeSd)
		}
		if want := float64(got.DecodeWeightBytes) * got.DecodeTokS / 1e9; math.Abs(got.DecodeWeightGBs-want) > 1e-9*want {
			t.Errorf("%s: decode_weight_gb_s %g, bytes·tok/s %g", m, got.DecodeWeightGBs, want)
		}
	}
	// A LLaMA decode step multiplies by every matrix once: all the 2-D
	// tensors but the token embeddings, which it only reads a row of (this
	// GGUF has its own output.weight).
	p := filepath.Join(modelTestdata, "gguf", "llama-Q4_K_M.gguf")
	mdl, err := model.Load(p, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, ti := range mdl.Tensors {
		if len(ti.Shape) == 2 && ti.Name != "token_embd.weight" {
			want += ti.Size
		}
	}
	mdl.Close()
	stdout, stderr, code := runModelCmd(t, "bench", p, "--prompt", "4", "--gen", "3", "--threads", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got benchJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.DecodeWeightBytes != want {
		t.Errorf("decode_weight_bytes_per_token %d, the GGUF's matrices hold %d", got.DecodeWeightBytes, want)
	}
	if !(got.ReadBandwidthGBs > 0) || math.IsInf(got.ReadBandwidthGBs, 0) {
		t.Errorf("read_bandwidth_gb_s %g", got.ReadBandwidthGBs)
	}
	if _, _, code := runModelCmd(t, "bench", p, "-r", "0"); code == 0 {
		t.Error("-r 0: exit 0")
	}
	// 128 positions: a 200-token prompt does not fit.
	if _, _, code := runModelCmd(t, "bench", filepath.Join(modelTestdata, "hf-tiny", "gpt2"), "--prompt", "200"); code != exitError {
		t.Errorf("prompt beyond the context: exit %d", code)
	}
}
