package tokenizer

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// AddedTokenScore is the score gguf-py gives added tokens of a
// SentencePiece vocabulary: low enough never to win a merge.
const AddedTokenScore = -1000

// PadScore is the score the converter gives the "[PADi]" tokens that fill
// a SentencePiece vocabulary up to vocab_size.
const PadScore = -10000

// SentencePiece's model types (TrainerSpec.model_type).
const (
	spUnigram = 1
	spBPE     = 2
)

// pbReader decodes protobuf wire format with every length checked against
// what is left of the buffer.
type pbReader struct {
	b    []byte
	pos  int
	base int64 // offset of b[0] in the file, for errors
	file string
}

func (r *pbReader) errf(format string, args ...any) error {
	return fmtErrAt(r.file, r.base+int64(r.pos), "", fmt.Sprintf(format, args...))
}

func (r *pbReader) varint() (uint64, error) {
	var x uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if r.pos >= len(r.b) {
			return 0, r.errf("truncated varint")
		}
		c := r.b[r.pos]
		r.pos++
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x, nil
		}
	}
	return 0, r.errf("varint longer than 10 bytes")
}

// field reads one field header and returns its number and wire type.
func (r *pbReader) field() (int, int, error) {
	k, err := r.varint()
	if err != nil {
		return 0, 0, err
	}
	if k>>3 == 0 || k>>3 > math.MaxInt32 {
		return 0, 0, r.errf("bad field number %d", k>>3)
	}
	return int(k >> 3), int(k & 7), nil
}

// bytes reads a length-delimited value.
func (r *pbReader) bytes() ([]byte, int64, error) {
	start := r.pos
	n, err := r.varint()
	if err != nil {
		return nil, 0, err
	}
	if n > uint64(len(r.b)-r.pos) {
		r.pos = start
		return nil, 0, r.errf("length %d runs past the end (%d bytes left)", n, len(r.b)-r.pos)
	}
	off := r.base + int64(r.pos)
	v := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return v, off, nil
}

func (r *pbReader) fixed32() (uint32, error) {
	if len(r.b)-r.pos < 4 {
		return 0, r.errf("truncated 32-bit value")
	}
	v := binary.LittleEndian.Uint32(r.b[r.pos:])
	r.pos += 4
	return v, nil
}

// skip skips a value of the given wire type.
func (r *pbReader) skip(wt int) error {
	switch wt {
	case 0:
		_, err := r.varint()
		return err
	case 1:
		if len(r.b)-r.pos < 8 {
			return r.errf("truncated 64-bit value")
		}
		r.pos += 8
	case 2:
		_, _, err := r.bytes()
		return err
	case 5:
		_, err := r.fixed32()
		return err
	default:
		return r.errf("unsupported wire type %d", wt)
	}
	return nil
}

// spModel is the part of SentencePiece's ModelProto a tokenizer needs.
type spModel struct {
	pieces         []string
	scores         []float32
	types          []TokenType
	modelType      int
	byteFallback   bool
	addDummyPrefix bool
	unk, bos, eos  int
	pad            int
}

// parseSentencePiece decodes a tokenizer.model (ModelProto):
//
//	ModelProto     { repeated SentencePiece pieces = 1; TrainerSpec trainer_spec = 2;
//	                 NormalizerSpec normalizer_spec = 3; ... }
//	SentencePiece  { string piece = 1; float score = 2; Type type = 3 [default NORMAL]; }
//	TrainerSpec    { ModelType model_type = 3; bool byte_fallback = 35; int32 unk_id = 40;
//	                 bos_id = 41; eos_id = 42; pad_id = 43; ... }
//	NormalizerSpec { string name = 1; bool add_dummy_prefix = 3 [default true]; ... }
func decodeSentencePiece(b []byte, file string) (*spModel, error) {
	m := &spModel{modelType: spUnigram, addDummyPrefix: true, unk: 0, bos: 1, eos: 2, pad: -1}
	r := &pbReader{b: b, file: file}
	for r.pos < len(r.b) {
		fieldOff := int64(r.pos)
		num, wt, err := r.field()
		if err != nil {
			return nil, err
		}
		if (num == 1 || num == 2 || num == 3) && wt != 2 {
			return nil, fmtErrAt(file, fieldOff, fmt.Sprintf("field %d", num), fmt.Sprintf("wire type %d, want 2 (message)", wt))
		}
		switch num {
		case 1:
			v, off, err := r.bytes()
			if err != nil {
				return nil, err
			}
			if len(m.pieces) >= maxVocab {
				return nil, fmtErrAt(file, off, "pieces", fmt.Sprintf("more than %d pieces", maxVocab))
			}
			if err := m.piece(&pbReader{b: v, base: off, file: file}); err != nil {
				return nil, err
			}
		case 2:
			v, off, err := r.bytes()
			if err != nil {
				return nil, err
			}
			if err := m.trainer(&pbReader{b: v, base: off, file: file}); err != nil {
				return nil, err
			}
		case 3:
			v, off, err := r.bytes()
			if err != nil {
				return nil, err
			}
			if err := m.normalizer(&pbReader{b: v, base: off, file: file}); err != nil {
				return nil, err
			}
		default:
			if err := r.skip(wt); err != nil {
				return nil, err
			}
		}
	}
	if len(m.pieces) == 0 {
		return nil, fmtErr(file, "pieces", "no pieces")
	}
	return m, nil
}

func (m *spModel) piece(r *pbReader) error {
	var piece string
	var score float32
	ty := TypeNormal
	for r.pos < len(r.b) {
		num, wt, err := r.field()
		if err != nil {
			return err
		}
		switch {
		case num == 1 && wt == 2:
			v, _, err := r.bytes()
			if err != nil {
				return err
			}
			if len(v) > maxTokenLen {
				return r.errf("piece of %d bytes is longer than the limit %d", len(v), maxTokenLen)
			}
			piece = string(v)
		case num == 2 && wt == 5:
			v, err := r.fixed32()
			if err != nil {
				return err
			}
			score = math.Float32frombits(v)
		case num == 3 && wt == 0:
			v, err := r.varint()
			if err != nil {
				return err
			}
			if v < 1 || v > 6 {
				return r.errf("piece %d: unknown type %d", len(m.pieces), v)
			}
			ty = TokenType(v)
		default:
			if err := r.skip(wt); err != nil {
				return err
			}
		}
	}
	m.pieces = append(m.pieces, piece)
	m.scores = append(m.scores, score)
	m.types = append(m.types, ty)
	return nil
}

func (m *spModel) trainer(r *pbReader) error {
	for r.pos < len(r.b) {
		num, wt, err := r.field()
		if err != nil {
			return err
		}
		if wt != 0 {
			if err := r.skip(wt); err != nil {
				return err
			}
			continue
		}
		v, err := r.varint()
		if err != nil {
			return err
		}
		switch num {
		case 3:
			m.modelType = int(v)
		case 35:
			m.byteFallback = v != 0
		case 40:
			m.unk = int(int32(v))
		case 41:
			m.bos = int(int32(v))
		case 42:
			m.eos = int(int32(v))
		case 43:
			m.pad = int(int32(v))
		}
	}
	return nil
}

func (m *spModel) normalizer(r *pbReader) error {
	for r.pos < len(r.b) {
		num, wt, err := r.field()
		if err != nil {
			return err
		}
		if num == 3 && wt == 0 {
			v, err := r.varint()
			if err != nil {
				return err
			}
			m.addDummyPrefix = v != 0
			continue
		}
		if err := r.skip(wt); err != nil {
			return err
		}
	}
	return nil
}

// parseSentencePiece builds a tokenizer from tokenizer.model bytes. BPE
// models use llama.cpp's score-driven merge (model "llama"); unigram models
// the Viterbi search.
//
// cfg (nil: none) gives what convert_hf_to_gguf.py adds: the vocabulary
// is sized to config.json's vocab_size ("[PADi]", score -10000, unused);
// added_tokens.json's tokens become user-defined with score -1000; and
// tokenizer_config.json's added_tokens_decoder ones control tokens (or
// user-defined ones when not special) with score -1000.
func parseSentencePiece(b []byte, file string, cfg *hfConfig) (*Tokenizer, error) {
	m, err := decodeSentencePiece(b, file)
	if err != nil {
		return nil, err
	}
	var added map[int]addedToken
	if cfg != nil {
		added = cfg.added
		for i := len(m.pieces); i < cfg.vocabSize; i++ {
			m.pieces = append(m.pieces, padToken(i))
			m.scores = append(m.scores, PadScore)
			m.types = append(m.types, TypeUnused)
		}
		for _, tok := range slices.Sorted(maps.Keys(cfg.addedJSON)) {
			id := cfg.addedJSON[tok]
			if id >= len(m.pieces) {
				continue // the converter ignores ids past vocab_size
			}
			m.pieces[id], m.scores[id], m.types[id] = tok, AddedTokenScore, TypeUserDefined
		}
	}
	for _, a := range sortedAdded(added) {
		if a.ID >= len(m.pieces) {
			continue
		}
		if a.Special || looksSpecial(a.Content) {
			m.types[a.ID] = TypeControl
			m.pieces[a.ID] = a.Content
		} else {
			m.types[a.ID] = TypeUserDefined
			m.pieces[a.ID] = strings.ReplaceAll(a.Content, phantomSpace, " ")
		}
		m.scores[a.ID] = AddedTokenScore
	}
	model := SPM
	if m.modelType == spUnigram {
		model = Unigram
	} else if m.modelType != spBPE {
		return nil, unsupportedErr(file, "trainer_spec.model_type", fmt.Sprintf("SentencePiece model type %d is not supported (only unigram and BPE)", m.modelType))
	}
	t, err := build(vocab{model: model, pre: "default", tokens: m.pieces, types: m.types, scores: m.scores}, file)
	if err != nil {
		return nil, err
	}
	for _, p := range []struct {
		dst *int
		v   int
	}{{&t.UNK, m.unk}, {&t.BOS, m.bos}, {&t.EOS, m.eos}, {&t.PAD, m.pad}} {
		if p.v >= 0 && p.v < len(t.tokens) {
			*p.dst = p.v
		}
	}
	t.AddBOS = model == SPM
	t.AddEOS = model == Unigram
	t.AddSpacePrefix, t.hasAddSpacePrefix = m.addDummyPrefix, true
	return t, nil
}

// pbWriter encodes protobuf wire format.
type pbWriter struct{ b []byte }

func (w *pbWriter) varint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *pbWriter) key(num, wt int) { w.varint(uint64(num)<<3 | uint64(wt)) }
func (w *pbWriter) bytes(num int, v []byte) {
	w.key(num, 2)
	w.varint(uint64(len(v)))
	w.b = append(w.b, v...)
}
func (w *pbWriter) uint(num int, v uint64) {
	w.key(num, 0)
	w.varint(v)
}

// encodeSentencePiece writes a ModelProto for a SentencePiece vocabulary:
// the pieces, a trainer spec with the model type, byte fallback and special
// ids, and an identity normalizer.
func (t *Tokenizer) encodeSentencePiece() []byte {
	var w pbWriter
	for i, p := range t.tokens {
		var pw pbWriter
		pw.bytes(1, []byte(p))
		pw.key(2, 5)
		pw.b = binary.LittleEndian.AppendUint32(pw.b, math.Float32bits(t.scores[i]))
		ty := t.types[i]
		// SentencePiece refuses a model without exactly one UNKNOWN piece
		// at unk_id ("unk is not defined"); llama.cpp's converter stores
		// LLaMA's <unk> as CONTROL, so the type is set from the id here.
		switch {
		case i == t.UNK:
			ty = TypeUnknown
		case ty == TypeUnknown:
			ty = TypeControl
		}
		if ty != TypeNormal && ty >= 1 && ty <= 6 {
			pw.uint(3, uint64(ty))
		}
		w.bytes(1, pw.b)
	}
	var tw pbWriter
	mt := spBPE
	if t.model == Unigram {
		mt = spUnigram
	}
	tw.uint(3, uint64(mt))
	hasBytes := false
	for _, id := range t.byteTok {
		hasBytes = hasBytes || id >= 0
	}
	if hasBytes {
		tw.uint(35, 1)
	}
	for _, f := range []struct{ num, id int }{{40, t.UNK}, {41, t.BOS}, {42, t.EOS}, {43, t.PAD}} {
		tw.uint(f.num, uint64(uint32(int32(f.id))))
	}
	w.bytes(2, tw.b)
	var nw pbWriter
	nw.bytes(1, []byte("identity"))
	prefix := uint64(0)
	if t.AddSpacePrefix {
		prefix = 1
	}
	nw.uint(3, prefix)
	nw.uint(4, 0) // remove_extra_whitespaces: llama.cpp keeps spaces as they are
	w.bytes(3, nw.b)
	return w.b
}
