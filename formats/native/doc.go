// Package native reads and writes tfconv's own checkpoint format (.tfn): a
// little-endian container that keeps everything a safetensors or GGUF file
// says (typed metadata in order, the model's config and tokenizer files) and
// adds a CRC-32C per tensor, so a checkpoint can be converted to native and
// back without loss and checked for corruption cheaply. The full
// specification is docs/native-format.md.
//
// Layout (all integers little-endian; str is a u64 byte length then the bytes):
//
//	offset 0   ┌──────────────────────────────────────────────────────────┐
//	           │ preamble (32 bytes)                                      │
//	           │  0 magic       "\x89TFN\r\n\x1a\n"                        │
//	           │  8 major u16 = 1      10 minor u16 = 0                   │
//	           │ 12 alignment u32 (power of two, default 64)              │
//	           │ 16 header_len u64                                        │
//	           │ 24 header_crc u32: CRC-32C of bytes [0,24), [28,32)      │
//	           │                    and the header                        │
//	           │ 28 flags u32 = 0 (reserved for minor versions)           │
//	32         ├──────────────────────────────────────────────────────────┤
//	           │ header (header_len bytes): everything inspect needs      │
//	           │  source str ("safetensors", "gguf" or "")                │
//	           │  source_info meta      metadata meta                     │
//	           │  aux_count u64, aux_count × {name str, size u64,         │
//	           │                              offset u64}                 │
//	           │  tensor_count u64, tensor_count × {name str, dtype str,  │
//	           │     rank u32, dims u64×rank (outermost first),           │
//	           │     offset u64, size u64, attrs meta}                    │
//	           ├──────────────────────────────────────────────────────────┤
//	           │ data: aux file bodies, then tensor data, in header order,│
//	           │ each at a multiple of alignment, zero padding between    │
//	table_off  ├──────────────────────────────────────────────────────────┤
//	           │ checksum table: u32 CRC-32C per body, aux then tensors   │
//	size-32    ├──────────────────────────────────────────────────────────┤
//	           │ footer (32 bytes)                                        │
//	           │  0 table_off u64    8 body count u64                     │
//	           │ 16 header_crc u32 (copy)                                 │
//	           │ 20 trailer_crc u32: CRC-32C of the table and footer[0,20)│
//	           │ 24 magic "TFN\x00TAIL"                                   │
//	size       └──────────────────────────────────────────────────────────┘
//
// meta is a u64 count of {key str, kind u32, value}; values are encoded as
// in GGUF v3 (kind numbers are GGUF's, floats keep their exact bits, arrays
// are {element kind u32, count u64, elements} and may nest).
//
// The checksums come after the data because a Writer streams to a plain
// io.Writer and only knows them once the bodies have passed; everything
// else is in the leading header, so inspecting a file reads its start (and
// the 32-byte footer plus the checksum table).
//
// Tensors carrying integer data with separate scales use two attributes:
// quant.scale, the name of an F32 tensor in the same file holding the scales,
// and quant.axis (int32), the axis the scales run along (absent or -1: one
// scale for the whole tensor). Both readers and the writer check that the
// scale tensor exists, is F32 and has as many elements as the axis is long.
package native
