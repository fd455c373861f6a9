// Package quantize applies a quantization policy to a whole checkpoint:
// Plan chooses a dtype per tensor with llama-quantize's rules, Run encodes
// tensor by tensor with the quant codecs and measures what each tensor lost,
// and Write puts the result in a GGUF, native or safetensors file.
//
// The policy is llama.cpp's (src/llama-quant.cpp at commit c392e509, the
// build the fixtures were made with):
//
//   - never quantized: tensors with fewer than two dimensions, names not
//     ending in "weight", "*_norm.weight", position_embd.weight,
//     token_types.weight, expert gates (ffn_gate_inp) and a few small
//     tensors of other architectures; they are copied unchanged;
//   - Pure: every other tensor gets the target type;
//   - otherwise the mixture rules of llama_tensor_get_type: output.weight
//     (or token_embd.weight when there is no output.weight) gets Q6_K unless
//     the target is Q8_0; for Q4_K_M and Q5_K_M the attn_v and ffn_down
//     tensors of the layers use_more_bits picks (first and last eighth, every
//     third in between) get Q6_K, attn_qkv Q5_K (Q4_K_M); Q2_K and Q3_K_M
//     raise attn_v, ffn_down and attn_output; IQ4_NL and IQ4_XS give attn_v
//     Q5_K when 4 or more heads share a KV head, and ffn_down of the first
//     eighth of the layers Q5_K when there is no importance matrix; a model
//     of 8 experts gets Q8_0 attn_v and attn_k (and Q5_K attn_output for
//     most mixtures, IQ4_NL and IQ4_XS among them);
//   - the IQ3 mixtures: IQ3_S everywhere but Q4_K attn_v under GQA ≥ 4
//     (IQ3_S, IQ3_XS) or always (IQ3_M, which also gives attn_output,
//     attn_qkv and ffn_down of the first eighth Q4_K); IQ3_XS gives attn_q,
//     attn_k and the middle ffn_gate/ffn_up IQ3_XXS; the IQ3_XXS mixture
//     gives attn_q/attn_k IQ2_S, attn_output and token_embd IQ3_S;
//   - IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S (and IQ1_M but for token_embd and
//     output) are refused for a tensor without an importance matrix entry,
//     as llama-quantize refuses them;
//   - the 2-bit grid mixtures (IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M) and the
//     1-bit ones (IQ1_S, IQ1_M) have a branch of their own: output Q5_K,
//     attn_v Q4_K under GQA ≥ 4, and token_embd, attn_v and the first
//     eighth of ffn_down Q2_K or IQ3_S; attn_output IQ2_XXS (IQ1_S, IQ1_M)
//     or IQ3_S (IQ2_S, IQ2_M); their IQ1 and IQ2 tensors need an importance
//     matrix entry, as in llama-quantize;
//   - overrides (PATTERN=TYPE, regexp searched in the name, first match
//     wins) replace the rules for the tensors they match;
//   - with an importance matrix (Options.Imatrix, by GGUF name) the Q4_0
//     and Q5_0 mixtures give ffn_down of the first eighth of the layers
//     Q4_1/Q5_1, and Run quantizes with quant.QuantizeRows weighted by the
//     tensor's entry (one per expert of a stacked weight); the output
//     records the quantize.imatrix.* keys (ImatrixMetadata);
//   - mxfp4_moe (ftype 38, from llama.cpp after c392e509: the snapshot
//     testdata/quantize/README.md names): stacked experts (ggml ne[2] > 1)
//     MXFP4, every other quantizable tensor Q8_0, output and token_embd
//     included;
//   - Options.PruneLayers drops whole blocks and renumbers the rest as
//     that llama-quantize's --prune-layers means to (prune.go): the rules
//     see the new names, the importance matrix is looked up by the old;
//   - a row length the block size does not divide falls back as llama.cpp
//     does: Q4_K→Q5_0, Q5_K→Q5_1, Q6_K→Q8_0, Q2_K/Q3_K/IQ4_XS/IQ3_XXS/IQ3_S
//     →IQ4_NL, and
//     F16 when 32 does not divide it either. The Choice's Reason says so.
//
// Output layouts:
//
//	GGUF:        input KVs in order, general.quantization_version = 2
//	             and general.file_type = llama.cpp ftype moved last (then
//	             --override-kv, imatrix keys, a pruned block_count);
//	             tensors in llama-quantize's order (by block, then by name)
//	native:      the same metadata and tensors, Source "gguf"; int8 tensors
//	             carry quant.scale / quant.axis attributes
//	safetensors: f16, bf16 or int8; no metadata
//
//	int8 tensor W [rows, cols]:  "W"        I8  [rows, cols]   q
//	                             "W.scale"  F32 [rows]         s   (W ≈ s[r]·q[r, c])
//
// The error report compares the output, decoded again with quant.Dequantize,
// against the input decoded to float32: RMSE, max |x−y| and SQNR =
// 10·log10(Σx²/Σ(x−y)²) dB.
package quantize
