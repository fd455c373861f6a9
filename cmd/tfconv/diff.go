package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/internal/output"
	"github.com/tfconv/tfconv/verify"
)

type diffOptions struct {
	progress bool
	a, b     string
	json     bool
	all      bool
}

func newCmdDiff(a *app) *cobra.Command {
	opts := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two checkpoints' weights tensor by tensor, across formats",
		Long: `Diff compares the weights of two checkpoints in any formats and dtypes. Tensors
are matched by their canonical (Hugging Face) name: GGUF names are mapped back
through tfconv convert's policy, with LLaMA's Q/K row permutation undone and
GPT-2's transposes reverted, so an HF checkpoint and its GGUF conversion line
up. Buffers the converter drops on purpose are left out.

Per tensor: max abs difference, relative error ‖B−A‖/‖A‖, SQNR in dB, and a
SHA-256 of the decoded values (float32 little-endian in the canonical layout),
the same whatever the file format: equal hashes mean bit-identical numbers.
Missing (only in A), extra (only in B), reshaped and retyped tensors are listed;
a tied head that a GGUF stores again as a copy (GPT-2's, BLOOM's output.weight)
is listed as "tied" and not compared. Checkpoints of different architectures
are reported as such (exit 1), without a tensor list. One pair of tensors is in
memory at a time.

The table lists tensors that are not identical; --all lists every tensor.
Exit codes: 0 every tensor matched and identical, 1 a difference, 2 input error.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.a, opts.b = args[0], args[1]
			return runDiff(a, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the report as JSON")
	addProgressFlag(cmd, &opts.progress)
	cmd.Flags().BoolVar(&opts.all, "all", false, "list identical tensors too")
	addTokenFlag(cmd)
	return cmd
}

func runDiff(a *app, opts *diffOptions) error {
	ca, err := checkpoint.Open(opts.a)
	if err != nil {
		return err
	}
	defer ca.Close()
	cb, err := checkpoint.Open(opts.b)
	if err != nil {
		return err
	}
	defer cb.Close()
	rep, err := verify.DiffProgress(ca, cb, verify.ConvertNames, verify.ConvertNames, a.progressOut(opts.progress))
	if err != nil {
		return err
	}
	if opts.json {
		if err := output.JSON(a.out, rep); err != nil {
			return err
		}
	} else if rep.DifferentArchitectures {
		fmt.Fprintf(a.out, "%s is %s, %s is %s: different architectures, tensors not compared\n", opts.a, rep.ArchA, opts.b, rep.ArchB)
	} else {
		t := output.NewTable("tensor", "status", "dtype A→B", "shape", "max abs", "rel err", "SQNR dB", "sha256 A", "sha256 B")
		for _, d := range rep.Tensors {
			if d.Status == verify.StatusIdentical && !d.Retyped && !opts.all {
				continue
			}
			types := d.DTypeA + "→" + d.DTypeB
			shape := fmt.Sprint(d.ShapeA)
			if d.Status == verify.StatusExtra || (d.Status == verify.StatusTied && d.NameB != "") {
				shape = fmt.Sprint(d.ShapeB)
			} else if d.Status == verify.StatusReshaped {
				shape = fmt.Sprintf("%v→%v", d.ShapeA, d.ShapeB)
			}
			sq := "-"
			if d.SQNR != nil {
				sq = fmt.Sprintf("%.2f", *d.SQNR)
			} else if d.Status == verify.StatusIdentical {
				sq = "inf"
			}
			t.Row(d.Name, d.Status, types, shape, fmt.Sprintf("%.4g", d.MaxAbs), fmt.Sprintf("%.4g", d.RelErr), sq, short(d.HashA), short(d.HashB))
		}
		if t.Len() > 0 {
			if err := t.Render(a.out); err != nil {
				return err
			}
			fmt.Fprintln(a.out)
		}
		fmt.Fprintf(a.out, "%d tensors matched: %d identical, %d different; %d retyped, %d reshaped, %d missing in B, %d extra in B, %d tied copies\n",
			rep.Matched, rep.Identical, rep.Different, rep.Retyped, rep.Reshaped, rep.Missing, rep.Extra, rep.Tied)
	}
	if !rep.Same() {
		return errFound
	}
	return nil
}

// short abbreviates a hash for the table.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "-"
	}
	return h
}
