package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/check"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/imatrix"
	"github.com/tfconv/tfconv/internal/httprange"
	"github.com/tfconv/tfconv/internal/output"
	"github.com/tfconv/tfconv/model"
	"github.com/tfconv/tfconv/tensor"
)

// inspectArraySummary is how many elements of a long metadata array are shown
// without --full, and the length above which an array counts as long.
const inspectArraySummary = 8

type inspectOptions struct {
	path     string
	tensors  bool
	metadata bool
	full     bool
	json     bool
	ctx      int64
	kvType   string
	batch    int64
	ubatch   int64
	parallel int64
	report   string
	force    bool
}

func newCmdInspect(a *app) *cobra.Command {
	opts := &inspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect PATH|URL",
		Short: "Summarize a checkpoint: architecture, parameters, dtypes, layers",
		Long: `Inspect reads only the headers of a checkpoint (a safetensors file, a Hugging Face
directory, a PyTorch .bin file or sharded set, a GGUF file or split set, or a
native .tfn file) and prints a summary
and a per-layer table. --tensors lists every tensor, --metadata every metadata
entry (long arrays shortened unless --full). --json prints everything.
PATH may be an http(s) URL or hf://ORG/REPO[@REV]/FILE of one GGUF or
safetensors file: only its header is fetched, with range requests (HF_TOKEN
is sent to the Hub only), and the bytes fetched are said on stderr.
--ctx N adds what llama.cpp allocates to run the model at N positions on the
CPU: the weights and the KV cache (--kv-type f16, q8_0, q4_0 or f32) as its
llama_kv_cache_init sizes them, the output buffer (logits for --parallel
sequences) and an estimate of the compute buffer for a physical batch of
--ubatch tokens (at most --batch and the context), as llama.cpp's -c, -ctk,
-b, -ub and -np set them.
--report FILE also writes a self-contained HTML page (no network): the
summary, memory at 2k, 8k, 32k and 128k positions (KV cache f16), parameters
by layer and by tensor kind, a layer × tensor-kind map of types, and the
tensors and metadata in tables sorted by a click and filtered by text.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.path = args[0]
			return runInspect(a, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.tensors, "tensors", false, "list every tensor (name, dtype, shape, parameters, bytes, offset from the start of its file)")
	cmd.Flags().BoolVar(&opts.metadata, "metadata", false, "list the metadata entries")
	cmd.Flags().BoolVar(&opts.full, "full", false, "print long metadata arrays whole")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON (schema in the README)")
	cmd.Flags().Int64Var(&opts.ctx, "ctx", 0, "estimate memory at this context length (weights + KV cache)")
	cmd.Flags().StringVar(&opts.kvType, "kv-type", "f16", "KV cache type for --ctx: f16|q8_0|q4_0|f32")
	cmd.Flags().Int64Var(&opts.batch, "batch", 2048, "logical batch for --ctx (llama.cpp -b, --batch-size)")
	cmd.Flags().Int64Var(&opts.ubatch, "ubatch", 512, "physical batch for --ctx: the tokens of the compute graph (llama.cpp -ub, --ubatch-size)")
	cmd.Flags().Int64Var(&opts.parallel, "parallel", 1, "sequences for --ctx, sharing the cache (llama.cpp -np)")
	cmd.Flags().StringVar(&opts.report, "report", "", "write a self-contained HTML page to FILE (summary, memory at 2k-128k, parameters by layer and kind, a layer × kind map of types, tensors, metadata)")
	cmd.Flags().BoolVar(&opts.force, "force", false, "replace an existing --report file")
	cmd.Flags().SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		switch name { // llama.cpp's long names
		case "batch-size":
			name = "batch"
		case "ubatch-size":
			name = "ubatch"
		}
		return pflag.NormalizedName(name)
	})
	addTokenFlag(cmd)
	return cmd
}

// inspectJSON is the --json schema of inspect; fields are only ever added.
type inspectJSON struct {
	Path string `json:"path"`
	*checkpoint.Summary
	Tensors       []tensorJSON       `json:"tensors"`
	Metadata      map[string]any     `json:"metadata"`
	MetadataTypes map[string]string  `json:"metadata_types"`
	Config        map[string]any     `json:"config,omitempty"`
	SideFiles     []string           `json:"side_files"`
	Support       *supportJSON       `json:"support,omitempty"`
	Memory        *checkpoint.Memory `json:"memory,omitempty"`
	// Warnings are check's findings on what the reader accepted but
	// llama.cpp refuses (a GGUF tensor with a 0 dimension), as check
	// --json gives them.
	Warnings []checkFindingJSON  `json:"warnings"`
	Imatrix  *inspectImatrixJSON `json:"imatrix,omitempty"`
}

// inspectImatrixJSON summarizes an importance matrix (general.type "imatrix").
type inspectImatrixJSON struct {
	Datasets   []string `json:"datasets"`
	ChunkCount int      `json:"chunk_count"`
	ChunkSize  int      `json:"chunk_size"`
	Entries    int      `json:"entries"`
}

func imatrixSummary(im *imatrix.Matrix) *inspectImatrixJSON {
	if im == nil {
		return nil
	}
	return &inspectImatrixJSON{Datasets: im.Datasets, ChunkCount: im.ChunkCount, ChunkSize: im.ChunkSize, Entries: len(im.Entries)}
}

// contextKey names where the trained context length came from.
func contextKey(s *checkpoint.Summary) string {
	if s.Format == checkpoint.GGUF {
		return s.Architecture + ".context_length"
	}
	return "config.json max_position_embeddings"
}

// supportJSON says what tfconv does with the checkpoint's architecture,
// from the registries the code itself uses.
type supportJSON struct {
	Convert bool `json:"convert"` // HF ↔ GGUF conversion
	Run     bool `json:"run"`     // run, generate, verify, perplexity
}

// support looks the architecture up in arch's families (a GGUF form:
// convert writes it) and model's loaders.
func support(archName string) *supportJSON {
	if archName == "" {
		return nil
	}
	_, err := arch.Lookup(archName)
	hf, gguf := model.Architectures()
	return &supportJSON{Convert: err == nil, Run: slices.Contains(hf, archName) || slices.Contains(gguf, archName)}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

type tensorJSON struct {
	Name   string  `json:"name"`
	DType  string  `json:"dtype"`
	Shape  []int64 `json:"shape"`
	Params int64   `json:"params"`
	Bytes  int64   `json:"bytes"`
	Offset int64   `json:"offset"`
	File   string  `json:"file"`
}

func runInspect(a *app, opts *inspectOptions) error {
	c, err := checkpoint.Open(opts.path)
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := checkpoint.Summarize(c)
	if err != nil {
		return err
	}
	var mem *checkpoint.Memory
	if opts.ctx != 0 {
		kv, ok := tensor.Parse(opts.kvType)
		if !ok {
			return fmt.Errorf("inspect: --kv-type %q: want f16, q8_0, q4_0 or f32", opts.kvType)
		}
		for _, f := range []struct {
			name string
			v    int64
		}{{"batch", opts.batch}, {"ubatch", opts.ubatch}, {"parallel", opts.parallel}} {
			if f.v <= 0 {
				return fmt.Errorf("inspect: --%s %d: want 1 or more", f.name, f.v)
			}
		}
		mo := checkpoint.MemoryOptions{Context: opts.ctx, KVType: kv, Batch: opts.batch, UBatch: opts.ubatch, Parallel: opts.parallel}
		if mem, err = s.EstimateMemory(mo); err != nil {
			return fmt.Errorf("inspect: %s: %w", opts.path, err)
		}
	}
	// What the reader accepts but llama.cpp refuses, in check's words.
	for _, p := range c.Lints {
		f := check.GGUFLint(p)
		where := f.File
		if f.Offset >= 0 {
			where += fmt.Sprintf(": offset %d", f.Offset)
		}
		if f.Item != "" {
			where += ": " + f.Item
		}
		fmt.Fprintf(a.err, "tfconv: inspect: warning: %s: %s (check reports %s %s)\n", where, f.Message, f.Severity, f.Rule)
	}
	defer func() {
		if n, ok := c.Fetched(); ok {
			fmt.Fprintf(a.err, "tfconv: inspect: fetched %d of %d bytes (%.3f%%) with range requests\n", n, s.FileSize, 100*float64(n)/float64(max(s.FileSize, 1)))
		}
	}()
	var im *imatrix.Matrix
	if s.Type == "imatrix" && !httprange.IsRemote(opts.path) {
		// imatrix owns that format's parsing; the summary is its own (it
		// reads the counts: an imatrix is a few MB).
		if im, err = imatrix.Open(opts.path); err != nil {
			return fmt.Errorf("inspect: %w", err)
		}
	}
	if mem != nil && s.Context > 0 && opts.ctx > s.Context {
		fmt.Fprintf(a.err, "tfconv: inspect: warning: --ctx %d exceeds the %d positions the model was trained on (%s); quality past them is not what the model learnt, unless RoPE scaling is set up for it\n",
			opts.ctx, s.Context, contextKey(s))
	}
	if opts.report != "" {
		j, err := inspectData(opts, c, s, mem, im)
		if err != nil {
			return err
		}
		if err := writeInspectReport(opts.report, opts.force, inspectPage(j, s, opts)); err != nil {
			return fmt.Errorf("inspect: %w", err)
		}
	}
	if opts.json {
		return inspectWriteJSON(a, opts, c, s, mem, im)
	}
	return inspectPrint(a.out, opts, c, s, mem, im)
}

// inspectPrint writes the human report: the summary, the dtype and layer
// tables, and with --tensors / --metadata those lists.
func inspectPrint(w io.Writer, opts *inspectOptions, c *checkpoint.Checkpoint, s *checkpoint.Summary, mem *checkpoint.Memory, im *imatrix.Matrix) error {
	fmt.Fprintf(w, "%s: %s", opts.path, s.Format)
	if s.Source != "" {
		fmt.Fprintf(w, " (from %s)", s.Source)
	}
	fmt.Fprintln(w)
	t := output.NewTable("property", "value")
	if s.Type != "" {
		t.Row("type", inspectTypeText(s.Type))
	}
	if s.FileType != "" {
		t.Row("file type", s.FileType)
	}
	switch {
	case im != nil:
		inspectImatrixRows(t, im)
	case s.Type == "imatrix": // a URL: only the header was fetched
		t.Row("entries", fmt.Sprintf("%d tensors (an in_sum2 and a counts tensor per weight)", s.Tensors))
	case s.Projector != nil && s.Type == "mmproj":
		inspectProjectorRows(t, s)
	default:
		inspectModelRows(t, s, mem)
		if s.Projector != nil {
			// A multimodal checkpoint: its tower, as its mmproj would hold it.
			inspectTowerRows(t, s.Projector)
		}
	}
	if err := t.Render(w); err != nil {
		return err
	}

	fmt.Fprintln(w)
	dt := output.NewTable("dtype", "tensors", "parameters", "bytes", "bits/weight")
	for _, d := range s.DTypes {
		bpw := 0.0
		if d.Params > 0 {
			bpw = float64(d.Bytes) * 8 / float64(d.Params)
		}
		dt.Row(d.DType, d.Tensors, d.Params, d.Bytes, fmt.Sprintf("%.3f", bpw))
	}
	if err := dt.Render(w); err != nil {
		return err
	}

	fmt.Fprintln(w)
	lt := output.NewTable("layer", "tensors", "parameters", "bytes", "dtypes")
	for _, l := range s.LayerTable {
		name := "other"
		if l.Layer >= 0 {
			name = fmt.Sprint(l.Layer)
			if l.Stack != "" {
				name = l.Stack + "." + name
			}
		}
		lt.Row(name, l.Tensors, l.Params, l.Bytes, strings.Join(l.DTypes, ","))
	}
	if err := lt.Render(w); err != nil {
		return err
	}

	if opts.tensors {
		fmt.Fprintln(w)
		tt := output.NewTable("name", "dtype", "shape", "parameters", "bytes", "file offset")
		for _, x := range c.Tensors {
			tt.Row(x.Name, x.DType, x.Shape, x.NumElements(), x.Size, x.Offset)
		}
		if err := tt.Render(w); err != nil {
			return err
		}
	}
	if opts.metadata {
		fmt.Fprintln(w)
		mt := output.NewTable("key", "type", "value")
		for _, kv := range c.Metadata {
			mt.Row(kv.Key, typeName(kv.Value), formatValue(kv.Value, opts.full))
		}
		if err := mt.Render(w); err != nil {
			return err
		}
		if names := c.AuxNames(); len(names) > 0 {
			fmt.Fprintf(w, "\nside files: %s\n", strings.Join(names, ", "))
		}
	}
	return nil
}

// inspectModelRows are the summary rows of a model (or a LoRA adapter).
func inspectModelRows(t *output.Table, s *checkpoint.Summary, mem *checkpoint.Memory) {
	if ad := s.Adapter; ad != nil {
		scale := fmt.Sprintf("alpha/rank = %g", ad.Scale)
		if ad.RSLoRA {
			scale = fmt.Sprintf("alpha/√rank = %g (rsLoRA)", ad.Scale)
		}
		targets := strings.Join(ad.Targets, ", ")
		if ad.TargetsRegex {
			targets = "regex " + targets
		}
		kind := "PEFT LoRA"
		if s.Format == checkpoint.GGUF {
			kind = "LoRA GGUF (llama.cpp --lora)"
		}
		t.Row("adapter", kind)
		t.Row("rank / alpha", fmt.Sprintf("%d / %g", ad.Rank, ad.Alpha))
		t.Row("scale", scale)
		t.Row("targets", orDash(targets))
		t.Row("weights adapted", ad.Pairs)
		t.Row("base model", orDash(ad.BaseModel))
		if ad.Unsupported != "" {
			t.Row("tfconv support", "no: "+ad.Unsupported)
		}
	}
	t.Row("architecture", orDash(s.Architecture))
	if sup := support(s.Architecture); sup != nil {
		t.Row("tfconv support", fmt.Sprintf("convert %s, run %s", yesNo(sup.Convert), yesNo(sup.Run)))
	}
	layers := intOrDash(int64(s.Layers))
	if s.EncoderLayers > 0 || s.DecoderLayers > 0 {
		layers = fmt.Sprintf("%d (encoder %d, decoder %d)", s.Layers, s.EncoderLayers, s.DecoderLayers)
	}
	t.Row("layers", layers)
	if row := layerPatternRow(s.LayerPattern); row != "" {
		t.Row("layer pattern", row)
	}
	if s.Type != "adapter" { // an adapter GGUF states none of these
		t.Row("hidden size", intOrDash(s.Hidden))
		t.Row("heads / kv heads", fmt.Sprintf("%s / %s", intOrDash(s.Heads), intOrDash(s.KVHeads)))
		t.Row("vocab", intOrDash(s.Vocab))
		t.Row("context", intOrDash(s.Context))
	}
	t.Row("parameters", fmt.Sprintf("%d (%s)", s.Params, output.Count(s.Params)))
	if s.Experts > 0 {
		t.Row("experts", fmt.Sprintf("%d, %d used per token", s.Experts, s.ExpertsUsed))
		t.Row("expert parameters", fmt.Sprintf("%d (%s), %s of weights", s.ExpertParams, output.Count(s.ExpertParams), output.Bytes(s.ExpertBytes)))
		if s.ActiveParams > 0 {
			t.Row("active parameters", fmt.Sprintf("%d (%s) per token", s.ActiveParams, output.Count(s.ActiveParams)))
		}
	}
	t.Row("tensors", s.Tensors)
	t.Row("tensor bytes", fmt.Sprintf("%d (%s)", s.TensorBytes, output.Bytes(s.TensorBytes)))
	t.Row("bits per weight", fmt.Sprintf("%.3f", s.BitsPerWeight))
	t.Row("file size", fmt.Sprintf("%d (%s) in %d file(s)", s.FileSize, output.Bytes(s.FileSize), s.Files))
	if q := s.Quantized; q != nil {
		row := fmt.Sprintf("%s: %s; %d weights listed as the floats they dequantize to", q.Method, q.Scheme, q.Layers)
		if q.Dropped > 0 {
			row += fmt.Sprintf("; %d activation scales left out", q.Dropped)
		}
		t.Row("quantized weights", row)
	}
	if mem != nil {
		t.Row("context (KV cache)", fmt.Sprintf("%d positions (cache of %d), %s", mem.Context, mem.KVSize, mem.KVType))
		t.Row("KV cache", fmt.Sprintf("%d (%s): K %s, V %s", mem.KVBytes, output.Bytes(mem.KVBytes), output.Bytes(mem.KBytes), output.Bytes(mem.VBytes)))
		if mem.RSBytes > 0 {
			t.Row("recurrent state", fmt.Sprintf("%d (%s): %d sequence(s), any context", mem.RSBytes, output.Bytes(mem.RSBytes), mem.Parallel))
			t.Row("weights + KV cache + state", fmt.Sprintf("%d (%s)", mem.TotalBytes, output.Bytes(mem.TotalBytes)))
		} else {
			t.Row("weights + KV cache", fmt.Sprintf("%d (%s)", mem.TotalBytes, output.Bytes(mem.TotalBytes)))
		}
		t.Row("output buffer", fmt.Sprintf("%d (%s): logits of %d sequence(s)", mem.OutputBytes, output.Bytes(mem.OutputBytes), mem.Parallel))
		attn := "scores materialised"
		if mem.FlashAttention {
			attn = "flash attention"
		}
		t.Row("compute buffer (estimate)", fmt.Sprintf("%d (%s): batch of %d tokens, %s", mem.ComputeBytes, output.Bytes(mem.ComputeBytes), mem.UBatch, attn))
		t.Row("total to run", fmt.Sprintf("%d (%s)", mem.RunBytes, output.Bytes(mem.RunBytes)))
	}
}

// inspectTypeText says what general.type means.
func inspectTypeText(typ string) string {
	switch typ {
	case "model":
		return "model"
	case "adapter":
		return "adapter (LoRA: applied to a base model, not run alone)"
	case "imatrix":
		return "imatrix (importance matrix for quantize --imatrix, not a model)"
	case "mmproj":
		return "mmproj (multimodal projector: the vision/audio encoder beside a language model)"
	}
	return typ
}

// inspectImatrixRows are the summary rows of an importance matrix.
func inspectImatrixRows(t *output.Table, im *imatrix.Matrix) {
	t.Row("datasets", orDash(strings.Join(im.Datasets, ", ")))
	chunks := "-"
	if im.ChunkCount > 0 {
		chunks = fmt.Sprint(im.ChunkCount)
		if im.ChunkSize > 0 {
			chunks += fmt.Sprintf(" of %d tokens", im.ChunkSize)
		}
	}
	t.Row("chunks", chunks)
	t.Row("entries", fmt.Sprintf("%d weights", len(im.Entries)))
	if len(im.Entries) > 0 {
		t.Row("first / last entry", im.Entries[0].Name+" / "+im.Entries[len(im.Entries)-1].Name)
	}
}

// inspectProjectorRows are the summary rows of a multimodal projector.
func inspectProjectorRows(t *output.Table, s *checkpoint.Summary) {
	inspectTowerRows(t, s.Projector)
	t.Row("parameters", fmt.Sprintf("%d (%s)", s.Params, output.Count(s.Params)))
	t.Row("tensors", s.Tensors)
	t.Row("file size", fmt.Sprintf("%d (%s) in %d file(s)", s.FileSize, output.Bytes(s.FileSize), s.Files))
}

// inspectTowerRows are the rows of a vision/audio tower and its projector
// (an mmproj's, or a multimodal checkpoint's).
func inspectTowerRows(t *output.Table, p *checkpoint.ProjectorSummary) {
	t.Row("projector type", orDash(p.ProjectorType))
	if p.Summary != "" {
		t.Row("projector", p.Summary)
	}
	var enc []string
	if p.HasVision {
		enc = append(enc, "vision")
	}
	if p.HasAudio {
		enc = append(enc, "audio")
	}
	t.Row("encoders", orDash(strings.Join(enc, ", ")))
	t.Row("image size", intOrDash(p.ImageSize))
	t.Row("patch size", intOrDash(p.PatchSize))
	t.Row("vision layers", intOrDash(p.VisionLayers))
	t.Row("vision width", intOrDash(p.VisionWidth))
	if p.VisionHeads > 0 {
		t.Row("vision heads", p.VisionHeads)
	}
	t.Row("projection dim", intOrDash(p.ProjectionDim))
	if p.TokensPerImage > 0 {
		t.Row("tokens per image", p.TokensPerImage)
	}
	if p.AudioLayers > 0 {
		t.Row("audio layers", p.AudioLayers)
	}
}

func inspectWriteJSON(a *app, opts *inspectOptions, c *checkpoint.Checkpoint, s *checkpoint.Summary, mem *checkpoint.Memory, im *imatrix.Matrix) error {
	j, err := inspectData(opts, c, s, mem, im)
	if err != nil {
		return err
	}
	return output.JSON(a.out, j)
}

// inspectData is what --json prints (and the --report page embeds).
func inspectData(opts *inspectOptions, c *checkpoint.Checkpoint, s *checkpoint.Summary, mem *checkpoint.Memory, im *imatrix.Matrix) (*inspectJSON, error) {
	j := &inspectJSON{Path: opts.path, Summary: s, Memory: mem, Imatrix: imatrixSummary(im),
		Tensors:       make([]tensorJSON, 0, len(c.Tensors)),
		Metadata:      make(map[string]any, len(c.Metadata)),
		MetadataTypes: make(map[string]string, len(c.Metadata)),
		SideFiles:     c.AuxNames(),
		Support:       support(s.Architecture),
		Warnings:      []checkFindingJSON{},
	}
	for _, p := range c.Lints {
		j.Warnings = append(j.Warnings, findingJSON(check.GGUFLint(p)))
	}
	if j.SideFiles == nil {
		j.SideFiles = []string{}
	}
	for _, x := range c.Tensors {
		shape := []int64(x.Shape)
		if shape == nil {
			shape = []int64{}
		}
		j.Tensors = append(j.Tensors, tensorJSON{Name: x.Name, DType: x.DType.String(), Shape: shape,
			Params: x.NumElements(), Bytes: x.Size, Offset: x.Offset, File: x.File})
	}
	for _, kv := range c.Metadata {
		j.Metadata[kv.Key] = jsonValue(kv.Value, opts.full)
		j.MetadataTypes[kv.Key] = typeName(kv.Value)
	}
	cfg, err := c.Config()
	if err != nil {
		return nil, err
	}
	j.Config = cfg
	return j, nil
}

// typeName names a value's type: "uint32", "string", "array[string]".
func typeName(v tensor.Value) string {
	if arr, ok := v.Array(); ok {
		if arr.Elem == tensor.KindArray && arr.Len() > 0 {
			return "array[" + typeName(arr.Index(0)) + "]"
		}
		return "array[" + arr.Elem.String() + "]"
	}
	return v.Kind().String()
}

// formatValue prints a value for the metadata table, shortening long arrays
// unless full is set.
func formatValue(v tensor.Value, full bool) string {
	arr, ok := v.Array()
	if !ok {
		return v.String()
	}
	n := arr.Len()
	shown := n
	if !full && n > inspectArraySummary {
		shown = inspectArraySummary
	}
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < shown; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(formatValue(arr.Index(i), full))
	}
	if shown < n {
		fmt.Fprintf(&b, ", … (%d in all)", n)
	}
	b.WriteByte(']')
	return b.String()
}

// arraySummaryJSON stands for a long array in --json output without --full.
type arraySummaryJSON struct {
	Type  string `json:"type"`
	Len   int    `json:"len"`
	First []any  `json:"first"`
}

func jsonValue(v tensor.Value, full bool) any {
	arr, ok := v.Array()
	if !ok || full || arr.Len() <= inspectArraySummary {
		return v
	}
	s := arraySummaryJSON{Type: typeName(v), Len: arr.Len()}
	for i := 0; i < inspectArraySummary; i++ {
		s.First = append(s.First, arr.Index(i))
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func intOrDash(n int64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// layerPatternRow says which layers differ in what they compute: each
// attention reach with its layers, then the layers without RoPE and those
// with experts; "" when every layer is alike.
func layerPatternRow(ls []checkpoint.LayerKind) string {
	if len(ls) == 0 {
		return ""
	}
	var order []string
	byKind := map[string][]int{}
	var noRope, moe []int
	plain := true // every layer attends
	for _, l := range ls {
		m, ok := arch.ParseMixer(l.Mixer)
		attends := !ok || m.Attention()
		plain = plain && attends
		k := l.Mixer
		if l.Window > 0 {
			k = fmt.Sprintf("%s (%d)", l.Mixer, l.Window)
		}
		if byKind[k] == nil {
			order = append(order, k)
		}
		byKind[k] = append(byKind[k], l.Layer)
		if !l.Rope && !l.Recurrent && l.Mixer != "none" {
			noRope = append(noRope, l.Layer) // only attention rotates
		}
		if l.MoE {
			moe = append(moe, l.Layer)
		}
	}
	if len(order) == 1 && !ls[0].Recurrent && (len(noRope) == 0 || len(noRope) == len(ls)) && (len(moe) == 0 || len(moe) == len(ls)) {
		return ""
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, k+": "+layerRanges(byKind[k]))
	}
	if len(noRope) > 0 {
		parts = append(parts, "no RoPE: "+layerRanges(noRope))
	}
	if len(moe) > 0 {
		parts = append(parts, "experts: "+layerRanges(moe))
	}
	return strings.Join(parts, "; ")
}

// layerRanges writes ascending layer numbers as ranges: "0-3,5,7-9", or
// "0-24/2" for every second layer from 0 to 24.
func layerRanges(xs []int) string {
	if n := len(xs); n > 2 && xs[1]-xs[0] > 1 {
		step, even := xs[1]-xs[0], true
		for i := 2; i < n && even; i++ {
			even = xs[i]-xs[i-1] == step
		}
		if even {
			return fmt.Sprintf("%d-%d/%d", xs[0], xs[n-1], step)
		}
	}
	var b strings.Builder
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", xs[i], xs[j])
		} else {
			fmt.Fprintf(&b, "%d", xs[i])
		}
		i = j + 1
	}
	return b.String()
}
