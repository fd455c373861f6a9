// Package gguf reads and writes GGUF, the file format of ggml and llama.cpp:
// typed metadata followed by a directory of tensors and their data.
//
// # Layout (version 3; version 2 is identical)
//
// All integers are little-endian. Offsets on the left are from the start of
// the file.
//
//	0        4        8                16               24
//	+--------+--------+----------------+----------------+
//	| "GGUF" | u32    | u64 n_tensors  | u64 n_kv       |
//	| magic  | version|                |                |
//	+--------+--------+----------------+----------------+
//	| n_kv key-value pairs:                             |
//	|   string key | u32 value type | value             |
//	+---------------------------------------------------+
//	| n_tensors tensor infos:                           |
//	|   string name | u32 n_dims | n_dims × i64 ne      |
//	|   | u32 ggml type | u64 offset (from data start)  |
//	+---------------------------------------------------+
//	| zero padding to the alignment (only when          |
//	| n_tensors > 0)                                    |
//	+---------------------------------------------------+ <- DataOffset
//	| tensor 0 data | zero padding to the alignment     |
//	| tensor 1 data | zero padding to the alignment     |
//	| ...                                               |
//	+---------------------------------------------------+
//
// A string is a u64 byte length followed by that many bytes (no NUL). ne is
// ggml's dimension order, innermost first: ne[0] is the row length. File
// and Tensor expose tensor.Shape, which is row-major (outermost first), so
// Shape is ne reversed. The alignment is general.alignment (a uint32) or 32.
//
// # Values
//
// The u32 value type is gguf_type, and tensor.Kind uses the same numbers:
//
//	0 uint8    1 byte            7 bool     1 byte, 0 or 1
//	1 int8     1 byte            8 string   u64 length + bytes
//	2 uint16   2 bytes           9 array    u32 element type, u64 count,
//	3 int16    2 bytes                      then count elements
//	4 uint32   4 bytes          10 uint64   8 bytes
//	5 int32    4 bytes          11 int64    8 bytes
//	6 float32  4 bytes (IEEE)   12 float64  8 bytes (IEEE)
//
// Array elements are encoded without their own type tag. An array may hold
// arrays (each with its own element type and count); ggml itself refuses
// those, gguf-py reads them, and this package reads them up to 4 levels deep.
//
// # Rules the reader enforces
//
// They include every check of ggml's loader (ggml/src/gguf.cpp), and are
// stricter in places (n_dims 0, non-0/1 bools, NUL in names, data inside the
// file); the one exception is arrays of arrays, described above:
//
//   - magic "GGUF"; version 2 or 3. Version 1 (32-bit counts) and big-endian
//     files (whose version reads as 0x02000000 / 0x03000000) are reported as
//     tensor.ErrUnsupported.
//   - every count and length is checked against the bytes left in the file
//     before anything is allocated from it; strings are at most 1 GiB and
//     arrays at most 2^30 elements, as in ggml.
//   - keys are non-empty and unique; value types are 0..12; bools are 0 or 1.
//   - general.alignment, when present, is a uint32 holding a non-zero power of
//     two.
//   - tensor names are non-empty, unique, shorter than 64 bytes
//     (GGML_MAX_NAME) and free of NUL bytes.
//   - 1 <= n_dims <= 4; every ne >= 0 and their product fits in an int64.
//     An ne of 0 is read (the spec allows it) though ggml's loader divides
//     by ne[1..3] and dies on it; the Writer refuses it (CheckTensor).
//   - the type is a current ggml type; ids ggml has removed (4, 5, 31-33,
//     36-38) and unknown ids are reported as tensor.ErrUnsupported, naming the
//     id.
//   - ne[0] is a multiple of the type's block size; the byte size fits in an
//     int64.
//   - each tensor's offset is a multiple of the alignment and equals the sum
//     of the previous tensors' sizes, each padded to the alignment (ggml
//     requires exactly this, which rules out gaps and overlaps); the data
//     section and every tensor's data lie inside the file.
//   - nothing follows the last tensor's data but its padding (without
//     tensors: the metadata and at most one alignment's worth of bytes);
//     ggml ignores such trailing bytes, this reader refuses them.
//
// Every defect is a *tensor.FormatError naming the file, the key or tensor and
// the absolute offset of the field at fault.
//
// # One walk, two modes
//
// Walk is the only parse of the header. NewFile runs it strictly (it stops at
// the first defect) and then checks the layout; package check runs it
// leniently (WalkOptions.Problem receives every defect as a Problem with a
// Code, and the walk goes on wherever the rest of the header can still be
// located), adding lints the format allows but ggml refuses or never writes
// (arrays of arrays, a 0 dimension, non-zero padding). The limits above are
// declared once, in walk.go.
//
// # Writing
//
// Writer produces version 3 in the order it is given, laid out exactly as
// ggml's gguf_write_to_file does (and as gguf-py does): each tensor's data is
// followed by zero padding to the alignment, including the last one, and a
// file without tensors ends right after its metadata. Reading a file written
// by llama.cpp and writing it back yields the same bytes. It writes only
// what ggml loads (CheckTensor): no dimension is 0.
//
// # Split files
//
// llama.cpp's gguf-split cuts a model into <prefix>-00001-of-0000N.gguf files.
// The first carries all metadata; every shard carries split.no (uint16, from
// 0), split.count (uint16) and split.tensors.count (int32, the total over all
// shards). OpenSplit reads such a set and SplitWriter writes one.
//
// # Editing metadata
//
// Edit sets and deletes keys without touching tensor data. Because the data
// section starts at the header's end rounded up to the alignment, and GGUF
// has no field for extra padding, a new header can be written over the old
// one in place only when it rounds up to the same offset:
//
//	old: | header ........ | pad | tensor 0 | pad | tensor 1 ...
//	new: | header ...... |  pad  | tensor 0 | pad | tensor 1 ...   same data offset: in place possible
//	new: | header .............. | pad | tensor 0 | ...              offsets move: rewrite
//
// Otherwise (and by default, since an in-place write is not atomic) the file
// is rewritten with every body copied, and each tensor's sha256 is compared
// between input and output before the output replaces anything.
package gguf
