package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/convert"
	"github.com/tfconv/tfconv/internal/output"
)

type planOptions struct {
	src, dst     string
	typ          string
	outType      string
	splitMaxSize string
	part         string
	threads      int
	json         bool
	tensors      bool
}

func newCmdPlan(a *app) *cobra.Command {
	opts := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan SRC [DST]",
		Short: "List the files a convert or quantize would write, and predict its memory, disk and time",
		Long: `Plan works out from SRC's headers alone (a local checkpoint, or hf://ORG/REPO and
URLs as convert and quantize read them) the whole GGUF output of
'tfconv quantize SRC DST --type T' (with --type) or 'tfconv convert SRC DST
--outtype T' (without): every file, which tensors it holds, their types and
byte sizes, exactly as the run writes them (the same planner lays them out);
with --split-max-size the gguf-split set, and with --part K/N which shards
that part writes. DST defaults to convert's default name, or model-TYPE.gguf.

It predicts the run's peak memory (what the streaming writer holds: the
largest tensor read whole, the chunk buffers, a measured base), its disk
(the bytes it writes: the part's with --part) and its time (the source bytes
it reads at a throughput measured on a 2-core machine; docs/parallel.md says
how). Nothing is read beyond the headers and nothing is written.`,
		Args: rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.src = args[0]
			if len(args) == 2 {
				opts.dst = args[1]
			}
			return runPlan(a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.typ, "type", "", "plan 'tfconv quantize --type T'")
	f.StringVar(&opts.outType, "outtype", "", "plan 'tfconv convert --outtype T' (the default without --type)")
	f.StringVar(&opts.splitMaxSize, "split-max-size", "", "plan a gguf-split set of at most this much tensor data per shard (e.g. 5GB)")
	f.StringVar(&opts.part, "part", "", "mark the shards part K/N (or auto/N) writes; disk and time are that part's")
	f.IntVar(&opts.threads, "threads", 0, "quantize's worker count, for its buffers (0: all cores)")
	f.BoolVar(&opts.tensors, "tensors", false, "list every tensor of every shard")
	f.BoolVar(&opts.json, "json", false, `print {"source","command","type","output","part","shards":[{"name","bytes","part","write","tensors":[…]}],"tensors","output_bytes","disk_bytes","source_bytes","peak_ram_bytes","seconds","throughput_bytes_per_sec"}`)
	addTokenFlag(cmd)
	return cmd
}

func runPlan(a *app, opts *planOptions) error {
	if opts.typ != "" && opts.outType != "" {
		return fmt.Errorf("plan: --type plans a quantize, --outtype a convert: give one")
	}
	po := convert.PlanOptions{Type: opts.typ, OutType: opts.outType, Threads: opts.threads}
	var err error
	if opts.splitMaxSize != "" {
		if po.SplitMaxBytes, err = parseSize("split-max-size", opts.splitMaxSize); err != nil {
			return err
		}
	}
	if opts.part != "" {
		if po.Part, err = convert.ParsePart(opts.part, os.Getenv); err != nil {
			return err
		}
	}
	p, err := convert.PlanOutput(opts.src, opts.dst, po)
	if err != nil {
		return err
	}
	if opts.json {
		return output.JSON(a.out, p)
	}
	if opts.tensors {
		tb := output.NewTable("file", "tensor", "type", "shape", "bytes")
		for _, sh := range p.Shards {
			for _, t := range sh.Tensors {
				tb.Row(sh.Name, t.Name, t.Type, t.Shape, t.Bytes)
			}
		}
		if err := tb.Render(a.out); err != nil {
			return err
		}
	}
	tb := output.NewTable("file", "tensors", "bytes", "part", "written")
	for _, sh := range p.Shards {
		part := "-"
		if sh.Part > 0 {
			part = fmt.Sprint(sh.Part)
		}
		written := "yes"
		if !sh.Write {
			written = "no"
		}
		tb.Row(sh.Name, len(sh.Tensors), sh.Bytes, part, written)
	}
	if err := tb.Render(a.out); err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.out, "%s %s → %s (%s): %d files, %d tensors, %s; this run: disk %s, peak RAM about %s, time about %.0fs (%s of source at %s/s)\n",
		p.Command, p.Source, p.Output, p.Type, len(p.Shards), p.Tensors, output.Bytes(p.OutputBytes), output.Bytes(p.DiskBytes),
		output.Bytes(p.PeakRAMBytes), p.Seconds, output.Bytes(p.SourceBytes), output.Bytes(int64(p.ThroughputBytesPerSec)))
	return err
}
