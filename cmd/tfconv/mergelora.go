package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/convert"
	"github.com/tfconv/tfconv/internal/output"
)

type mergeLoRAOptions struct {
	base, adapter, dst string
	to                 string
	outType            string
	scale              float64
	force              bool
	json               bool
	progress           bool
	allowOverflow      bool
}

func newCmdMergeLoRA(a *app) *cobra.Command {
	opts := &mergeLoRAOptions{}
	cmd := &cobra.Command{
		Use:   "merge-lora BASE ADAPTER OUT",
		Short: "Merge a PEFT LoRA adapter into its base model and write the result in any format",
		Long: `Merge-lora writes BASE with the PEFT LoRA adapter ADAPTER merged in: every
weight the adapter changes becomes W + scale·(B·A), as PEFT's
merge_and_unload() computes it (scale = lora_alpha/r, or lora_alpha/√r with
use_rslora, times --scale). Everything else is copied.

BASE is a Hugging Face checkpoint (safetensors or pytorch_model.bin) or a GGUF
with float weights (f32, f16, bf16; the adapter's names and llama.cpp's Q/K
row order are mapped through the architecture); each merged weight keeps the
base's dtype. ADAPTER is a directory with adapter_config.json and
adapter_model.safetensors or adapter_model.bin. A base tensor that is missing
or whose shape is not the adapter's B·A is refused, naming it; DoRA,
fan_in_fan_out, rank_pattern/alpha_pattern, trained biases and
modules_to_save are refused by name.

OUT and --to, --outtype, --force are as for 'tfconv convert' (a .gguf file,
a .tfn file or a Hugging Face directory; GGUF from a Hugging Face base is
convert_hf_to_gguf.py's layout). The merge streams: each merged weight is
computed when the writer reaches it (memory about one tensor). A merged value
beyond the range of the base's dtype (f16: 65504) is an error naming the
tensor unless --allow-overflow, which writes it as ±Inf and reports it.

--json prints convert's report with "lora": {"adapter", "rank", "alpha",
"rslora", "scale", "merged"}.`,
		Args: exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.base, opts.adapter, opts.dst = args[0], args[1], args[2]
			return runMergeLoRA(a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.to, "to", "", "output format: gguf|safetensors|native (default from OUT)")
	f.StringVar(&opts.outType, "outtype", "", "weight type: "+strings.Join(convert.OutTypes, "|")+" (default f16 for GGUF, auto otherwise)")
	f.Float64Var(&opts.scale, "scale", 1, "multiplies the adapter's own scale (llama.cpp's --lora-scaled)")
	f.BoolVar(&opts.force, "force", false, "replace an existing OUT (a folder: only the files the output has, others kept)")
	f.BoolVar(&opts.json, "json", false, "print the report as JSON")
	f.BoolVar(&opts.allowOverflow, "allow-overflow", false, "write merged values beyond the base dtype's range (f16: 65504) as ±Inf instead of failing; the tensors and counts are reported")
	addProgressFlag(cmd, &opts.progress)
	return cmd
}

func runMergeLoRA(a *app, opts *mergeLoRAOptions) error {
	if opts.scale == 0 || opts.scale != opts.scale {
		return fmt.Errorf("merge-lora: --scale %v: want a non-zero number", opts.scale)
	}
	mo := convert.MergeOptions{Scale: opts.scale, Options: convert.Options{To: convert.Format(strings.ToLower(opts.to)),
		OutType: strings.ToLower(opts.outType), Force: opts.force, MaxShardBytes: convert.DefaultMaxShardBytes,
		Progress: a.progressOut(opts.progress), AllowOverflow: opts.allowOverflow}}
	rep, err := convert.MergeLoRA(opts.base, opts.adapter, opts.dst, mo)
	if err != nil {
		return err
	}
	for _, w := range rep.Warnings {
		fmt.Fprintln(a.err, "tfconv: warning:", w)
	}
	if opts.json {
		return output.JSON(a.out, rep)
	}
	l := rep.LoRA
	fmt.Fprintf(a.out, "merged %s (rank %d, alpha %g, scale %g) into %s: %d weights changed\n", l.Adapter, l.Rank, l.Alpha, l.Scale, rep.Source, l.Merged)
	fmt.Fprintf(a.out, "wrote %s (%s, %s, %s): %d tensors, %s in %.2fs\n", rep.Output, rep.Format, rep.Arch, rep.OutType,
		len(rep.Tensors), output.Bytes(rep.Bytes), rep.Seconds)
	if err := printReplaced(a.out, rep.Output, rep.Format == convert.Safetensors, rep.Replaced, rep.RemovedStale); err != nil {
		return err
	}
	_, err = fmt.Fprintln(a.out, rep.SelfCheckLine)
	return err
}
