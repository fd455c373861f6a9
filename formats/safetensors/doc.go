// Package safetensors reads and writes Hugging Face safetensors checkpoints,
// single files and sharded ones (model-00001-of-00003.safetensors plus
// model.safetensors.index.json).
//
// # Layout
//
// A safetensors file is a little-endian header length, a JSON header and a
// data section that runs to the end of the file:
//
//	offset 0        8                     8+N                       size
//	       +--------+---------------------+--------------------------+
//	       |   N    |  header: N bytes of |  data section: tensor    |
//	       | uint64 |  UTF-8 JSON object, |  bodies back to back, no |
//	       |   LE   |  space-padded       |  gaps, no trailing bytes |
//	       +--------+---------------------+--------------------------+
//
// The header is one JSON object. The optional key "__metadata__" holds a
// string→string object; every other key is a tensor name whose value is
// exactly
//
//	{"dtype":"F32","shape":[1000,64],"data_offsets":[BEGIN,END]}
//
// BEGIN and END are relative to the start of the data section (8+N), so the
// tensor's bytes sit at [8+N+BEGIN, 8+N+END) in the file. Elements are
// little-endian and row-major (C order).
//
// # Rules enforced when reading
//
// The reader is as strict as the reference implementation
// (huggingface/safetensors, safetensors/src/tensor.rs), plus the rules the
// reference leaves to serde but which tfconv needs to be unambiguous:
//
//   - N ≤ 100,000,000 (the reference's MAX_HEADER_SIZE) and 8+N ≤ file size.
//   - The header is valid UTF-8, starts with '{' (no leading whitespace) and
//     holds a single JSON object followed only by JSON whitespace; writers pad
//     with spaces so that 8+N is a multiple of 8.
//   - No key appears twice in any object: not a tensor name, not a key of
//     "__metadata__", not "dtype"/"shape"/"data_offsets" in a tensor entry.
//     (encoding/json and serde keep the last duplicate silently; two readers
//     could then disagree about what a file holds.)
//   - "__metadata__" is an object whose values are all strings.
//   - A tensor entry has exactly the keys dtype, shape and data_offsets.
//     dtype is one of the safetensors names, case-sensitive. shape is an
//     array of at most tensor.MaxDims non-negative integers whose product
//     does not overflow. data_offsets is a pair [BEGIN, END] of non-negative
//     integers with BEGIN ≤ END.
//   - END-BEGIN equals the element count times the dtype's size; the packed
//     sub-byte dtypes (F4, F6_E2M3, F6_E3M2) must fill whole bytes.
//   - Sorted by data_offsets, the tensors tile the data section from 0 with
//     no hole and no overlap, and the last END is the data section's length:
//     the data ends exactly at the end of the file.
//
// Parsing reads the 8+N header bytes and nothing else; tensor data is read
// lazily through Tensor.Open, so any io.ReaderAt (an *os.File, an mmap) works.
//
// # Writing
//
// Writer streams a file whose tensors were declared up front: the header is
// computed and written first, then each body in turn through Next. Its header
// is byte-for-byte what the reference serializer produces for the same
// tensors in the same order: compact JSON, "__metadata__" first, tensor
// entries in data order with keys dtype, shape, data_offsets, and strings
// escaped as serde_json escapes them. ReferenceOrder gives the order in which
// the reference lays tensors out (descending dtype, then name).
//
// ShardedWriter splits a checkpoint into shards of at most a given number of
// data bytes and writes model.safetensors.index.json as transformers does.
package safetensors
