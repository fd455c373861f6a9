package convert

import (
	"fmt"
	"strings"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/internal/directio"
	"github.com/tfconv/tfconv/quantize"
	"github.com/tfconv/tfconv/tensor"
)

// PlanOptions choose the run PlanOutput plans: tfconv quantize when Type is
// set, else tfconv convert (OutType).
type PlanOptions struct {
	// Type is quantize's --type (a quantize.ParseTarget name).
	Type string
	// OutType is convert's --outtype.
	OutType string
	// SplitMaxBytes is --split-max-size (0: one file).
	SplitMaxBytes int64
	// Part is --part: which shards the plan marks as written.
	Part Part
	// Threads is quantize's worker count (0: GOMAXPROCS), for the memory
	// its buffers take.
	Threads int
}

// OutputPlan is the whole output of a convert or quantize run, worked out
// from the source's headers alone: the files, which tensors each holds, with
// their types and byte sizes (exact: they are laid out by the code that
// writes them), and the predicted peak memory, disk and time.
type OutputPlan struct {
	Source  string         `json:"source"`
	Command string         `json:"command"` // "convert" or "quantize"
	Type    string         `json:"type"`    // the outtype or quantization type
	Output  string         `json:"output"`
	Part    string         `json:"part,omitempty"`
	Shards  []PlannedShard `json:"shards"`
	Tensors int            `json:"tensors"`
	// OutputBytes is the size of every file together; DiskBytes what this
	// run (its part) writes to disk.
	OutputBytes int64 `json:"output_bytes"`
	DiskBytes   int64 `json:"disk_bytes"`
	// SourceBytes is the tensor data this run reads.
	SourceBytes int64 `json:"source_bytes"`
	// PeakRAMBytes is the predicted peak resident memory (PeakRAM).
	PeakRAMBytes int64 `json:"peak_ram_bytes"`
	// Seconds is the predicted time: SourceBytes at ThroughputBytesPerSec.
	Seconds               float64 `json:"seconds"`
	ThroughputBytesPerSec float64 `json:"throughput_bytes_per_sec"`
}

// PlannedShard is one output file.
type PlannedShard struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
	// Part is the part (from 1) that writes the shard with --part N; 0
	// without one. Write says whether this run writes it.
	Part    int             `json:"part,omitempty"`
	Write   bool            `json:"write"`
	Tensors []PlannedTensor `json:"tensors"`
}

// PlannedTensor is one tensor of a shard.
type PlannedTensor struct {
	Name   string       `json:"name"`
	Type   string       `json:"type"`
	Shape  tensor.Shape `json:"shape"`
	Offset int64        `json:"offset"` // from the start of the shard's data section
	Bytes  int64        `json:"bytes"`
	// SourceBytes is what is read for it.
	SourceBytes int64 `json:"source_bytes"`
}

// PlanOutput plans the GGUF output convert (or quantize, with o.Type) would
// write from src to dst, reading only headers (src local or remote, as
// checkpoint.Open reads it; nothing is written, DST not looked at). dst ""
// is convert's default name, or "model-TYPE.gguf" for quantize.
func PlanOutput(src, dst string, o PlanOptions) (*OutputPlan, error) {
	out := &OutputPlan{Source: src, Part: o.Part.String()}
	var layout []gguf.Shard
	srcBytes := map[string]int64{} // output tensor → source bytes read for it
	var mem memModel
	if o.Type != "" {
		target, err := quantize.ParseTarget(o.Type)
		if err != nil {
			return nil, err
		}
		if dst == "" {
			dst = "model-" + strings.ToLower(target.Name) + ".gguf"
		}
		rep, err := Quantize(src, dst, QuantizeOptions{Options: quantize.Options{Target: target}, Format: quantize.GGUF,
			SplitMaxBytes: o.SplitMaxBytes, Part: o.Part, Requantize: true, Threads: o.Threads, planOnly: true})
		if err != nil {
			return nil, err
		}
		layout = rep.layout
		for _, ch := range rep.plan {
			srcBytes[ch.Tensor.Name] = ch.Tensor.Size
		}
		if rep.viaConvert {
			// Read through convert's f32 view: its engine's buffers,
			// and the source's bytes, are convert's.
			view, err := Run(src, "view.gguf", Options{To: GGUF, OutType: OutF32, planOnly: true})
			if err != nil {
				return nil, err
			}
			for _, j := range view.plan.jobs {
				srcBytes[j.out.Name] = j.src.Size
				mem.convertJob(j)
			}
		}
		mem.quant = quantize.BufferBytes(rep.plan, o.Threads)
		out.Command, out.Type = "quantize", strings.ToLower(target.Name)
	} else {
		rep, err := Run(src, dst, Options{To: GGUF, OutType: o.OutType, SplitMaxBytes: o.SplitMaxBytes, Part: o.Part, planOnly: true})
		if err != nil {
			return nil, err
		}
		layout = rep.layout
		for _, j := range rep.plan.jobs {
			srcBytes[j.out.Name] = j.src.Size
			mem.convertJob(j)
		}
		out.Command, out.Type = "convert", rep.OutType
		dst = rep.Output
	}
	out.Output = dst
	first, end := o.Part.Range(len(layout))
	if len(layout) == 1 && o.SplitMaxBytes == 0 {
		first, end = 0, 1
	}
	for i, sh := range layout {
		ps := PlannedShard{Name: sh.Name, Bytes: sh.Size, Write: i >= first && i < end}
		if !o.Part.Whole() {
			for k := 1; k <= o.Part.N; k++ {
				if f, e := (Part{K: k, N: o.Part.N}).Range(len(layout)); i >= f && i < e {
					ps.Part = k
				}
			}
		}
		for _, t := range sh.Tensors {
			ps.Tensors = append(ps.Tensors, PlannedTensor{Name: t.Name, Type: t.DType.String(), Shape: t.Shape, Offset: t.Offset,
				Bytes: t.Size, SourceBytes: srcBytes[t.Name]})
			if ps.Write {
				out.SourceBytes += srcBytes[t.Name]
			}
		}
		out.Tensors += len(sh.Tensors)
		out.OutputBytes += sh.Size
		if ps.Write {
			out.DiskBytes += sh.Size
		}
		out.Shards = append(out.Shards, ps)
	}
	if out.Command == "convert" {
		out.PeakRAMBytes = mem.peakConvert()
	} else {
		out.PeakRAMBytes = mem.peakQuantize()
	}
	out.ThroughputBytesPerSec = throughput(out.Command, out.Type)
	out.Seconds = float64(out.SourceBytes) / out.ThroughputBytesPerSec
	return out, nil
}

// memModel predicts peak resident memory from what the streaming writer
// holds: the engine's buffers (each grown to its largest use: a tensor read
// whole where a transform needs it, one chunk where it streams), quantize's
// chunk slots, the output stream's two buffers and the self-check's two,
// plus a base measured for the runtime and the source's headers
// (docs/parallel.md, "Predictions").
//
// What the collector leaves on top differs. A convert allocates its buffers
// once (a split set's shards reuse the stream's and the self-check's:
// directio.GetBuf), so its heap is what is live plus the buffers it
// outgrew, each replaced by a larger one (garbage the collector, which lets
// the heap reach twice what was live at its last collection, need not
// reclaim). A quantize from Hugging Face reads through convert's per-tensor
// view, whose buffers become garbage tensor after tensor: its heap does
// reach twice what is live (GOGC=100).
type memModel struct {
	raw, f32a, f32b, out int64
	quant                int64
	outgrown             int64 // the engine's buffers replaced by larger ones
}

// baseRAM is the resident memory of a convert or quantize run of a tiny
// checkpoint (whose buffers are negligible), measured with /usr/bin/time -v:
// 18.3 MiB, rounded up.
const baseRAM = 20 << 20

// streamBuffers is the output stream's two buffers (atomicfile.Stream,
// 2 × directio.BufSize); scanBuffers the self-check's (directio.Scan).
const (
	streamBuffers = 2 * directio.BufSize
	scanBuffers   = 2 * directio.BufSize
)

// grow is the engine's grow for a buffer of *b bytes asked for n: a
// larger n replaces it, and the old one is garbage.
func (m *memModel) grow(b *int64, n int64) {
	if n > *b {
		m.outgrown += *b
		*b = n
	}
}

// convertJob accounts for the buffers engine.write (or engine.reader) uses
// for j, in the order the run writes them.
func (m *memModel) convertJob(j *job) {
	switch {
	case j.src.DType == j.out.DType && j.m.Transform == nil:
		m.grow(&m.raw, min(j.src.Size, 1<<20)) // copyRaw's buffer
	case j.m.Transform == nil:
		n := min(int64(chunkElems), j.out.NumElements())
		in, _ := j.src.DType.ByteSize(n)
		out, _ := j.out.DType.ByteSize(n)
		m.grow(&m.raw, in)
		m.grow(&m.f32a, 4*n)
		m.grow(&m.out, out)
	default:
		m.grow(&m.raw, j.src.Size)
		m.grow(&m.f32a, 4*j.src.NumElements())
		m.grow(&m.f32b, 4*j.out.NumElements())
		m.grow(&m.out, j.out.Size)
	}
}

// peakConvert is a convert's peak: what is live and what it outgrew (at
// most as much again: the collector runs before the heap doubles).
func (m *memModel) peakConvert() int64 {
	live := m.raw + m.f32a + m.f32b + m.out + streamBuffers + scanBuffers
	return baseRAM + live + min(m.outgrown, live)
}

// peakQuantize is a quantize's peak: twice what is live.
func (m *memModel) peakQuantize() int64 {
	return baseRAM + 2*(m.raw+m.f32a+m.f32b+m.out+m.quant+streamBuffers)
}

// throughput is the source bytes a second a run reads, measured on this
// project's 2-core machine (docs/parallel.md, "Predictions"): a copy or
// cast moves data as fast as the disk; quantizing is bound by the encoder.
func throughput(command, typ string) float64 {
	if command == "convert" {
		return convertRate
	}
	switch {
	case strings.HasPrefix(typ, "q8_0"), strings.HasPrefix(typ, "f"), strings.HasPrefix(typ, "bf"), typ == "copy":
		return quantQ8Rate
	}
	return quantKRate
}

// Measured rates, in source bytes a second, of a 7B-shaped f16 checkpoint
// (tfconv synth --like llama-7b --layers 4, 2.14 GB) on this project's
// 2-core machine with other work beside it (docs/parallel.md): convert to
// f16 took 16.8 s, quantize to q4_k_m 81.3 s, to q8_0 47.2 s. Other
// K and IQ types take the q4_k_m rate (the IQ types are slower).
const (
	convertRate = 127e6
	quantQ8Rate = 45e6
	quantKRate  = 26e6
)

// String is a short summary.
func (p *OutputPlan) String() string {
	return fmt.Sprintf("%s %s → %s (%s): %d files", p.Command, p.Source, p.Output, p.Type, len(p.Shards))
}
