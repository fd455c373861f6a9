// Package imatrix computes, reads and writes importance matrices: per weight
// matrix, the sum of the squared input activations of each column over a
// calibration text, what llama.cpp's llama-imatrix collects and
// llama-quantize --imatrix weighs the quantization error with.
//
// Compute follows llama-imatrix (tools/imatrix/imatrix.cpp, llama.cpp
// c392e509 and current):
//
//   - the text is tokenized with special tokens (BOS first when the
//     tokenizer adds it; one that adds EOS is refused, as llama-imatrix
//     asserts) and cut into ⌊n/ctx⌋ chunks of ctx tokens (at least
//     two; the tail is dropped), the first token of each chunk replaced by
//     BOS, each chunk run from an empty cache in evaluations of at most 512
//     tokens (llama.cpp's default micro-batch), as eval.Chunks cuts them
//     for perplexity;
//   - every multiply by a weight named blk.* is collected (output.weight
//     too with ProcessOutput; a tied head, token_embd.weight, never), but a
//     plain matrix only in evaluations of at least 16 tokens;
//   - a plain matrix keeps one count, the rows it has seen; a stacked
//     mixture weight (blk.N.ffn_*_exps.weight) keeps one count per expert,
//     the tokens routed to it, and its sums expert-major;
//   - sums are float32, added in the order the rows arrive.
//
// Files:
//
//	GGUF (current llama.cpp): general.type = "imatrix", imatrix.datasets
//	  (string array), imatrix.chunk_count, imatrix.chunk_size (u32); per
//	  weight W, sorted by name: "W.in_sum2" f32 [mats][cols] (the sums) and
//	  "W.counts" f32 [mats][1].
//	legacy .dat (formats/imatrixdat): per weight, sums/count × ncall with
//	  ncall = ⌈max count / chunk size⌉, a zero count stored as 1; written as
//	  current llama-imatrix writes it (names sorted; c392e509 wrote hash
//	  order, left out partly-seen mixture weights and counted ncall in
//	  evaluations, which is the same number for a plain matrix).
//
// Importance gives what llama-quantize multiplies the error by: sums/count
// (1 for an expert never routed to) from a GGUF, value/ncall from a .dat.
package imatrix
