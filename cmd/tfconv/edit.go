package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/internal/output"
	"github.com/tfconv/tfconv/internal/progress"
	"github.com/tfconv/tfconv/sniff"
)

type editOptions struct {
	path         string
	set          []string
	del          []string
	chatTemplate string
	out          string
	force        bool
	inPlace      bool
	json         bool
	progress     bool
}

func newCmdEdit(a *app) *cobra.Command {
	opts := &editOptions{}
	cmd := &cobra.Command{
		Use:   "edit FILE",
		Short: "Set or delete metadata keys of a GGUF file without touching its tensors",
		Long: `Edit changes the metadata of a GGUF file and copies every tensor byte for byte.
GGUF only: safetensors and native files are refused.

--set KEY=VALUE keeps the type of an existing key; a new key is a string unless
a type follows a colon: --set KEY=VALUE:TYPE with TYPE one of uint8, int8,
uint16, int16, uint32, int32, uint64, int64, float32, float64, bool, string.
Array values cannot be set. --chat-template-file F sets tokenizer.chat_template
to the contents of F. Refused: general.alignment, split.* keys, a value of
the wrong type for an existing key, deleting general.architecture or a key
that is absent.

By default FILE is replaced through a temporary file in its folder that is
renamed over it once written and checked, so FILE is whole at every moment;
--out writes a new file instead (an existing one only with --force).
--in-place overwrites FILE's header bytes and nothing else; it needs the new
header to end where the old one did, and is not atomic (a crash during the
write can leave a broken header), which is why it is not the default.

Every tensor's sha256 is compared between the input and the output read back
before anything is replaced.
Exit codes: 0 edited, 2 refused or input error.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.path = args[0]
			return runEdit(a, opts)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&opts.set, "set", nil, "set KEY=VALUE[:TYPE] (repeatable)")
	f.StringArrayVar(&opts.del, "delete", nil, "delete KEY (repeatable)")
	f.StringVar(&opts.chatTemplate, "chat-template-file", "", "set tokenizer.chat_template from this file")
	f.StringVarP(&opts.out, "out", "o", "", "write the edited file here instead of replacing FILE")
	f.BoolVar(&opts.force, "force", false, "replace an existing --out file")
	f.BoolVar(&opts.inPlace, "in-place", false, "overwrite FILE's header bytes only (not atomic; needs the header to keep its size)")
	f.BoolVar(&opts.json, "json", false, "print the report as JSON")
	addProgressFlag(cmd, &opts.progress)
	return cmd
}

func runEdit(a *app, opts *editOptions) error {
	eo := gguf.EditOptions{Delete: opts.del, Out: opts.out, Force: opts.force, InPlace: opts.inPlace}
	for _, s := range opts.set {
		as, err := gguf.ParseAssignment(s)
		if err != nil {
			return err
		}
		eo.Set = append(eo.Set, as)
	}
	if opts.chatTemplate != "" {
		tpl, err := gguf.ReadChatTemplate(opts.chatTemplate)
		if err != nil {
			return err
		}
		eo.Set = append(eo.Set, gguf.Assignment{Key: gguf.KeyChatTemplate, Value: tpl, Type: "string"})
	}
	// A file that is no checkpoint at all is named for what it is (an HTML
	// page, text, empty) rather than only "not a GGUF file".
	if _, err := sniff.File(opts.path); err != nil {
		return err
	}
	// Copying and re-reading every tensor byte takes a while on a large
	// file: one progress line in bytes.
	var meter *progress.Meter
	if out := a.progressOut(opts.progress); out != nil {
		eo.Progress = func(done, total int64) {
			if meter == nil {
				meter = progress.New(out, "edit", total, progress.Bytes, "")
			}
			meter.Set(done, total)
		}
	}
	rep, err := gguf.Edit(opts.path, eo)
	meter.Finish()
	if err != nil {
		return err
	}
	if opts.json {
		return output.JSON(a.out, rep)
	}
	for _, c := range rep.Set {
		old := "(new)"
		if c.Old != nil {
			old = shortValue(c.Old.String())
		}
		fmt.Fprintf(a.out, "set %s (%s): %s -> %s\n", c.Key, c.Type, old, shortValue(c.New.String()))
	}
	for _, k := range rep.Deleted {
		fmt.Fprintf(a.out, "deleted %s\n", k)
	}
	how := "rewritten"
	if rep.InPlace {
		how = "header rewritten in place"
	}
	fmt.Fprintf(a.out, "%s: %s, header %d -> %d bytes, %d bytes written\n", rep.Out, how, rep.OldHeaderBytes, rep.NewHeaderBytes, rep.BytesWritten)
	fmt.Fprintf(a.out, "tensors unchanged: %d, data hash equal\n", rep.Tensors)
	return nil
}

// shortValue cuts a formatted value (a chat template, say) to one
// readable line.
func shortValue(s string) string {
	const max = 60
	r := []rune(s)
	if len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}
