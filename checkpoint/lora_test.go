package checkpoint

import (
	"errors"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// TestOpenLoRA opens PEFT's own adapter (testdata/lora, saved by PEFT
// v0.12.0) from safetensors and from .bin: the same pairs, base names and
// shapes, in file order.
func TestOpenLoRA(t *testing.T) {
	var first []LoRAPair
	for _, dir := range []string{"../testdata/lora/mistral-r4/adapter", "../testdata/lora/mistral-r4/adapter-bin",
		"../testdata/lora/mistral-r4/adapter/adapter_config.json"} {
		c, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.LoRAConfig == nil {
			t.Fatalf("%s: not seen as an adapter", dir)
		}
		l, err := c.LoRA()
		if err != nil {
			t.Fatal(err)
		}
		if l.Config.R != 4 || l.Config.Alpha != 8 || l.Config.RSLoRA || len(l.Config.Targets) != 7 || l.Config.BaseModel != "mistral-headdim" {
			t.Errorf("%s: config %+v", dir, l.Config)
		}
		if len(l.Pairs) != 14 {
			t.Fatalf("%s: %d pairs, want 14 (7 modules × 2 layers)", dir, len(l.Pairs))
		}
		byBase := map[string]LoRAPair{}
		for _, p := range l.Pairs {
			byBase[p.Base] = p
			if p.Scale != 2 || p.Rank != 4 {
				t.Errorf("%s: %s: scale %g rank %d", dir, p.Base, p.Scale, p.Rank)
			}
		}
		q := byBase["model.layers.1.self_attn.q_proj.weight"]
		if q.A == nil || !q.Shape().Equal(tensor.Shape{128, 64}) || q.A.Name != "base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight" {
			t.Errorf("%s: q_proj pair %+v", dir, q)
		}
		if first == nil {
			first = l.Pairs
		} else if len(byBase) != len(first) {
			t.Errorf("%s: other pairs than the safetensors adapter's", dir)
		}
	}
}

// FuzzParseLoRAConfig: any bytes give a config or an error, never a panic,
// and a config that parses has a positive rank and a finite scale.
func FuzzParseLoRAConfig(f *testing.F) {
	f.Add([]byte(`{"peft_type":"LORA","r":4,"lora_alpha":8,"target_modules":["q_proj","v_proj"],"use_rslora":true}`))
	f.Add([]byte(`{"peft_type":"LORA","r":16,"lora_alpha":32.5,"target_modules":".*proj","rank_pattern":{"q":2}}`))
	f.Add([]byte(`{"peft_type":"LORA","r":0,"lora_alpha":8}`))
	f.Add([]byte(`{"peft_type":"IA3"}`))
	f.Add([]byte(`{"peft_type":"LORA","r":4,"lora_alpha":1e400}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseLoRAConfig(b)
		if err != nil {
			return
		}
		s := c.Scale()
		if c.R <= 0 || s != s || s > 1e308 || s < -1e308 {
			t.Fatalf("accepted r=%d scale=%g", c.R, s)
		}
		_ = c.Check()
	})
}

// TestParseLoRAConfigRefusals: not LoRA, no rank, no alpha.
func TestParseLoRAConfigRefusals(t *testing.T) {
	for _, b := range []string{`{"peft_type":"IA3","r":4,"lora_alpha":8}`, `{"peft_type":"LORA","r":0,"lora_alpha":8}`,
		`{"peft_type":"LORA","r":4}`, `{"peft_type":"LORA","r":4,"lora_alpha":"x"}`, `[1]`} {
		if _, err := ParseLoRAConfig([]byte(b)); err == nil {
			t.Errorf("%s: accepted", b)
		}
	}
	_, err := ParseLoRAConfig([]byte(`{"peft_type":"IA3"}`))
	if !errors.Is(err, tensor.ErrUnsupported) {
		t.Errorf("IA3: %v, want ErrUnsupported", err)
	}
}
