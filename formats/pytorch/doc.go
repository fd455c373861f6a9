// Package pytorch reads PyTorch checkpoints (pytorch_model.bin, the files
// torch.save writes for a state dict) without running them: the pickle is
// interpreted by a machine of this package that builds plain values and
// resolves only an allow-list of globals. Nothing the file names is ever
// imported or called.
//
// # Layout
//
// Since torch 1.6, torch.save writes a zip archive whose records are stored
// uncompressed, each record's data aligned to 64 bytes:
//
//	<prefix>/data.pkl      the pickled state dict (protocol 2)
//	<prefix>/data/<key>    one record per storage: its raw bytes, little-endian
//	<prefix>/version       the format version ("3\n")
//	<prefix>/byteorder     "little" (torch ≥ 2.1; absent means little)
//
// The prefix is "archive" for a file saved through a file object and the
// file's stem when saved by path with torch < 2. Tensors in data.pkl are
//
//	torch._utils._rebuild_tensor_v2(STORAGE, storage_offset, size, stride,
//	                                requires_grad, backward_hooks[, metadata])
//
// where STORAGE is a persistent id (BINPERSID) resolved by the loader:
//
//	('storage', torch.FloatStorage, key, location, numel)
//
// so a tensor is a view (offset, size, stride, in elements) of the record
// data/<key>. Tensors that share a key share memory (tied weights, views).
//
// The legacy format (_use_new_zipfile_serialization=False) is a sequence
// of pickles followed by the storages:
//
//	offset 0   pickle: the magic number 0x1950a86a20f9469cfc6c (LONG1)
//	           pickle: the protocol version, 1001
//	           pickle: sys_info {"protocol_version", "little_endian", "type_sizes"}
//	           pickle: the state dict; persistent ids are
//	                   ('storage', StorageType, key, location, numel, None)
//	           pickle: the list of storage keys, in data order
//	then, per key in that order:
//	           +-----------------+----------------------------------+
//	           | numel: uint64 LE| numel × element size bytes       |
//	           +-----------------+----------------------------------+
//
// and nothing after the last storage. (torch/serialization.py, _legacy_save
// and _legacy_load, torch 1.13.)
//
// # What the reader accepts
//
// The pickle machine runs protocols 2 to 5, the opcodes a pickler emits for
// dicts, lists, tuples, strings, ints, floats and bools, and the globals
//
//	collections.OrderedDict
//	torch._utils._rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3
//	torch._utils._rebuild_parameter, _rebuild_parameter_with_state
//	torch.<X>Storage (Float, Half, BFloat16, Double, Long, Int, Short,
//	                  Char, Byte, Bool, ComplexFloat; Untyped as uint8)
//	torch.<dtype> (float16, bfloat16, ...) as _rebuild_tensor_v3's dtype
//
// Any other global is an error naming it (module.name) and the offset of
// its opcode. REDUCE, NEWOBJ and BUILD act only on these, each by code of
// this package: OrderedDict() makes an empty dict, _rebuild_* make a tensor
// view, BUILD on a dict (the state dict's _metadata) is ignored. The result
// must be a dict whose keys are strings and whose values are tensors.
//
// Every count and length is capped (MaxPickleLen, MaxStack, MaxMarks,
// MaxMemo, MaxObjects, MaxStringLen, MaxStringBytes, MaxLongLen,
// MaxStorages), so a hostile pickle costs tens of MB at most; nothing is
// walked recursively, so deep nesting and cycles cost nothing. Each view's
// offset, size and stride are checked, overflow-safe, against the bytes its
// storage has in the file.
//
// A contiguous view is read in place through an io.SectionReader. Any other
// view (a transpose, a strided slice) is gathered, row-major, into a buffer
// of the tensor's own size when it is first read.
package pytorch
