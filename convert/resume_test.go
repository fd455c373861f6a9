package convert

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/tensor"
)

// resumeFixture is a plan of three shards and its identity.
func resumeFixture(t testing.TB, dir string) (resumeRecord, []gguf.Shard) {
	infos := []tensor.Info{
		{Name: "a", DType: tensor.F32, Shape: tensor.Shape{64}},
		{Name: "b", DType: tensor.F32, Shape: tensor.Shape{64}},
		{Name: "c", DType: tensor.F32, Shape: tensor.Shape{64}},
	}
	sw, err := gguf.NewSplitWriter(filepath.Join(dir, "m"), 200, nil, infos, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &checkpoint.Checkpoint{Files: []checkpoint.File{{Path: filepath.Join(dir, "src"), Size: 10}}}
	return resumeIdentity("convert", map[string]string{"outtype": "f32"}, c, sw.Shards()), sw.Shards()
}

// TestResumeRecordRefusals: a record of another plan is refused naming the
// option; one that is not a record is refused naming the file.
func TestResumeRecordRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	id, layout := resumeFixture(t, dir)
	dst := filepath.Join(dir, "m.gguf")
	o, err := openSplitOut(dst, Part{}, id, layout, true, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.save(); err != nil {
		t.Fatal(err)
	}
	other := id
	other.Options = map[string]string{"outtype": "f16"}
	if _, err := openSplitOut(dst, Part{}, other, layout, true, false, nil, nil); err == nil || !strings.Contains(err.Error(), `option outtype ("f32", now "f16")`) {
		t.Errorf("another outtype: %v", err)
	}
	if _, err := openSplitOut(dst, Part{}, id, layout, false, false, nil, nil); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("a record without --resume: %v", err)
	}
	os.WriteFile(dst+ResumeSuffix, []byte(`{"tool":"other"}`), 0o644)
	if _, err := openSplitOut(dst, Part{}, id, layout, true, false, nil, nil); err == nil || !strings.Contains(err.Error(), "not a tfconv resume record") {
		t.Errorf("a foreign record: %v", err)
	}
}

// FuzzResumeRecord: whatever the record holds, --resume returns an error or
// a start within the shards, never a panic.
func FuzzResumeRecord(f *testing.F) {
	f.Add([]byte(`{"tool":"tfconv","command":"convert","options":{"outtype":"f32"},"done":[{"name":"m-00001-of-00003.gguf","sha256":"00"}]}`))
	f.Add([]byte(`{"tool":"tfconv","done":[{"name":"../../etc/passwd"},{"name":""}]}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		id, layout := resumeFixture(t, dir)
		dst := filepath.Join(dir, "m.gguf")
		if err := os.WriteFile(dst+ResumeSuffix, b, 0o644); err != nil {
			t.Fatal(err)
		}
		o, err := openSplitOut(dst, Part{}, id, layout, true, false, nil, nil)
		if err == nil && (o.start < o.first || o.start > o.end) {
			t.Fatalf("start %d outside [%d, %d]", o.start, o.first, o.end)
		}
	})
}
