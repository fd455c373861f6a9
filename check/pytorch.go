package check

import (
	"errors"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/tfconv/tfconv/formats/pytorch"
	"github.com/tfconv/tfconv/tensor"
)

// checkPyTorch checks a torch.save file (zip or legacy). The pickle is
// walked by the reader's own machine with the stop at a disallowed global
// turned off, so every such global is a finding (none is ever run); any
// other defect stops the walk and is one finding, classified by what the
// reader says. A file the reader accepts has its float tensors scanned for
// NaN and Inf.
func checkPyTorch(r *Report, path string) ([]placedInfo, error) {
	f, size, err := r.openFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	refused, err := pytorch.Scan(f, size, path)
	for _, g := range refused {
		r.add("pytorch-global", path, g.Offset, "", "global %q is not allowed (pickle offset %d): torch.load would import and call it",
			g.Module+"."+g.Name, g.PickleOffset)
	}
	if err != nil {
		var fe *tensor.FormatError
		if !errors.As(err, &fe) {
			r.add("io-error", path, -1, "", "%v", err)
			return nil, nil
		}
		rule := pytorchRule(fe)
		if rule == "pytorch-global" && len(refused) > 0 {
			return nil, nil // listed above
		}
		r.add(rule, path, fe.Offset, fe.Item, "%s", fe.Msg)
		return nil, nil
	}
	pf, err := pytorch.NewFile(f, size)
	if err != nil {
		r.add("pytorch-rejected", path, -1, "", "%v", err)
		return nil, nil
	}
	var s scanner
	var infos []tensor.Info
	for i := range pf.Tensors {
		r.expect(pf.Tensors[i].Info)
	}
	for i := range pf.Tensors {
		t := &pf.Tensors[i]
		infos = append(infos, t.Info)
		// The scan reads at Info.Offset; a view that is not one run of
		// the file is read through its own gathering reader, shifted.
		var rd io.ReaderAt = f
		if !t.Contiguous {
			rd = shifted{t.Open(), t.Offset}
		}
		if err := s.scanTensor(r, path, rd, t.Info, nil); err != nil {
			r.add("io-error", path, t.Offset, tensorItem(t.Name), "%v", err)
			return nil, nil
		}
	}
	return placed(path, infos), nil
}

// shifted reads r as if it started at base.
type shifted struct {
	r    io.ReaderAt
	base int64
}

func (s shifted) ReadAt(p []byte, off int64) (int, error) { return s.r.ReadAt(p, off-s.base) }

// pytorchRule classifies the PyTorch reader's error. The reader reports
// one defect per file with no error codes of its own, so the class goes by
// what the message and item say; TestPyTorchHostile pins each class.
func pytorchRule(fe *tensor.FormatError) string {
	has := func(s string) bool { return strings.Contains(fe.Msg, s) }
	switch {
	case has("is not allowed"):
		return "pytorch-global"
	case has("compressed (zip method"):
		return "pytorch-compressed"
	case fe.Unsupported:
		return "pytorch-unsupported"
	case has("file ends inside") || has("pickle ends"):
		return "pytorch-truncated"
	case strings.HasPrefix(fe.Item, "record ") || has("zip") || has("data.pkl"):
		return "pytorch-zip"
	case strings.Contains(fe.Item, "storage ") || has("storage"):
		return "pytorch-storage"
	}
	return "pytorch-pickle"
}

// checkPyTorchIndex checks a pytorch_model.bin.index.json, each shard it
// names, then that the weight_map and the shards agree.
func checkPyTorchIndex(r *Report, path string) error {
	r.Files = append(r.Files, path)
	idx, err := pytorch.ReadIndex(path)
	if err != nil {
		var fe *tensor.FormatError
		if !errors.As(err, &fe) {
			r.add("io-error", path, -1, "", "%v", err)
			return nil
		}
		rule := "idx-json"
		if strings.Contains(fe.Msg, "not a plain file name") {
			rule = "idx-shard-name"
		}
		r.add(rule, path, fe.Offset, fe.Item, "%s", fe.Msg)
		return nil
	}
	var shards []string
	for _, s := range idx.WeightMap {
		if !slices.Contains(shards, s) {
			shards = append(shards, s)
		}
	}
	slices.Sort(shards)
	var all []placedInfo
	bad := false
	for _, s := range shards {
		p := r.beside(path, s)
		infos, err := checkPyTorch(r, p)
		if errors.Is(err, fs.ErrNotExist) {
			r.add("idx-missing-shard", path, -1, "shard "+quote(s), "the weight_map names %s, which does not exist", s)
			bad = true
			continue
		}
		if err != nil {
			return err
		}
		if r.errorsIn(p) > 0 {
			bad = true
		}
		all = append(all, infos...)
	}
	if bad {
		return nil
	}
	checkInt8Scales(r, all)
	set, err := pytorch.OpenSet(path)
	if err != nil {
		var fe *tensor.FormatError
		if !errors.As(err, &fe) {
			r.add("io-error", path, -1, "", "%v", err)
			return nil
		}
		rule := "pytorch-rejected"
		switch m := fe.Msg; {
		case strings.Contains(m, "in two shards"):
			rule = "dup-tensor-name"
		case strings.Contains(m, "not in weight_map") || strings.Contains(m, "weight_map says"):
			rule = "idx-unlisted-tensor"
		case strings.Contains(m, "does not hold it"):
			rule = "idx-missing-tensor"
		}
		r.add(rule, path, fe.Offset, fe.Item, "%s", fe.Msg)
		return nil
	}
	return set.Close()
}
