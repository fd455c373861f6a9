package main

import (
	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/internal/httprange"
)

// addTokenFlag gives a command that reads remote sources --token, the
// Hugging Face token sent to the Hub (the endpoint's host only) in place of
// HF_TOKEN for the command's run. Call it once cmd's RunE is set. The value
// is never printed: the flag has no default to show, and httprange keeps it
// out of every message.
func addTokenFlag(cmd *cobra.Command) {
	var tok string
	cmd.Flags().StringVar(&tok, "token", "", "Hugging Face token for hf:// and the Hub's URLs, in place of HF_TOKEN (sent to the Hub's host only, never shown)")
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		defer httprange.SetToken(tok)()
		return run(c, args)
	}
}
