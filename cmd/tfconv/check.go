package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/check"
	"github.com/tfconv/tfconv/internal/output"
)

type checkOptions struct {
	path     string
	json     bool
	progress bool
}

func newCmdCheck(a *app) *cobra.Command {
	opts := &checkOptions{}
	cmd := &cobra.Command{
		Use:   "check PATH",
		Short: "Validate a checkpoint file against its spec and list every defect",
		Long: `Check validates a safetensors file, a sharded checkpoint (directory or
model.safetensors.index.json), a PyTorch .bin file or sharded set, a GGUF file
or split set, or a native .tfn file against its specification and tfconv's stricter rules. Unlike the other
commands it does not stop at the first defect: it lists every finding with a
stable rule id, its severity, the byte offset (from the start of the file, as
inspect --tensors and gguf-dump count them; GGUF data offsets in messages too)
and the tensor or key. Every
float tensor is decoded to look for NaN and Inf; native files have every
checksum verified. PyTorch pickles are walked, never run: every global
outside the allow-list is a pytorch-global finding.

Exit codes: 0 no errors (warnings allowed), 1 findings of severity error,
2 the path cannot be read at all.

Rules (severity, id, meaning):
` + checkRulesHelp(),
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.path = args[0]
			return runCheck(a, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, `print {"path","format","findings":[{"rule","severity","offset","item","message","file"}],"ok"}`)
	addProgressFlag(cmd, &opts.progress)
	addTokenFlag(cmd)
	return cmd
}

func checkRulesHelp() string {
	var b strings.Builder
	for _, r := range check.Rules {
		fmt.Fprintf(&b, "  %-7s %-20s %s\n", r.Severity, r.ID, r.Doc)
	}
	return strings.TrimRight(b.String(), "\n")
}

// checkJSON is the --json schema of check; fields are only ever added.
type checkJSON struct {
	Path     string             `json:"path"`
	Format   string             `json:"format"`
	Files    []string           `json:"files"`
	Findings []checkFindingJSON `json:"findings"`
	OK       bool               `json:"ok"`
}

type checkFindingJSON struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Offset   int64  `json:"offset"` // -1 when the defect has no position
	Item     string `json:"item"`
	Message  string `json:"message"`
	File     string `json:"file"`
}

func findingJSON(f check.Finding) checkFindingJSON {
	return checkFindingJSON{Rule: f.Rule, Severity: string(f.Severity), Offset: f.Offset, Item: f.Item, Message: f.Message, File: f.File}
}

func runCheck(a *app, opts *checkOptions) error {
	rep, err := check.CheckWith(opts.path, check.Options{Progress: a.progressOut(opts.progress)})
	if err != nil {
		return err
	}
	if opts.json {
		j := checkJSON{Path: rep.Path, Format: rep.Format, Files: rep.Files, Findings: []checkFindingJSON{}, OK: rep.OK()}
		for _, f := range rep.Findings {
			j.Findings = append(j.Findings, findingJSON(f))
		}
		if err := output.JSON(a.out, j); err != nil {
			return err
		}
	} else {
		multi := len(rep.Files) > 1
		header := []string{"severity", "rule", "file offset", "item", "message"}
		if multi {
			header = append([]string{"file"}, header...)
		}
		tb := output.NewTable(header...)
		for _, f := range rep.Findings {
			off := "-"
			if f.Offset >= 0 {
				off = fmt.Sprint(f.Offset)
			}
			cells := []any{f.Severity, f.Rule, off, f.Item, f.Message}
			if multi {
				cells = append([]any{f.File}, cells...)
			}
			tb.Row(cells...)
		}
		if tb.Len() > 0 {
			if err := tb.Render(a.out); err != nil {
				return err
			}
		}
		errs, warns := 0, 0
		for _, f := range rep.Findings {
			if f.Severity == check.Error {
				errs++
			} else {
				warns++
			}
		}
		if _, err := fmt.Fprintf(a.out, "%s: %s, %d file(s): %d error(s), %d warning(s)\n", rep.Path, rep.Format, len(rep.Files), errs, warns); err != nil {
			return err
		}
	}
	if !rep.OK() {
		// The findings are the output; stderr names the file.
		return foundError(fmt.Sprintf("check: %s: error findings (listed above)", rep.Path))
	}
	return nil
}
