package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/card"
	"github.com/tfconv/tfconv/internal/output"
)

// cardOptions are the flags and argument of tfconv card.
type cardOptions struct {
	dir  string
	o    card.Options
	json bool
}

func newCmdCard(a *app) *cobra.Command {
	opts := &cardOptions{}
	cmd := &cobra.Command{
		Use:   "card DIR",
		Short: "Write the Hugging Face model card (README.md) of a folder of GGUF quantizations",
		Long: `card writes DIR/README.md, the model card of a GGUF repository as people publish
them on the Hugging Face Hub: YAML front matter the Hub reads (base_model,
base_model_relation: quantized, quantized_by, license, library_name: gguf,
pipeline_tag, tags), the table of DIR's GGUF files (a split set once) with
type, size and bits per weight, the KL divergence and perplexity of each file
a --verify report names as its candidate, the chat template the files carry,
and how each file was made.

--base-model, --license and --quantized-by default to what the GGUF metadata
says (general.base_model.*, general.license, general.quantized_by). An
existing README.md is replaced only with --force.`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.dir = args[0]
			opts.o.Version, _, _ = strings.Cut(versionString(), " (")
			return runCard(a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.o.BaseModel, "base-model", "", "Hub id of the model the files quantize (ORG/NAME)")
	f.StringVar(&opts.o.QuantizedBy, "quantized-by", "", "who made the files")
	f.StringVar(&opts.o.License, "license", "", `license id as the Hub knows it ("apache-2.0", "llama3.2", "other")`)
	f.StringArrayVar(&opts.o.Tags, "tag", nil, "an extra tag (repeatable)")
	f.StringArrayVar(&opts.o.Verify, "verify", nil, "a 'tfconv verify REF FILE --json' report: FILE's KLD and PPL go into the table (repeatable)")
	f.BoolVar(&opts.o.Force, "force", false, "replace an existing README.md")
	f.BoolVar(&opts.json, "json", false, "print what was written as JSON")
	return cmd
}

func runCard(a *app, opts *cardOptions) error {
	c, err := card.Write(opts.dir, opts.o)
	if err != nil {
		return err
	}
	if opts.json {
		return output.JSON(a.out, c)
	}
	verb := "wrote"
	if c.Replaced {
		verb = "replaced"
	}
	_, err = fmt.Fprintf(a.out, "%s %s: %d files, base model %s, license %s\n", verb, c.Path, len(c.Files), orDash(c.BaseModel), orDash(c.License))
	return err
}
