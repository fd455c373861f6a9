// Package check validates checkpoint files against their specifications and
// against tfconv's stricter rules, and lists every defect it finds instead of
// stopping at the first, as the readers in formats/* do.
//
// Check walks a file's header leniently, with the format package's own walk
// (gguf.Walk with a Problem callback) rather than a parser of its own: where
// a reader would refuse the file, the walk records a Finding and carries on,
// so one run names the hole, the overlap and the duplicate name of a file
// that has all three. A
// defect that leaves nothing to parse (a truncated header, a length that runs
// past the end, broken JSON) is one finding, and the walk stops there. Every
// float tensor whose bytes lie inside the file is then decoded, a bounded
// chunk at a time, and counted for NaN and ±Inf; native files also have each
// body's CRC-32C recomputed.
//
// Each Finding carries a stable rule id (Rules lists them with their
// severity and meaning), the file, the byte offset of the defect (-1 when it
// has none), the key or tensor concerned and a message. The ids are part of
// tfconv's interface: scripts match on them, so an id is never renamed or
// reused.
//
// Finally the strict reader runs on the same file; a file it refuses for a
// reason the walk did not name gets the catch-all finding "<format>-rejected",
// so Check never reports a file as clean that the readers refuse.
//
// What Check reads, by the file's first bytes (as checkpoint.Open decides):
//
//	"GGUF" (or "FUGG")      GGUF, and the whole set if the name is
//	                        <prefix>-NNNNN-of-NNNNN.gguf
//	"\x89TFN\r\n\x1a\n"    tfconv native
//	"PK\x03\x04"           a PyTorch zip checkpoint (torch.save since 1.6)
//	"\x80\x02\x8a\x0a" + the torch magic number
//	                       a legacy PyTorch checkpoint
//	"{" (after spaces)     a pytorch_model.bin.index.json (by its name) or a
//	                       model.safetensors.index.json, and its shards
//	anything else          safetensors
//
// A directory is read as a Hugging Face checkpoint: model.safetensors, else
// model.safetensors.index.json, else pytorch_model.bin, else
// pytorch_model.bin.index.json.
//
// A PyTorch pickle is never executed: the reader's own machine walks it with
// its stop at a disallowed global turned off, so every global outside the
// allow-list is a pytorch-global finding.
package check
