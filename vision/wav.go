package vision

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// Audio is decoded sound: mono samples in [-1, 1] at Rate samples per
// second.
type Audio struct {
	Rate    int
	Samples []float32
}

// ErrWAV is the error every malformed WAV file wraps.
var ErrWAV = errors.New("vision: not a WAV file tfconv reads")

// maxWAVBytes caps the bytes a WAV file is read to (an hour of 16 kHz
// stereo float32 is 460 MB); a longer file is refused, not truncated.
const maxWAVBytes = 1 << 30

// wavError is a malformed WAV file's error: the file, the byte offset and
// what is wrong there.
type wavError struct {
	name string
	off  int64
	msg  string
}

func (e *wavError) Error() string {
	return fmt.Sprintf("vision: %s: offset %d: %s", e.name, e.off, e.msg)
}

func (e *wavError) Unwrap() error { return ErrWAV }

// OpenWAV reads the WAV file at path (DecodeWAV).
func OpenWAV(path string) (*Audio, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("vision: %w", err)
	}
	defer f.Close()
	return DecodeWAV(path, f)
}

// DecodeWAV decodes a RIFF WAVE stream (name is what errors call it):
// integer PCM of 8, 16, 24 or 32 bits (format 1) or IEEE float of 32 or
// 64 bits (format 3; either as WAVE_FORMAT_EXTENSIBLE's subformat), any
// number of channels, mixed down to mono by averaging the channels, as
// llama.cpp's mtmd asks miniaudio for one channel of float32. Integer
// samples are scaled as miniaudio converts them (s16 / 32768, u8 (x − 128)
// / 128, s24 / 2²³, s32 / 2³¹). The rate is the file's: Whisper-style
// encoders want 16000, and WhisperMel refuses another rate (mtmd resamples
// with miniaudio; tfconv does not yet).
//
//	offset  size  field
//	0       4     "RIFF"
//	4       4     file size − 8 (little-endian)
//	8       4     "WAVE"
//	12      …     chunks: 4-byte id, 4-byte size, body (padded to even):
//	              "fmt " (format, channels, rate, byte rate, block align,
//	              bits per sample[, extension]), "data" (interleaved frames)
func DecodeWAV(name string, r io.Reader) (*Audio, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxWAVBytes+1))
	if err != nil {
		return nil, fmt.Errorf("vision: %s: %w", name, err)
	}
	if len(b) > maxWAVBytes {
		return nil, &wavError{name, maxWAVBytes, "file larger than 1 GiB"}
	}
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, &wavError{name, 0, "no RIFF/WAVE header"}
	}
	var (
		format, channels, bits uint16
		rate                   uint32
		haveFmt                bool
		data                   []byte
		dataOff                int64
	)
	for off := 12; off+8 <= len(b); {
		id := string(b[off : off+4])
		size := int64(binary.LittleEndian.Uint32(b[off+4:]))
		body := int64(off) + 8
		if size > int64(len(b))-body {
			return nil, &wavError{name, int64(off) + 4, fmt.Sprintf("chunk %q of %d bytes runs past the end of the file (%d bytes)", id, size, len(b))}
		}
		chunk := b[body : body+size]
		switch id {
		case "fmt ":
			if size < 16 {
				return nil, &wavError{name, body, fmt.Sprintf("fmt chunk of %d bytes, want at least 16", size)}
			}
			format = binary.LittleEndian.Uint16(chunk[0:])
			channels = binary.LittleEndian.Uint16(chunk[2:])
			rate = binary.LittleEndian.Uint32(chunk[4:])
			bits = binary.LittleEndian.Uint16(chunk[14:])
			if format == 0xFFFE { // WAVE_FORMAT_EXTENSIBLE: the subformat GUID's first two bytes
				if size < 26 {
					return nil, &wavError{name, body, "WAVE_FORMAT_EXTENSIBLE fmt chunk without its subformat"}
				}
				format = binary.LittleEndian.Uint16(chunk[24:])
			}
			haveFmt = true
		case "data":
			data, dataOff = chunk, body
		}
		off = int(body + size + size&1)
		if data != nil && haveFmt {
			break
		}
	}
	if !haveFmt {
		return nil, &wavError{name, 12, "no fmt chunk"}
	}
	if data == nil {
		return nil, &wavError{name, 12, "no data chunk"}
	}
	if channels == 0 || channels > 64 {
		return nil, &wavError{name, 22, fmt.Sprintf("%d channels", channels)}
	}
	if rate == 0 || rate > 1<<20 {
		return nil, &wavError{name, 24, fmt.Sprintf("sample rate %d", rate)}
	}
	var dec func([]byte) float32
	switch {
	case format == 1 && bits == 8:
		dec = func(p []byte) float32 { return float32(int(p[0])-128) / 128 }
	case format == 1 && bits == 16:
		dec = func(p []byte) float32 { return float32(int16(binary.LittleEndian.Uint16(p))) / 32768 }
	case format == 1 && bits == 24:
		dec = func(p []byte) float32 {
			v := int32(uint32(p[0])<<8|uint32(p[1])<<16|uint32(p[2])<<24) >> 8
			return float32(float64(v) / (1 << 23))
		}
	case format == 1 && bits == 32:
		dec = func(p []byte) float32 { return float32(float64(int32(binary.LittleEndian.Uint32(p))) / (1 << 31)) }
	case format == 3 && bits == 32:
		dec = func(p []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(p)) }
	case format == 3 && bits == 64:
		dec = func(p []byte) float32 { return float32(math.Float64frombits(binary.LittleEndian.Uint64(p))) }
	default:
		return nil, &wavError{name, 20, fmt.Sprintf("format %d with %d bits per sample (PCM 8/16/24/32 and float 32/64 are read)", format, bits)}
	}
	width := int(bits / 8)
	frame := width * int(channels)
	if len(data)%frame != 0 {
		return nil, &wavError{name, dataOff, fmt.Sprintf("data of %d bytes is not whole frames of %d bytes", len(data), frame)}
	}
	n := len(data) / frame
	out := make([]float32, n)
	for i := range n {
		p := data[i*frame:]
		if channels == 1 {
			out[i] = dec(p)
			continue
		}
		var sum float32
		for c := range int(channels) {
			sum += dec(p[c*width:])
		}
		out[i] = sum / float32(channels)
	}
	return &Audio{Rate: int(rate), Samples: out}, nil
}
