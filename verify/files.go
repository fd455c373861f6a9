package verify

import (
	"fmt"
	"os"

	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/model"
)

// FileOptions are the choices of Files, FilesBaseline and SaveBaseline
// beyond the comparison's own.
type FileOptions struct {
	Options
	// Threads for each model (0: all CPUs).
	Threads int
	// Report, when not "", is where the HTML report is written (whole or
	// not at all), beside the returned Report.
	Report string
	// Force replaces an existing Report or baseline file.
	Force bool
}

// Files loads the checkpoints at ref and cand and compares them: tfconv
// verify REF CAND. A report destination is checked before either model is
// loaded.
func Files(ref, cand string, o FileOptions) (*Report, error) {
	if err := checkReportDest(o, ref, cand); err != nil {
		return nil, err
	}
	mr, err := model.Load(ref, model.LoadOptions{Threads: o.Threads, Progress: o.Progress})
	if err != nil {
		return nil, err
	}
	mc, err := model.Load(cand, model.LoadOptions{Threads: o.Threads, Progress: o.Progress})
	if err != nil {
		return nil, err
	}
	rep, err := Compare(mr, mc, o.Options)
	if err != nil {
		return nil, err
	}
	return rep, writeReport(rep, o, ref, cand)
}

// FilesBaseline compares the checkpoint at path with the baseline saved in
// the file baseline, on the baseline's own inputs: tfconv verify MODEL
// --baseline FILE.
func FilesBaseline(baseline, path string, o FileOptions) (*Report, error) {
	f, err := os.Open(baseline)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	b, err := ReadBaseline(f, baseline)
	f.Close()
	if err != nil {
		return nil, err
	}
	m, err := model.Load(path, model.LoadOptions{Threads: o.Threads, Progress: o.Progress})
	if err != nil {
		return nil, err
	}
	rep, err := CompareToBaseline(b, m, o.Options)
	if err != nil {
		return nil, err
	}
	return rep, writeReport(rep, o, path)
}

// SaveBaseline runs the checkpoint at path on o's inputs and writes the
// baseline to dst (whole or not at all): tfconv verify MODEL
// --save-baseline FILE.
func SaveBaseline(path, dst string, o FileOptions) (*Baseline, error) {
	if err := atomicfile.CheckDest(dst, o.Force, path); err != nil {
		return nil, err
	}
	m, err := model.Load(path, model.LoadOptions{Threads: o.Threads, Progress: o.Progress})
	if err != nil {
		return nil, err
	}
	b, err := MakeBaseline(m, o.Options)
	if err != nil {
		return nil, err
	}
	f, err := atomicfile.Create(dst, o.Force, path)
	if err != nil {
		return nil, err
	}
	defer f.Abort()
	if err := b.Write(f); err != nil {
		return nil, err
	}
	return b, f.Commit()
}

// writeReport writes the HTML report of rep to o.Report, if asked.
func writeReport(rep *Report, o FileOptions, inputs ...string) error {
	if o.Report == "" {
		return nil
	}
	f, err := atomicfile.Create(o.Report, o.Force, inputs...)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := WriteHTML(f, rep); err != nil {
		return err
	}
	return f.Commit()
}

// checkReportDest checks the HTML report's destination before any model is
// loaded.
func checkReportDest(o FileOptions, inputs ...string) error {
	if o.Report == "" {
		return nil
	}
	return atomicfile.CheckDest(o.Report, o.Force, inputs...)
}
