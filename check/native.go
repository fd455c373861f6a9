package check

import (
	"errors"
	"hash/crc32"
	"strings"

	"github.com/tfconv/tfconv/formats/native"
	"github.com/tfconv/tfconv/tensor"
)

// checkNative checks a native file. The native header is protected by a
// checksum, so a damaged header is one defect (its checksum), not a list of
// field errors worth walking: the strict reader parses the header and its
// first complaint is the finding; the bodies are then verified one by one,
// every mismatch reported.
func checkNative(r *Report, path string) error {
	f, size, err := r.openFile(path)
	if err != nil {
		return err
	}
	defer f.Close()
	nf, err := native.NewFile(f, size)
	if err != nil {
		var fe *tensor.FormatError
		if !errors.As(err, &fe) {
			r.add("io-error", path, -1, "", "%v", err)
			return nil
		}
		r.add(nativeRule(fe), path, fe.Offset, fe.Item, "%s", fe.Msg)
		return nil
	}
	var infos []tensor.Info
	for _, t := range nf.Tensors {
		infos = append(infos, t.Info)
	}
	checkInt8Scales(r, placed(path, infos))
	var s scanner
	r.expect(infos...)
	for _, a := range nf.Aux {
		r.expect(tensor.Info{Size: a.Size})
	}
	for _, a := range nf.Aux {
		h := crc32.New(castagnoli)
		info := tensor.Info{Name: a.Name, Offset: a.Offset, Size: a.Size}
		item := "aux file " + quote(a.Name)
		if err := s.scanTensor(r, path, f, info, h); err != nil {
			r.add("io-error", path, a.Offset, item, "%v", err)
			return nil
		}
		if got := h.Sum32(); got != a.CRC {
			r.add("native-crc-mismatch", path, a.Offset, item, "CRC-32C of the data is %08x, the checksum table says %08x", got, a.CRC)
		}
	}
	for _, t := range nf.Tensors {
		h := crc32.New(castagnoli)
		if err := s.scanTensor(r, path, f, t.Info, h); err != nil {
			r.add("io-error", path, t.Offset, tensorItem(t.Name), "%v", err)
			return nil
		}
		if got := h.Sum32(); got != t.CRC {
			r.add("native-crc-mismatch", path, t.Offset, tensorItem(t.Name), "CRC-32C of the data is %08x, the checksum table says %08x", got, t.CRC)
		}
	}
	return nil
}

func quote(s string) string { return tensorItem(s)[len("tensor "):] }

// nativeRule classifies the native reader's error. The reader reports one
// defect per file and has no error codes of its own, so the classification
// goes by where the defect is and what the message says; the corpus test
// (testdata/malformed) pins each class, so a reworded message shows up
// there as a changed rule id.
func nativeRule(fe *tensor.FormatError) string {
	msg := fe.Msg
	has := func(s string) bool { return strings.Contains(msg, s) }
	switch {
	case fe.Unsupported && has("version"):
		return "native-version"
	case has("shorter than a preamble") || has("header ends inside") || has("header length"):
		return "native-truncated"
	case has("header checksum mismatch"):
		return "native-header-crc"
	case has("trailer checksum") || has("footer") || has("checksum table"):
		return "native-trailer-crc"
	case has("duplicate tensor name"):
		return "dup-tensor-name"
	case has("not a multiple of the alignment"):
		return "native-misaligned"
	case has("overlaps"):
		return "native-overlap"
	case has("runs past"):
		return "native-out-of-bounds"
	}
	return "native-header"
}
