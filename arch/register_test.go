package arch

import (
	"fmt"
	"strings"
	"testing"
)

// TestRegisterTwicePanics checks that a second family with a name, a
// model_type or a config.json class already registered panics and leaves
// the registry as it was, as archive/zip.RegisterDecompressor refuses a
// second method: otherwise which family a lookup returns would depend on
// the order of the files.
func TestRegisterTwicePanics(t *testing.T) {
	for _, c := range []struct {
		f    *Family
		want string
	}{
		{&Family{Name: "llama"}, `"llama" is already the name or a model_type of llama`},
		{&Family{Name: "qwen2_moe"}, `"qwen2_moe" is already the name or a model_type of qwen2moe`},
		{&Family{Name: "newfam", ModelTypes: []string{"Mistral"}}, `"Mistral" is already the name or a model_type of llama`},
		{&Family{Name: "newfam", ModelTypes: []string{"gemma2"}}, `"gemma2" is already the name or a model_type of gemma2`},
		{&Family{Name: "newfam", HFClasses: []string{"Qwen2ForCausalLM"}}, `class "Qwen2ForCausalLM" already converts to qwen2`},
		{&Family{Name: "newfam", HFClasses: []string{"NewForCausalLM", "NewForCausalLM"}}, `class "NewForCausalLM" twice`},
	} {
		n := len(families)
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), c.want) {
					t.Errorf("register(%q): panic %v, want one saying %s", c.f.Name, r, c.want)
				}
			}()
			register(c.f)
		}()
		if len(families) != n {
			families = families[:n]
			t.Errorf("register(%q) added the family", c.f.Name)
		}
	}
}
