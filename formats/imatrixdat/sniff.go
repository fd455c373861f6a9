package imatrixdat

import "encoding/binary"

// Sniff reports whether head, a file's first bytes (at least 9 of them),
// starts an imatrix.dat file: an entry count, a name length, both in range,
// and the first bytes of the name printable ASCII (a GGUF tensor name). No
// safetensors file starts so: bytes 4..7 would make its header length
// 4 GiB or more.
func Sniff(head []byte) bool {
	if len(head) < 9 {
		return false
	}
	n := int32(binary.LittleEndian.Uint32(head))
	l := int32(binary.LittleEndian.Uint32(head[4:]))
	if n < 1 || n > MaxEntries || l < 1 || l > MaxName {
		return false
	}
	name := head[8:min(len(head), 8+int(l))]
	for _, c := range name {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}
