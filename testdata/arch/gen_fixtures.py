#!/usr/bin/env python3
"""Tiny checkpoints of the architecture families of package arch, made by the reference tools themselves.

For each family F in FAMILIES this writes testdata/arch/F/:

  hf/               transformers' own model class with random weights (every parameter redrawn "wide", see
                    randomize()), saved by save_pretrained (float32 safetensors), plus a real trimmed 1000-entry
                    tokenizer (SentencePiece from shared/fixtures/interop/llama, byte-level BPE from
                    shared/fixtures/interop/gpt2)
  hf/reference.json the float32 logits transformers computes for INPUT_IDS (eval, eager attention, 1 thread,
                    no_grad) and, in generate.json, greedy generate() ids
  gguf/F-f32.gguf   llama.cpp's own convert_hf_to_gguf.py --outtype f32, unmodified except for the pre-tokenizer
                    name (see convert())
  gguf/F-f32.logits.json  llama.cpp's logits for INPUT_IDS on that GGUF (tools/logits_dump.cpp)

tfconv's code is never run. Usage, from the repository root (paths of the tool trees as arguments):

  PYTHONPATH=testdata/arch/pyshim:<transformers v4.43.4>/src /usr/bin/python3 testdata/arch/gen_fixtures.py \
      <llama.cpp tree> <logits-dump binary> <shared/fixtures> [FAMILY ...]

The families in NEWER (phi4mini, smollm3, seedoss and the other 2025–26 families) need transformers v4.57.6 and the newer llama.cpp ($NEW_LLAMACPP,
$NEW_LOGITS_DUMP); README.md gives the Debian trixie chroot command that runs them.

Numbers are written as the shortest decimal that reads back as the same float32 (numpy's repr).
"""

import json
import os
import shutil
import subprocess
import sys
import zlib

import numpy as np
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
INPUT_IDS = [1, 15, 250, 999, 3, 87, 512, 640, 33, 998, 421, 77]
PROMPT = 6
NEW_TOKENS = 8
# Families whose generate.json holds more greedy tokens: every family with recurrent layers (the state carried
# over a longer decode; issue 32 asks for 32 greedy tokens).
NEW_TOKENS_OF = {f: 32 for f in ("mamba", "jamba", "mamba2", "mamba2-groups", "granitehybrid", "granitehybrid-dense",
                                 "falcon_h1", "lfm2", "lfm2moe", "nemotron_h", "qwen3next")}

torch.set_num_threads(1)

if not hasattr(torch, "_dynamo"):
    # Gemma 2's HybridCache marks its buffers for torch.compile, which Debian's torch 1.13 predates; the mark
    # is an annotation only, so a no-op stands in.
    import types
    torch._dynamo = types.SimpleNamespace(mark_static_address=lambda t: None)

if "bias" not in torch.nn.LayerNorm.__init__.__code__.co_varnames:
    # torch 1.13's LayerNorm predates bias=False (torch 2.1), which StableLM's per-head norms ask for; the same
    # module without its bias parameter stands in (F.layer_norm takes bias=None).
    class _LayerNorm(torch.nn.LayerNorm):
        def __init__(self, *args, bias=True, **kwargs):
            super().__init__(*args, **kwargs)
            if not bias:
                self.bias = None
    torch.nn.LayerNorm = _LayerNorm

# The chat template carried by two fixtures (a real one's shape: Zephyr/ChatML style).
CHAT_TEMPLATE = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
                 "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")

BASE = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, vocab_size=1000,
            max_position_embeddings=128)

# Falcon's config has no intermediate_size (its MLP is 4·hidden) and the converter writes a context of 2048.
FALCON = {k: v for k, v in BASE.items() if k != "intermediate_size"}

# Llama 4's text model: 4 layers, a mixture in every second one (interleave_moe_layer_step 2: layers 1 and 3) of 4
# experts of width 32 with one used per token (its sigmoid score scales the expert's input) beside a shared expert,
# dense layers 128 wide (intermediate_size_mlp); layers 0-2 rotate and attend within chunks of 4 tokens
# (attention_chunk_size < the 12 ids, so chunking matters) with weightless L2 norms of Q and K, layer 3 attends
# globally without RoPE and with temperature tuning from position 3 on (floor_scale 4); Scout's llama3 rope_scaling
# (low = high frequency factor 1), GQA 4/2, untied.
LLAMA4_TEXT = dict(BASE, num_hidden_layers=4, intermediate_size=32, intermediate_size_mlp=128, num_key_value_heads=2,
                   head_dim=16, num_local_experts=4, num_experts_per_tok=1, interleave_moe_layer_step=2,
                   no_rope_layer_interval=4, attention_chunk_size=4, attn_temperature_tuning=True, floor_scale=4,
                   attn_scale=0.1, use_qk_norm=True, rope_theta=500000.0,
                   rope_scaling={"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 1.0, "original_max_position_embeddings": 8192},
                   pad_token_id=999, bos_token_id=999, eos_token_id=999, tie_word_embeddings=False)

# family -> (config class, model class, config kwargs, tokenizer kind, pre-tokenizer name for BPE, chat template).
# Every BPE fixture carries GPT-2's trimmed vocabulary, so its pre-tokenizer is GPT-2's whatever the family.
FAMILIES = {
    "mistral": ("MistralConfig", "MistralForCausalLM",
                dict(BASE, num_key_value_heads=2, rope_theta=500000.0, sliding_window=8, tie_word_embeddings=False),
                "spm", None, True),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM",
              dict(BASE, num_key_value_heads=2, rope_theta=1000000.0, tie_word_embeddings=False, use_sliding_window=False,
                   bos_token_id=999, eos_token_id=999),
              "bpe", "gpt-2", True),
    # Mixtral's form: 4 experts, 2 used per token (the converter's LlamaModel stacks w1/w2/w3 per layer).
    "mixtral": ("MixtralConfig", "MixtralForCausalLM",
                dict(BASE, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, sliding_window=None,
                     rope_theta=1000000.0, tie_word_embeddings=False),
                "spm", None, False),
    # Qwen1.5-MoE's form: 4 experts of width 32, 2 used (weights not renormalised), a shared expert of width 96
    # behind its sigmoid gate, Q/K/V biases.
    "qwen2moe": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM",
                 dict(BASE, num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                      shared_expert_intermediate_size=96, norm_topk_prob=False, decoder_sparse_step=1,
                      mlp_only_layers=[], use_sliding_window=False, rope_theta=1000000.0, tie_word_embeddings=False,
                      bos_token_id=999, eos_token_id=999),
                 "bpe", "gpt-2", False),
    # Mistral NeMo's form: head_dim stated and larger than hidden/heads (queries 128 wide for a hidden size of 64).
    "mistral-headdim": ("MistralConfig", "MistralForCausalLM",
                        dict(BASE, num_key_value_heads=2, head_dim=32, sliding_window=None, tie_word_embeddings=False),
                        "spm", None, False),
    # Gemma 7B's form: head_dim 32 with 4 heads over a hidden size of 64, grouped key/value heads.
    "gemma-headdim": ("GemmaConfig", "GemmaForCausalLM",
                      dict(BASE, num_key_value_heads=2, head_dim=32, hidden_activation="gelu_pytorch_tanh",
                           pad_token_id=0, bos_token_id=1, eos_token_id=2),
                      "spm", None, False),
    # Pythia's sibling form with use_parallel_residual false (sequential attention then MLP), rotary_pct 0.5.
    "gpt_neox-seq": ("GPTNeoXConfig", "GPTNeoXForCausalLM",
                     dict(BASE, rotary_pct=0.5, use_parallel_residual=False, tie_word_embeddings=False,
                          bos_token_id=999, eos_token_id=999),
                     "bpe", "gpt-2", False),
    # Qwen2.5 0.5B's form: tied embeddings, and vocab_size past the tokenizer (padded BPE vocabulary).
    "qwen2-tied": ("Qwen2Config", "Qwen2ForCausalLM",
                   dict(BASE, vocab_size=1024, num_key_value_heads=2, rope_theta=1000000.0, tie_word_embeddings=True,
                        use_sliding_window=False, bos_token_id=999, eos_token_id=999),
                   "bpe", "gpt-2", False),
    "gemma": ("GemmaConfig", "GemmaForCausalLM",
              dict(BASE, num_key_value_heads=1, head_dim=16, hidden_activation="gelu_pytorch_tanh", pad_token_id=0,
                   bos_token_id=1, eos_token_id=2),
              "spm", None, False),
    # llama.cpp c392e509 runs Gemma 2 only at the layer counts of the published sizes (26 = "2B"; any other
    # aborts in build_gemma2), so this one has 26 narrow layers.
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM",
               dict(BASE, hidden_size=32, intermediate_size=64, num_hidden_layers=26,
                    num_key_value_heads=2, head_dim=8, hidden_activation="gelu_pytorch_tanh",
                    query_pre_attn_scalar=8, attn_logit_softcapping=2.0, final_logit_softcapping=3.0,
                    sliding_window=4, pad_token_id=0, bos_token_id=1, eos_token_id=2),
               "spm", None, False),
    "phi3": ("Phi3Config", "Phi3ForCausalLM",
             dict(BASE, num_key_value_heads=2, original_max_position_embeddings=128, rope_scaling=None,
                  sliding_window=None, pad_token_id=0, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False),
             "spm", None, False),
    # Phi-3 128k / 3.5's LongRoPE with a tiny original context, so the 12-token reference uses the long factors
    # and greedy generation crosses from the short ones to the long ones.
    # Its vocab_size 1024 > the tokenizer's 1000 (as Phi-3's 32064 > 32011): the converter pads the vocabulary.
    "phi3-longrope": ("Phi3Config", "Phi3ForCausalLM",
                      dict(BASE, vocab_size=1024, num_key_value_heads=2, original_max_position_embeddings=8,
                           rope_scaling={"type": "longrope",
                                         "short_factor": [1.0, 1.0, 1.05, 1.1, 1.2, 1.4, 1.7, 2.0],
                                         "long_factor": [1.0, 1.3, 1.9, 2.8, 4.5, 7.1, 12.0, 20.0]},
                           sliding_window=None, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                           tie_word_embeddings=False),
                      "spm", None, False),
    # Phi-4-mini's form (transformers 4.49+; the newer llama.cpp): RoPE on 3/4 of each head (partial_rotary_factor
    # 0.75: 12 of 16 dimensions), so the LongRoPE factor lists have 6 entries; tied embeddings; its GPT2Tokenizer
    # (byte-level BPE) with vocab_size 1024 past the tokenizer's 1000; pad = bos = eos.
    "phi4mini": ("Phi3Config", "Phi3ForCausalLM",
                 dict(BASE, vocab_size=1024, num_key_value_heads=2, partial_rotary_factor=0.75,
                      original_max_position_embeddings=8,
                      rope_scaling={"type": "longrope", "short_factor": [1.0, 1.02, 1.1, 1.3, 1.6, 2.0],
                                    "long_factor": [1.0, 1.5, 2.5, 4.5, 8.0, 16.0]},
                      sliding_window=None, pad_token_id=999, bos_token_id=999, eos_token_id=999,
                      tie_word_embeddings=True),
                 "bpe", "gpt-2", False),
    # SmolLM3's form (transformers 4.54+; the newer llama.cpp): LLaMA with no RoPE in every fourth layer
    # (no_rope_layers, from no_rope_layer_interval 4), 4 layers so that layer 3 is one; tied embeddings, GQA 4/2.
    "smollm3": ("SmolLM3Config", "SmolLM3ForCausalLM",
                dict(BASE, num_hidden_layers=4, num_key_value_heads=2, rope_theta=5000000.0, use_sliding_window=False,
                     pad_token_id=999, bos_token_id=999, eos_token_id=999, tie_word_embeddings=True),
                "bpe", "gpt-2", False),
    # LFM2's form (transformers 4.54+; the newer llama.cpp): 4 layers, short gated convolutions (conv_L_cache 3)
    # in layers 0, 1 and 3, attention with per-head Q/K RMSNorms in layer 2 (layer_types), GQA 4/2; the
    # feed-forward width adjusted as LFM2 does (block_auto_adjust_ff_dim: ⌊2·200/3⌋ = 133, rounded up to a
    # multiple of block_multiple_of 32: 160), norm_eps 1e-5, rope_theta 1e6, tied.
    "lfm2": ("Lfm2Config", "Lfm2ForCausalLM",
             dict(BASE, num_hidden_layers=4, intermediate_size=200, num_key_value_heads=2, rope_theta=1000000.0,
                  norm_eps=1e-5, conv_L_cache=3, conv_bias=False, block_multiple_of=32, block_ffn_dim_multiplier=1.0,
                  block_auto_adjust_ff_dim=True, layer_types=["conv", "conv", "full_attention", "conv"],
                  pad_token_id=999, bos_token_id=999, eos_token_id=999, tie_word_embeddings=True),
             "bpe", "gpt-2", False),
    # Seed-OSS's form (transformers 4.57; the newer llama.cpp): Qwen2's block (Q/K/V biases, NEOX rotation) with
    # head_dim 32 so that the query width 128 is not hidden_size, no output-projection bias (attention_out_bias),
    # untied embeddings, GQA 4/2.
    "seedoss": ("SeedOssConfig", "SeedOssForCausalLM",
                dict(BASE, num_key_value_heads=2, head_dim=32, rope_theta=10000000.0, attention_bias=True,
                     attention_out_bias=False, pad_token_id=999, bos_token_id=999, eos_token_id=999,
                     tie_word_embeddings=False),
                "bpe", "gpt-2", False),
    # Ernie 4.5's dense form (transformers 4.54; the newer llama.cpp): LLaMA's block rotating adjacent pairs (GLM's
    # interleaved rope, which ggml's normal rope is: no Q/K permutation), head_dim 16 stated, tied, GQA 4/2; the
    # SentencePiece tokenizer with tokenizer_config.json's add_prefix_space.
    "ernie4_5": ("Ernie4_5Config", "Ernie4_5ForCausalLM",
                 dict(BASE, num_key_value_heads=2, head_dim=16, rope_theta=500000.0, use_bias=False,
                      tie_word_embeddings=True, pad_token_id=0, bos_token_id=1, eos_token_id=2),
                 "spm", None, False),
    # Ernie 4.5's mixture (21B-A3B's form): 3 layers, layer 0 dense (moe_layer_start_index 1), then 4 experts of
    # width 32, 2 used (moe_k), chosen by softmax + e_score_correction_bias (redrawn non-zero), weighted by the
    # renormalised softmax, beside 2 shared experts (one MLP of width 64 = intermediate_size / num_key_value_heads,
    # the width the converter writes); untied.
    "ernie4_5moe": ("Ernie4_5_MoeConfig", "Ernie4_5_MoeForCausalLM",
                    dict(BASE, num_hidden_layers=3, num_key_value_heads=2, head_dim=16, rope_theta=500000.0,
                         use_bias=False, tie_word_embeddings=False, moe_num_experts=4, moe_k=2,
                         moe_intermediate_size=32, moe_num_shared_experts=2, moe_layer_start_index=1,
                         moe_layer_end_index=-1, moe_layer_interval=1, pad_token_id=0, bos_token_id=1,
                         eos_token_id=2),
                    "spm", None, False),
    # Hunyuan's dense form (transformers 4.56; the newer llama.cpp): per-head RMSNorms of Q and K after the rotation,
    # NEOX rotation, head_dim 16 stated, tied, GQA 4/2; the NTK "alpha" scaling as Hunyuan's checkpoints state it
    # (rope_scaling dynamic, alpha 1000: base 1e4 · 1000^(16/14)) with the context the converter asserts (32768);
    # eod_token_id left at the class's default 3 (the converter writes it as EOS).
    "hunyuan": ("HunYuanDenseV1Config", "HunYuanDenseV1ForCausalLM",
                dict(BASE, num_key_value_heads=2, head_dim=16, rope_theta=10000.0, max_position_embeddings=32768,
                     rope_scaling={"type": "dynamic", "alpha": 1000.0, "factor": 1.0}, attention_bias=False,
                     tie_word_embeddings=True, pad_token_id=0, bos_token_id=999, eos_token_id=999),
                "bpe", "gpt-2", False),
    # EXAONE 4's form (transformers 4.54; the newer llama.cpp): no pre-norms, RMSNorms after attention and after the
    # MLP, per-head Q/K RMSNorms before the rotation; 4 layers by sliding_window_pattern 4: layers 0-2 attend within
    # a window of 4 and rotate, layer 3 attends globally without RoPE (transformers' rule when sliding_window is set;
    # llama.cpp's graph applies it at 64 layers only, so its logits differ here by design); head_dim 16, tied.
    "exaone4": ("Exaone4Config", "Exaone4ForCausalLM",
                dict(BASE, num_hidden_layers=4, num_key_value_heads=2, head_dim=16, rope_theta=1000000.0,
                     sliding_window=4, sliding_window_pattern=4, tie_word_embeddings=True, pad_token_id=0,
                     bos_token_id=999, eos_token_id=999),
                "bpe", "gpt-2", False),
    # GLM-4's form (Glm4ForCausalLM, GLM-4-0414; transformers 4.52+; the newer llama.cpp's "glm4"): a norm after
    # attention and after the MLP besides the pre-norms, the gate and up projections fused (gate_up_proj), Q/K/V
    # biases, half of each head rotated (partial_rotary_factor 0.5) in adjacent pairs, GQA 4/2, untied. The
    # converter looks up <|endoftext|> and <|user|> among the added tokens (eos/bos/unk, eot), so the trimmed
    # tokenizer gets <|user|> as id 1000 (EXTRA_TOKENS) and vocab_size is 1024 (padded).
    "glm4": ("Glm4Config", "Glm4ForCausalLM",
             dict(BASE, vocab_size=1024, num_key_value_heads=2, head_dim=16, partial_rotary_factor=0.5,
                  attention_bias=True, rope_theta=10000.0, pad_token_id=999, bos_token_id=None, eos_token_id=999,
                  tie_word_embeddings=False),
             "bpe", "gpt-2", False),
    # GLM-4.5's form (Glm4MoeForCausalLM; transformers 4.56+; the newer llama.cpp's "glm4moe"): 3 layers, layer 0
    # dense (first_k_dense_replace 1), then 8 routed experts of width 32, 2 used per token: sigmoid scores,
    # chosen by score + e_score_correction_bias (a buffer, redrawn non-zero here), renormalised and scaled by 2.5,
    # beside one shared expert; head_dim 32 (query width 128 != hidden 64), half of each head rotated (NEOX
    # halves), per-head Q/K RMSNorm (use_qk_norm, GLM-4.5's 355B form), Q/K/V biases, one MTP layer stated
    # (num_nextn_predict_layers: transformers builds none, add_mtp_layers adds its tensors; the converter counts it
    # in block_count and llama.cpp loads but does not run it). GLM-4.5's
    # own n_group = topk_group = 1. Its converter looks up [gMASK], <|user|> and <|observation|> (bos, eot, eom).
    "glm4moe": ("Glm4MoeConfig", "Glm4MoeForCausalLM",
                dict(BASE, vocab_size=1024, num_hidden_layers=3, num_key_value_heads=2, head_dim=32,
                     partial_rotary_factor=0.5, attention_bias=True, use_qk_norm=True, moe_intermediate_size=32,
                     n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1,
                     routed_scaling_factor=2.5, norm_topk_prob=True, n_group=1, topk_group=1,
                     num_nextn_predict_layers=1, rms_norm_eps=1e-5, rope_theta=1000000.0, pad_token_id=999,
                     bos_token_id=None, eos_token_id=999, tie_word_embeddings=False),
                "bpe", "gpt-2", False),
    # glm4moe's form with its experts in 4 groups of 2, the tokens' experts chosen within the best 2 groups
    # (n_group 4, topk_group 2: GGUF expert_group_count, expert_group_used_count), as GLM-4.5's class allows.
    "glm4moe-groups": ("Glm4MoeConfig", "Glm4MoeForCausalLM",
                       dict(BASE, vocab_size=1024, num_hidden_layers=3, num_key_value_heads=2, head_dim=32,
                            partial_rotary_factor=0.5, attention_bias=True, use_qk_norm=True, moe_intermediate_size=32,
                            n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1,
                            routed_scaling_factor=2.5, norm_topk_prob=True, n_group=4, topk_group=2,
                            num_nextn_predict_layers=1, rms_norm_eps=1e-5, rope_theta=1000000.0, pad_token_id=999,
                            bos_token_id=None, eos_token_id=999, tie_word_embeddings=False),
                       "bpe", "gpt-2", False),
    # dots.llm1's form (transformers 4.57; the newer llama.cpp): Qwen3's attention (per-head Q/K RMSNorm, no
    # biases) over DeepSeek-V3's mixture: 3 layers, layer 0 dense, then 8 routed experts of width 32 in 4 groups,
    # 2 used per token: sigmoid scores (scoring_func, which the converter reads for expert_gating_func), chosen by
    # score + e_score_correction_bias (a buffer, redrawn non-zero) within the best 2 groups, renormalised and
    # scaled by 2.5, beside one shared expert; untied; 4 key/value heads (llama.cpp's dots1 sizes attn_k and attn_v
    # by the query head count, as dots.llm1 has). Dots1Config's default sliding_window 4096 with max_window_layers
    # 62 makes every layer full attention, as in the published checkpoints.
    "dots1": ("Dots1Config", "Dots1ForCausalLM",
              dict(BASE, num_hidden_layers=3, num_key_value_heads=4, n_routed_experts=8, num_experts_per_tok=2,
                   moe_intermediate_size=32, n_shared_experts=1, n_group=4, topk_group=2, first_k_dense_replace=1,
                   norm_topk_prob=True, routed_scaling_factor=2.5, scoring_func="sigmoid", rope_theta=10000000.0,
                   rms_norm_eps=1e-6, pad_token_id=999, bos_token_id=999, eos_token_id=999,
                   tie_word_embeddings=False),
              "bpe", "gpt-2", False),
    # Qwen3-Next (transformers 4.57; the newer llama.cpp), transformers' pure-torch path (fla and causal-conv1d are
    # not installed): 2 layers, linear_attention (the gated DeltaNet: 2 key heads of 16 shared by 4 value heads of
    # 16, convolution kernel 4) and full_attention (gated attention: q_proj doubled by a sigmoid output gate, head_dim
    # 16 of which partial_rotary_factor 0.25 rotate, GQA 4/2, (1+w) RMSNorms over each query and key head)
    # alternating by full_attention_interval 2; every layer a mixture of 4 experts of width 32, 2 used and
    # renormalised, beside a shared expert of width 96 behind a sigmoid gate. One MTP layer (mtp.*), which the
    # converter requires, is added by add_qwen3next_mtp.
    "qwen3next": ("Qwen3NextConfig", "Qwen3NextForCausalLM",
                  dict(BASE, num_hidden_layers=2, full_attention_interval=2, num_key_value_heads=2, head_dim=16,
                       partial_rotary_factor=0.25, rope_theta=1000000.0, rms_norm_eps=1e-6, linear_conv_kernel_dim=4,
                       linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2,
                       linear_num_value_heads=4, decoder_sparse_step=1, mlp_only_layers=[], num_experts=4,
                       num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=96,
                       norm_topk_prob=True, output_router_logits=False, pad_token_id=999, bos_token_id=999,
                       eos_token_id=999, tie_word_embeddings=False),
                  "bpe", "gpt-2", False),
    # Llama 4's text model (transformers 4.51+; the newer llama.cpp): LLAMA4_TEXT above.
    "llama4": ("Llama4TextConfig", "Llama4ForCausalLM", LLAMA4_TEXT, "bpe", "gpt-2", False),
    # The class the published Llama 4 checkpoints have: the same text model under language_model. beside a tiny
    # vision tower (vision_model., multi_modal_projector.), config.json's text_config nested; the converter's text
    # GGUF (no --mmproj) leaves the vision tower out.
    "llama4-vl": ("Llama4Config", "Llama4ForConditionalGeneration",
                  dict(text_config=LLAMA4_TEXT, tie_word_embeddings=False,
                       vision_config=dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                          intermediate_size=32, vision_output_dim=32, image_size=28, patch_size=14,
                                          pixel_shuffle_ratio=0.5, projector_input_dim=32, projector_output_dim=32)),
                  "bpe", "gpt-2", False),
    # Mistral 3's form (Mistral Small 3.1 / 3.2: transformers 4.50+; the newer llama.cpp, GGUF mistral3): the class the
    # published checkpoints have, a Mistral text model under language_model. (text_config nested, model_type mistral)
    # beside a tiny Pixtral vision tower; head_dim 32 so that the query width 128 is not hidden_size, as Mistral
    # Small's 4096 is not its 5120; rope_theta 1e9, no window, untied, GQA 4/2. The tokenizer is GPT-2's trimmed BPE
    # (Tekken is the tokenizer work's); the converter's text GGUF leaves the vision tower out.
    "mistral3": ("Mistral3Config", "Mistral3ForConditionalGeneration",
                 dict(text_config=dict(BASE, model_type="mistral", num_key_value_heads=2, head_dim=32,
                                       rope_theta=1000000000.0, sliding_window=None, pad_token_id=999,
                                       bos_token_id=999, eos_token_id=999, tie_word_embeddings=False),
                      vision_config=dict(model_type="pixtral", hidden_size=16, intermediate_size=32,
                                         num_hidden_layers=1, num_attention_heads=2, head_dim=8, image_size=28,
                                         patch_size=14),
                      spatial_merge_size=2, tie_word_embeddings=False),
                 "bpe", "gpt-2", False),
    # Gemma 3n's text model (transformers 4.53; the newer llama.cpp). That llama.cpp reads none of Gemma 3n's shape
    # from the GGUF but the sizes of the usual keys: it fixes the per-layer input width at 256, LAuReL's rank at 64,
    # 4 AltUp streams, active stream 0, sparsity of the feed-forward gate at 0.95 in layers 0-9, key/value sharing
    # from layer 20 on, the final soft-cap at 30 and a full layer every fifth (it skips the converter's
    # sliding_window_pattern array), and takes the standard deviation of the sparsity cut over n - 1 where
    # transformers takes it over n. So this one has those widths and 2 layers, both sliding (window 4), both
    # sparse, none sharing: the shape llama.cpp computes as transformers does but for that deviation. vocab_size
    # 1024 over the 1000-piece tokenizer with a per-layer table of 1000 rows (vocab_size_per_layer_input; the
    # converter pads it, as the published 262400 / 262144).
    "gemma3n": ("Gemma3nTextConfig", "Gemma3nForCausalLM",
                dict(BASE, vocab_size=1024, vocab_size_per_layer_input=1000, num_key_value_heads=2, head_dim=16,
                     hidden_size_per_layer_input=256, laurel_rank=64, altup_num_inputs=4, altup_active_idx=0,
                     num_kv_shared_layers=0, activation_sparsity_pattern=[0.95, 0.95],
                     layer_types=["sliding_attention", "sliding_attention"], sliding_window=4,
                     final_logit_softcapping=30.0, rope_theta=1000000.0, rope_local_base_freq=10000.0,
                     rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh", pad_token_id=0, bos_token_id=1,
                     eos_token_id=2),
                "spm", None, False),
    # Gemma 3n's other mechanisms at other widths, which llama.cpp cannot load (LLAMACPP_REFUSES): 4 layers
    # (sliding, full, sliding, full), the last 2 reusing the keys and values of layers 0 and 1
    # (num_kv_shared_layers 2), sparsity in layers 0 and 3 only (0.95, 0.8), per-layer inputs of width 8, LAuReL
    # rank 4, active AltUp stream 1 (of the 4 the converter requires), final soft-cap 3, vocab_size 1000 for both
    # tables.
    "gemma3n-shared": ("Gemma3nTextConfig", "Gemma3nForCausalLM",
                       dict(BASE, num_hidden_layers=4, vocab_size_per_layer_input=1000, num_key_value_heads=1,
                            head_dim=16, hidden_size_per_layer_input=8, laurel_rank=4, altup_num_inputs=4,
                            altup_active_idx=1,
                            num_kv_shared_layers=2, activation_sparsity_pattern=[0.95, 0.0, 0.0, 0.8],
                            layer_types=["sliding_attention", "full_attention"] * 2, sliding_window=4,
                            final_logit_softcapping=3.0, rope_theta=1000000.0, rope_local_base_freq=10000.0,
                            rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh", pad_token_id=0,
                            bos_token_id=1, eos_token_id=2),
                       "spm", None, False),
    # Mamba-1 (transformers 4.39+; the newer llama.cpp): hidden 64, 2 layers, d_state 16, d_conv 4, expand 2
    # (d_inner 128), dt_rank "auto" (⌈64/16⌉ = 4), tied embeddings, the trimmed GPT-2 tokenizer; transformers runs
    # its slow pure-torch path (no CUDA kernels here).
    "mamba": ("MambaConfig", "MambaForCausalLM",
              dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, state_size=16, conv_kernel=4, expand=2,
                   time_step_rank="auto", use_bias=False, use_conv_bias=True, layer_norm_epsilon=1e-5,
                   tie_word_embeddings=True, pad_token_id=0, bos_token_id=999, eos_token_id=999),
              "bpe", "gpt-2", False),
    # Jamba (transformers 4.40+; the newer llama.cpp): 4 layers, attention in layers 1 and 3 (attn_layer_period 2,
    # offset 1; no positional encoding), Mamba-1 mixers with dt/B/C RMSNorms in layers 0 and 2; a mixture of 4
    # experts of width 128, 2 used, in layers 1 and 3 (expert_layer_period 2, offset 1), dense MLPs in 0 and 2;
    # GQA 4/2, untied; transformers runs its slow pure-torch Mamba path (use_mamba_kernels false).
    "jamba": ("JambaConfig", "JambaForCausalLM",
              dict(BASE, num_hidden_layers=4, num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                   expert_layer_period=2, expert_layer_offset=1, attn_layer_period=2, attn_layer_offset=1,
                   mamba_d_state=16, mamba_d_conv=4, mamba_expand=2, mamba_dt_rank="auto", mamba_conv_bias=True,
                   mamba_proj_bias=False, use_mamba_kernels=False, rms_norm_eps=1e-6, tie_word_embeddings=False,
                   output_router_logits=False, pad_token_id=0, bos_token_id=1, eos_token_id=2),
              "spm", None, False),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM",
                 dict(BASE, rotary_pct=0.25, use_parallel_residual=True, tie_word_embeddings=False,
                      bos_token_id=999, eos_token_id=999),
                 "bpe", "gpt-2", False),
    "stablelm": ("StableLmConfig", "StableLmForCausalLM",
                 dict(BASE, num_key_value_heads=2, partial_rotary_factor=0.25, use_qkv_bias=True,
                      use_parallel_residual=False, qk_layernorm=False, tie_word_embeddings=False,
                      bos_token_id=999, eos_token_id=999),
                 "bpe", "gpt-2", False),
    "stablelm-parallel": ("StableLmConfig", "StableLmForCausalLM",
                          dict(BASE, num_key_value_heads=4, partial_rotary_factor=0.5, use_qkv_bias=False,
                               use_parallel_residual=True, qk_layernorm=False, tie_word_embeddings=False,
                               bos_token_id=999, eos_token_id=999),
                          "bpe", "gpt-2", False),
    # StableLM 2 12B's form: per-head LayerNorms of queries and keys (one tensor per head) and a parallel residual.
    "stablelm-qknorm": ("StableLmConfig", "StableLmForCausalLM",
                        dict(BASE, num_key_value_heads=2, partial_rotary_factor=0.25, use_qkv_bias=False,
                             use_parallel_residual=True, qk_layernorm=True, tie_word_embeddings=False,
                             bos_token_id=999, eos_token_id=999),
                        "bpe", "gpt-2", False),
    "starcoder2": ("Starcoder2Config", "Starcoder2ForCausalLM",
                   dict(BASE, num_key_value_heads=2, use_bias=True, norm_epsilon=1e-5, sliding_window=None,
                        bos_token_id=999, eos_token_id=999),
                   "bpe", "gpt-2", False),
    "olmo": ("OlmoConfig", "OlmoForCausalLM",
             dict(BASE, num_key_value_heads=4, clip_qkv=1.5, tie_word_embeddings=False, pad_token_id=0,
                  bos_token_id=999, eos_token_id=999),
             "bpe", "gpt-2", False),
    # Falcon 7B's form: one key/value head (multi_query), one norm per parallel block; num_kv_heads is stated
    # (transformers writes num_attention_heads there by default, which llama.cpp's converter then misreads).
    "falcon-mqa": ("FalconConfig", "FalconForCausalLM",
                   dict(FALCON, new_decoder_architecture=False, multi_query=True, parallel_attn=True, num_kv_heads=1,
                        bias=False, alibi=False, bos_token_id=999, eos_token_id=999),
                   "bpe", "gpt-2", False),
    # Falcon 40B's "new decoder architecture": grouped key/value heads, ln_attn and ln_mlp.
    "falcon-new": ("FalconConfig", "FalconForCausalLM",
                   dict(FALCON, new_decoder_architecture=True, num_kv_heads=2, parallel_attn=True, bias=False,
                        alibi=False, bos_token_id=999, eos_token_id=999),
                   "bpe", "gpt-2", False),
    # Falcon-H1's form (transformers 4.55; the newer llama.cpp's "falcon_h1"): every layer runs attention and a
    # Mamba-2 mixer side by side on the same normed input and adds both, then a gated MLP behind its own pre-norm.
    # Mamba-2: 8 heads of 16 channels (mamba_d_ssm 128), 2 groups of B and C of state 16, convolution of 4 taps
    # with a bias, the gated RMSNorm per group after the gate (mamba_rms_norm, mamba_norm_before_gate false as
    # the published checkpoints have it), chunks of 4 (< the 12 ids) for the torch path's chunked scan; GQA 4/2,
    # head_dim 16; every μP multiplier set away from 1 (the converter folds them into the weights).
    "falcon_h1": ("FalconH1Config", "FalconH1ForCausalLM",
                  dict(BASE, num_key_value_heads=2, head_dim=16, mamba_d_ssm=128, mamba_n_heads=8, mamba_d_head=16,
                       mamba_n_groups=2, mamba_d_state=16, mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=4,
                       mamba_conv_bias=True, mamba_proj_bias=False, mamba_norm_before_gate=False,
                       mamba_rms_norm=True, projectors_bias=False, rope_theta=100000.0, rms_norm_eps=1e-5,
                       lm_head_multiplier=0.5, embedding_multiplier=2.0, mlp_multipliers=[1.2, 0.8],
                       key_multiplier=1.3, attention_out_multiplier=0.9, attention_in_multiplier=0.8,
                       ssm_multipliers=[0.9, 1.2, 1.1, 0.8, 1.3], ssm_in_multiplier=1.1, ssm_out_multiplier=0.7,
                       tie_word_embeddings=False, pad_token_id=999, bos_token_id=999, eos_token_id=999),
                  "bpe", "gpt-2", False),
    # Mamba-2 (transformers 4.44+; the newer llama.cpp), its pure-torch path (torch_forward: the CUDA kernels are
    # not here): 2 layers of in_proj → z, xBC, dt; a causal conv over xBC; the SSD scan with a scalar A per head (8
    # heads of 16 channels, d_state 16) in chunks of 4 (3 chunks of the 12 ids); gated RMSNorm; out_proj. One group
    # of B and C: transformers' torch path normalises y·SiLU(z) across all groups at once where the kernels and
    # llama.cpp normalise each group (mamba2-groups). vocab_size 1024, the multiple of 16 the converter pads to.
    "mamba2": ("Mamba2Config", "Mamba2ForCausalLM",
               dict(hidden_size=64, num_hidden_layers=2, vocab_size=1024, num_heads=8, head_dim=16, expand=2,
                    n_groups=1, state_size=16, conv_kernel=4, chunk_size=4, use_bias=False, use_conv_bias=True,
                    layer_norm_epsilon=1e-5, tie_word_embeddings=False, pad_token_id=999, bos_token_id=999,
                    eos_token_id=999),
               "bpe", "gpt-2", False),
    # Mamba-2 with 2 groups of B and C (Mamba-Codestral's form, 8 groups): the references are llama.cpp's (see
    # mamba2), transformers' torch path being another computation for more than one group.
    "mamba2-groups": ("Mamba2Config", "Mamba2ForCausalLM",
                      dict(hidden_size=64, num_hidden_layers=2, vocab_size=1024, num_heads=8, head_dim=16, expand=2,
                           n_groups=2, state_size=16, conv_kernel=4, chunk_size=4, use_bias=False, use_conv_bias=True,
                           layer_norm_epsilon=1e-5, tie_word_embeddings=False, pad_token_id=999, bos_token_id=999,
                           eos_token_id=999),
                      "bpe", "gpt-2", False),
    # Granite 4.0-H's form (GraniteMoeHybridForCausalLM; GGUF granitehybrid): 4 layers, Mamba-2 mixers in layers 0, 2,
    # 3 and attention (GQA 4/2, no position embedding: position_embedding_type "nope") in layer 1, every layer a
    # mixture of 4 experts of width 32, 2 used, beside a shared expert of width 48 (input_linear holds gate and up);
    # Granite's multipliers; the Mamba-2 mixers as mamba2's (one group: see mamba2), transformers' torch path; tied.
    "granitehybrid": ("GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM",
                      dict(BASE, num_hidden_layers=4, num_key_value_heads=2, intermediate_size=32,
                           layer_types=["mamba", "attention", "mamba", "mamba"], position_embedding_type="nope",
                           num_local_experts=4, num_experts_per_tok=2, shared_intermediate_size=48,
                           mamba_n_heads=8, mamba_d_head=16, mamba_expand=2, mamba_n_groups=1, mamba_d_state=16,
                           mamba_d_conv=4, mamba_chunk_size=4, mamba_conv_bias=True, mamba_proj_bias=False,
                           attention_multiplier=0.2, embedding_multiplier=6.0, residual_multiplier=0.7,
                           logits_scaling=4.0, rms_norm_eps=1e-5, attention_bias=False, tie_word_embeddings=True,
                           pad_token_id=999, bos_token_id=999, eos_token_id=999),
                      "bpe", "gpt-2", False),
    # Granite 4.0-H's dense form (granite-4.0-h-micro, -1b, -350m): granitehybrid without experts, its shared_mlp
    # (width 128) the dense feed-forward, which the converter writes as ffn_gate/ffn_up/ffn_down; untied.
    "granitehybrid-dense": ("GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM",
                            dict(BASE, num_hidden_layers=4, num_key_value_heads=2, intermediate_size=128,
                                 layer_types=["mamba", "attention", "mamba", "mamba"], position_embedding_type="nope",
                                 num_local_experts=0, num_experts_per_tok=0, shared_intermediate_size=128,
                                 mamba_n_heads=8, mamba_d_head=16, mamba_expand=2, mamba_n_groups=1, mamba_d_state=16,
                                 mamba_d_conv=4, mamba_chunk_size=4, mamba_conv_bias=True, mamba_proj_bias=False,
                                 attention_multiplier=0.2, embedding_multiplier=6.0, residual_multiplier=0.7,
                                 logits_scaling=4.0, rms_norm_eps=1e-5, attention_bias=False, tie_word_embeddings=False,
                                 pad_token_id=999, bos_token_id=999, eos_token_id=999),
                            "bpe", "gpt-2", False),
    "llama3": ("LlamaConfig", "LlamaForCausalLM",
               dict(BASE, num_key_value_heads=2, rope_theta=500000.0,
                    rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
                    tie_word_embeddings=False),
               "spm", None, False),
}


# Families whose transformers class (or form of it) is newer than v4.43.4 and whose converter is the newer llama.cpp
# ($NEW_LLAMACPP, $NEW_LOGITS_DUMP): family -> the transformers version (major, minor) at least needed. They run
# in the Debian trixie chroot of README.md (transformers v4.57.6, torch 2.6).
NEWER = {"phi4mini": (4, 57), "smollm3": (4, 57), "lfm2": (4, 57), "seedoss": (4, 57), "ernie4_5": (4, 57), "ernie4_5moe": (4, 57),
         "hunyuan": (4, 57), "exaone4": (4, 57), "glm4": (4, 57), "glm4moe": (4, 57), "glm4moe-groups": (4, 57),
         "dots1": (4, 57), "llama4": (4, 57), "llama4-vl": (4, 57), "mistral3": (4, 57), "gemma3n": (4, 57),
         "gemma3n-shared": (4, 57), "qwen3next": (4, 57), "mamba2": (4, 57), "mamba2-groups": (4, 57),
         "falcon_h1": (4, 57), "granitehybrid": (4, 57), "granitehybrid-dense": (4, 57), "mamba": (4, 57),
         "jamba": (4, 57)}

# Added tokens a family's converter looks up by content, appended after the trimmed vocabulary (special, ids from
# 1000 on; the config's vocab_size leaves room for them).
EXTRA_TOKENS = {"glm4": ["<|user|>"], "glm4moe": ["[gMASK]", "<|user|>", "<|observation|>"],
                "glm4moe-groups": ["[gMASK]", "<|user|>", "<|observation|>"]}
# Tensor names transformers v4.57.6's save_pretrained gets wrong, put back to the published checkpoints' names.
# Gemma3nForCausalLM saves under the multimodal model's prefix (model.language_model.), and its reverse mapping also
# rewrites the "model" inside per_layer_model_projection; the converter cannot map that name, google's checkpoints
# hold model.language_model.per_layer_model_projection.weight, and from_pretrained reads either.
SAVED_NAME_FIXES = {
    f: {"model.language_model.per_layer_model.language_model_projection.weight":
        "model.language_model.per_layer_model_projection.weight"} for f in ("gemma3n", "gemma3n-shared")
}


def fix_saved_names(hf, renames):
    from safetensors.torch import load_file, save_file
    path = os.path.join(hf, "model.safetensors")
    sd = load_file(path)
    sd = {renames.get(k, k): v for k, v in sd.items()}
    save_file(sd, path, metadata={"format": "pt"})


def f32(x):
    """Nested lists of float32 values as Python floats that print as the shortest float32 repr."""
    a = np.asarray(x, dtype=np.float32)
    if a.ndim == 0:
        return float(str(a[()]))
    return [f32(v) for v in a]


def dump(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, separators=(",", ":"))
        f.write("\n")


# The classes whose depthwise convolution randomize() draws N(0, 1/kernel). The rule came with the Mamba-1 and Jamba
# fixtures; the Mamba-2 ones (mamba2, mamba2-groups, granitehybrid, granitehybrid-dense, falcon_h1) were made before
# it, their [channels, 1, kernel] weights drawn by the stacked-expert rule (fan-in read as 1: N(0, 1)), and keep that
# draw, so that rerunning the generator rewrites their checkpoints byte for byte.
CONV_FAN_IN_KERNEL = ("MambaForCausalLM", "JambaForCausalLM")


def randomize(model, seed):
    """Redraws every parameter so activations are O(1): matrices (embeddings and heads included) N(0, 1/fan_in),
    norm weights 1 + N(0, 0.2²) (Gemma's, stored as w with (1 + w) applied, N(0, 0.2²)), biases N(0, 0.2²), and
    DeepSeek-V3's expert-choice bias buffer (e_score_correction_bias) N(0, 0.2²)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if p.dim() == 3 and name.endswith("conv1d.weight") and type(model).__name__ in CONV_FAN_IN_KERNEL:
                # a depthwise convolution's [channels, 1, kernel] (Mamba's): N(0, 1/fan_in), fan_in the kernel width
                p.copy_(torch.randn(p.shape, generator=g) * (p.shape[1] * p.shape[2]) ** -0.5)
            elif p.dim() == 3:
                # stacked experts (Llama 4's [expert, in, out] gate_up_proj and down_proj): N(0, 1/fan_in)
                p.copy_(torch.randn(p.shape, generator=g) * p.shape[1] ** -0.5)
            elif p.dim() == 2:
                # N(0, 1/fan_in) for every matrix, embeddings and heads
                # too, so that the logits stay O(1) (a tied head is the
                # embedding).
                p.copy_(torch.randn(p.shape, generator=g) * p.shape[1] ** -0.5)
            elif name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.2)
            else:
                # Gemma 3n's norms scale by w itself, as LLaMA's do; Qwen3-Next's RMSNorms apply 1 + w too,
                # except the gated norm of its linear attention (linear_attn.norm)
                gemma = type(model).__name__.startswith("Gemma") and not type(model).__name__.startswith("Gemma3n")
                gemma = gemma or qwen3next_one_plus(model, name)
                base = 0.0 if gemma else 1.0
                p.copy_(base + torch.randn(p.shape, generator=g) * 0.2)
        # DeepSeek-V3's expert-choice bias is a buffer in transformers' classes (dots.llm1's), zero when made:
        # redrawn as a bias, so that the choice it makes is tested.
        for name, b in sorted(model.named_buffers()):
            if name.endswith("e_score_correction_bias"):
                b.copy_(torch.randn(b.shape, generator=g) * 0.2)


def qwen3next_one_plus(model, name):
    """Whether parameter name of model is one of Qwen3-Next's (1 + w) RMSNorm weights."""
    return (type(model).__name__.startswith("Qwen3Next") and name.endswith("norm.weight")
            and not name.endswith("linear_attn.norm.weight"))


def redraw_qwen3next(model, seed):
    """Qwen3-Next's gated DeltaNet, after randomize(): A_log N(-1, 0.2²) (a decay exp(-A·softplus(·)) that keeps
    some of the state from step to step, where randomize's 1 + N forgets nearly all of it) and the depthwise
    convolution's [channels, 1, kernel] weights N(0, 1/kernel) (randomize's stacked-expert rule reads their
    fan-in as 1)."""
    g = torch.Generator().manual_seed(seed + 3)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("linear_attn.A_log"):
                p.copy_(-1.0 + torch.randn(p.shape, generator=g) * 0.2)
            elif name.endswith("linear_attn.conv1d.weight"):
                p.copy_(torch.randn(p.shape, generator=g) * p.shape[2] ** -0.5)


def add_qwen3next_mtp(model, config, hf, seed):
    """Qwen3-Next's published checkpoints carry one multi-token-prediction layer under mtp.* (mtp.fc, its norms
    pre_fc_norm_embedding and pre_fc_norm_hidden, mtp.norm and mtp.layers.0: a full-attention decoder layer of the
    class with its mixture), which transformers builds none of and skips on load, and which d32676d7's converter
    requires (its _QwenMtpMixin counts the layers from these names). Made here from the class's own decoder layer,
    redrawn as randomize() does ((1 + w) norms N(0, 0.2²)), added to model.safetensors."""
    from safetensors.torch import load_file, save_file
    path = os.path.join(hf, "model.safetensors")
    sd = load_file(path)
    layer_cls = type(model.model.layers[-1])
    full = config.layer_types.index("full_attention")
    g = torch.Generator().manual_seed(seed + 2)
    d = config.hidden_size
    with torch.no_grad():
        layer = layer_cls(config, full)
        for name, p in sorted(layer.state_dict().items()):
            if p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=g) * p.shape[1] ** -0.5)
            elif name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.2)
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.2)
            sd[f"mtp.layers.0.{name}"] = p.contiguous()
        sd["mtp.fc.weight"] = torch.randn((d, 2 * d), generator=g) * (2 * d) ** -0.5
        for n in ("pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"):
            sd[f"mtp.{n}.weight"] = torch.randn(d, generator=g) * 0.2
    save_file(sd, path, metadata={"format": "pt"})


def copy_tokenizer(kind, shared, dst, chat):
    src = os.path.join(shared, "interop", "llama" if kind == "spm" else "gpt2", "hf")
    names = ["tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"] if kind == "spm" else \
        ["vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json"]
    for n in names:
        shutil.copy(os.path.join(src, n), os.path.join(dst, n))
    if kind == "bpe":
        write_tokenizer_json(dst)
    if chat:
        p = os.path.join(dst, "tokenizer_config.json")
        with open(p) as f:
            tc = json.load(f)
        tc["chat_template"] = CHAT_TEMPLATE
        with open(p, "w") as f:
            json.dump(tc, f, indent=2)
            f.write("\n")


def add_tokens(dst, contents):
    """Appends special added tokens to the copied tokenizer (tokenizer_config.json's added_tokens_decoder and
    tokenizer.json's added_tokens), in the form transformers saves them."""
    p = os.path.join(dst, "tokenizer_config.json")
    with open(p) as f:
        tc = json.load(f)
    q = os.path.join(dst, "tokenizer.json")
    with open(q, encoding="utf-8") as f:
        tj = json.load(f)
    for i, c in enumerate(contents):
        tid = 1000 + i
        tc["added_tokens_decoder"][str(tid)] = {"content": c, "lstrip": False, "normalized": False, "rstrip": False,
                                                "single_word": False, "special": True}
        tj["added_tokens"].append({"id": tid, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                                   "normalized": False, "special": True})
    with open(p, "w") as f:
        json.dump(tc, f, indent=2)
        f.write("\n")
    with open(q, "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False, indent=2)
        f.write("\n")


def add_mtp_layers(model, config, hf, seed):
    """GLM-4.5's checkpoints carry num_nextn_predict_layers multi-token-prediction layers after the decoder's
    (model.layers.N: a decoder layer of the class plus eh_proj, enorm, hnorm and shared_head.norm), which
    transformers builds none of and skips on load, but which the converter writes and llama.cpp requires. They are
    made here from the class's own decoder layer, redrawn as randomize() does, and added to model.safetensors."""
    from safetensors.torch import load_file, save_file
    path = os.path.join(hf, "model.safetensors")
    sd = load_file(path)
    layer_cls = type(model.model.layers[-1])
    g = torch.Generator().manual_seed(seed + 2)
    d = config.hidden_size
    with torch.no_grad():
        for i in range(config.num_hidden_layers, config.num_hidden_layers + config.num_nextn_predict_layers):
            layer = layer_cls(config, i)
            for name, p in sorted(layer.state_dict().items()):
                if p.dim() == 2:
                    p.copy_(torch.randn(p.shape, generator=g) * p.shape[1] ** -0.5)
                elif name.endswith("bias"):
                    p.copy_(torch.randn(p.shape, generator=g) * 0.2)
                else:
                    p.copy_(1.0 + torch.randn(p.shape, generator=g) * 0.2)
                sd[f"model.layers.{i}.{name}"] = p.contiguous()
            sd[f"model.layers.{i}.eh_proj.weight"] = torch.randn((d, 2 * d), generator=g) * (2 * d) ** -0.5
            for n in ("enorm", "hnorm", "shared_head.norm"):
                sd[f"model.layers.{i}.{n}.weight"] = 1.0 + torch.randn(d, generator=g) * 0.2
    save_file(sd, path, metadata={"format": "pt"})


def write_tokenizer_json(dst):
    """The tokenizer.json that transformers' GPT2TokenizerFast saves for this vocab.json and merges.txt
    (byte-level BPE, the GPT-2 regex, <|endoftext|> as the added special token), written here because the Rust
    tokenizers package that would convert it is not available. StableLM's converter requires the file."""
    with open(os.path.join(dst, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(dst, "merges.txt"), encoding="utf-8") as f:
        merges = [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#version")]
    eot = vocab["<|endoftext|>"]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    tj = {"version": "1.0", "truncation": None, "padding": None,
          "added_tokens": [{"id": eot, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                            "rstrip": False, "normalized": True, "special": True}],
          "normalizer": None, "pre_tokenizer": byte_level, "post_processor": byte_level, "decoder": byte_level,
          "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                    "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                    "vocab": vocab, "merges": merges}}
    with open(os.path.join(dst, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False, indent=2)
        f.write("\n")


def convert(llamacpp, hf, out, outtype, pre, extra=()):
    """Runs convert_hf_to_gguf.py unmodified (its module imported and main() called). A trimmed vocabulary cannot hash to any pre-tokenizer llama.cpp
    knows, so for BPE tokenizers get_vocab_base_pre (and only it) is replaced by the name of the tokenizer the
    vocabulary was cut from, as the earlier fixtures did (shared/fixtures/interop/gpt2/README.md). The Rust
    `tokenizers` package is not available here, so AutoTokenizer is asked for the slow (pure-Python) tokenizer,
    which has the same vocabulary (and is given the `vocab` attribute the fast ones have, which the converter
    reads). extra: further converter arguments (testdata/vision/gen_qwenvl.py passes --mmproj)."""
    # Debian's torch 1.13 predates the float8 dtypes the converter's safetensors dtype table names; the
    # fixtures hold none, so placeholder attributes let the module import.
    code = ("import sys, torch; sys.argv = sys.argv[1:]; sys.path.insert(0, %r); sys.path.insert(0, %r); "
            "[setattr(torch, n, torch.float32) for n in ('float8_e4m3fn', 'float8_e5m2') if not hasattr(torch, n)]; "
            # (a plain function on the class: Python 3.13 no longer chains classmethod over other descriptors)
            "import transformers; _ft = transformers.AutoTokenizer.from_pretrained; "
            "transformers.AutoTokenizer.from_pretrained = lambda *a, **k: _ft(*a, **dict(k, use_fast=False)); "
            "transformers.PreTrainedTokenizer.vocab = property(lambda self: self.get_vocab()); "
            "import convert_hf_to_gguf as c; "
            # c392e509 defines the method on Model; newer trees on conversion.base.TextModel.
            "base = getattr(c, 'Model', None) or __import__('conversion.base', fromlist=['TextModel']).TextModel; "
            "base.get_vocab_base_pre = (lambda self, tokenizer: %r) if %r else base.get_vocab_base_pre; "
            "c.main()") % (os.path.join(llamacpp, "gguf-py"), llamacpp, pre, pre is not None)
    cmd = [sys.executable, "-c", code, "convert_hf_to_gguf.py", hf, "--outtype", outtype, "--outfile", out, *extra]
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError("convert_hf_to_gguf.py failed:\n" + r.stderr[-3000:])
    return " ".join(["convert_hf_to_gguf.py", os.path.relpath(hf, HERE), "--outtype", outtype, "--outfile",
                     os.path.relpath(out, HERE), *extra])


def make(family, llamacpp, dump_bin, shared):
    cfg_cls, model_cls, kw, tok, pre, chat = FAMILIES[family]
    if family in NEWER:
        have = tuple(int(x) for x in transformers.__version__.split(".")[:2])
        if have < NEWER[family]:
            raise RuntimeError(f"{family} needs transformers >= {NEWER[family]}, this is {transformers.__version__}")
        llamacpp, dump_bin = os.environ["NEW_LLAMACPP"], os.environ["NEW_LOGITS_DUMP"]
    seed = zlib.crc32(family.encode())  # stable whatever other families are added
    torch.manual_seed(seed)
    config = getattr(transformers, cfg_cls)(**kw)
    config._attn_implementation = "eager"
    model = getattr(transformers, model_cls)(config).eval()
    randomize(model, seed)
    if model_cls == "Qwen3NextForCausalLM":
        redraw_qwen3next(model, seed)
    with torch.no_grad():
        # GLM-4.5's routing bias is a buffer (randomize redraws parameters): redrawn like a bias.
        g = torch.Generator().manual_seed(seed + 1)
        for name, b in sorted(model.named_buffers()):
            if name.endswith("e_score_correction_bias"):
                b.copy_(torch.randn(b.shape, generator=g) * 0.2)
    root = os.path.join(HERE, family)
    hf = os.path.join(root, "hf")
    shutil.rmtree(root, ignore_errors=True)
    model.save_pretrained(hf)
    if getattr(config, "num_nextn_predict_layers", 0):
        add_mtp_layers(model, config, hf, seed)
    if model_cls == "Qwen3NextForCausalLM":
        add_qwen3next_mtp(model, config, hf, seed)
    if family in SAVED_NAME_FIXES:
        fix_saved_names(hf, SAVED_NAME_FIXES[family])
    copy_tokenizer(tok, shared, hf, chat)
    if family in EXTRA_TOKENS:
        add_tokens(hf, EXTRA_TOKENS[family])

    # Reload what was saved, so the references are those of the files.
    model = getattr(transformers, model_cls).from_pretrained(hf, attn_implementation="eager").eval()
    ids = torch.tensor([INPUT_IDS])
    with torch.no_grad():
        logits = model(ids).logits[0]
        new_tokens = NEW_TOKENS_OF.get(family, NEW_TOKENS)
        greedy = model.generate(ids[:, :PROMPT], max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                                do_sample=False, num_beams=1, eos_token_id=None, pad_token_id=0)[0].tolist()
    versions = {"transformers": transformers.__version__, "torch": torch.__version__,
                "model_class": model_cls, "seed": seed, "attn_implementation": "eager", "threads": 1}
    dump(os.path.join(hf, "reference.json"), dict(versions, input_ids=INPUT_IDS, logits=f32(logits)))
    dump(os.path.join(hf, "generate.json"), dict(versions, prompt_ids=INPUT_IDS[:PROMPT],
                                                  max_new_tokens=new_tokens, greedy=greedy))

    gg = os.path.join(root, "gguf")
    os.makedirs(gg)
    cmds = []
    for outtype in ("f32",):
        cmds.append(convert(llamacpp, hf, os.path.join(gg, f"{family}-{outtype}.gguf"), outtype, pre))
    r = subprocess.run([dump_bin, os.path.join(gg, f"{family}-f32.gguf"), ",".join(map(str, INPUT_IDS))],
                       capture_output=True, text=True)
    if family in LLAMACPP_REFUSES:
        assert r.returncode != 0, f"{family}: llama.cpp was expected to refuse it"
        print(f"{family}: llama.cpp refuses it ({LLAMACPP_REFUSES[family]})")
        return {"family": family, "class": model_cls, "llamacpp_refuses": LLAMACPP_REFUSES[family], "convert": cmds,
                "pre": pre, "converter": "newer", "transformers": transformers.__version__, "torch": torch.__version__}
    r.check_returncode()
    lc = json.loads(r.stdout)
    dump(os.path.join(gg, f"{family}-f32.logits.json"), {"tokens": lc["tokens"], "logits": f32(lc["logits"])})
    diff = float(np.max(np.abs(np.asarray(lc["logits"], np.float32) - logits.numpy())))
    print(f"{family}: llama.cpp f32 vs transformers max|d| = {diff:.3g}")
    if family in GREEDY_BY_LLAMACPP:
        dump(os.path.join(hf, "generate.json"), {"reference": "llama.cpp greedy (logits-dump, argmax of the last row)",
                                                 "why": GREEDY_BY_LLAMACPP[family], "prompt_ids": INPUT_IDS[:PROMPT],
                                                 "max_new_tokens": new_tokens, "transformers_greedy": greedy,
                                                 "greedy": llamacpp_greedy(dump_bin, os.path.join(gg, f"{family}-f32.gguf"),
                                                                           new_tokens)})
    res = {"family": family, "class": model_cls, "llamacpp_vs_transformers_max_abs": diff, "convert": cmds,
           "pre": pre}
    if family in NEWER:
        res.update(converter="newer", transformers=transformers.__version__, torch=torch.__version__)
    return res


# Families whose transformers class is newer than v4.43.4 (Granite: 4.45, OLMo 2: 4.47). Their checkpoints are
# written here by hand, in the names and config.json keys that class saves, from a LlamaForCausalLM's redrawn
# weights (same module names); the reference is llama.cpp's logits on the converter's GGUF (no reference.json).
# family -> (architectures class, model_type, extra config.json keys, tensor edit, tokenizer kind, BPE pre-tokenizer)
HANDMADE = {
    "granite": ("GraniteForCausalLM", "granite",
                dict(attention_multiplier=0.2, embedding_multiplier=6.0, residual_multiplier=0.7, logits_scaling=4.0,
                     attention_bias=False, mlp_bias=False, num_key_value_heads=2, rope_theta=10000.0,
                     rms_norm_eps=1e-6, tie_word_embeddings=False),
                None, "spm", None),
    # Qwen3 postdates llama.cpp c392e509: converted and run by the newer llama.cpp given in $NEW_LLAMACPP
    # (README names the commit), with its logits dump in $NEW_LOGITS_DUMP.
    "qwen3": ("Qwen3ForCausalLM", "qwen3",
              dict(num_key_value_heads=2, head_dim=16, attention_bias=False, rope_theta=1000000.0, rms_norm_eps=1e-6,
                   use_sliding_window=False, sliding_window=None, max_window_layers=2, tie_word_embeddings=False),
              "qwen3", "bpe", "gpt-2"),
    # Gemma 3 (text): newer than llama.cpp c392e509 as well. 6 layers so that layers 0-4 slide (window 4) and
    # layer 5 is global; rope_theta 1e6 globally, 1e4 locally.
    "gemma3": ("Gemma3ForCausalLM", "gemma3_text",
               dict(num_hidden_layers=6, num_key_value_heads=2, head_dim=16, hidden_act="gelu_pytorch_tanh",
                    hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=16, sliding_window=4,
                    sliding_window_pattern=6, rope_theta=1000000.0, rope_local_base_freq=10000.0, rms_norm_eps=1e-6,
                    final_logit_softcapping=None, attn_logit_softcapping=None, attention_bias=False,
                    tie_word_embeddings=True),
               "gemma3", "spm", None),
    "olmo2": ("Olmo2ForCausalLM", "olmo2",
              # llama.cpp c392e509 sizes attn_k_norm as d_model: OLMo 2 without grouped-query attention, as published.
              dict(attention_bias=False, num_key_value_heads=4, rope_theta=500000.0, rms_norm_eps=1e-6,
                   tie_word_embeddings=False),
              "olmo2", "bpe", "gpt-2"),
    # OLMoE (transformers 4.45): 4 experts of width 128, 2 used (not renormalised), RMSNorms over the whole Q and
    # K. rms_norm_eps is left out of config.json: llama.cpp c392e509's OlmoeModel writes the key itself (1e-5,
    # transformers' default) and raises on a duplicate when config.json states it.
    "olmoe": ("OlmoeForCausalLM", "olmoe",
              dict(num_key_value_heads=4, num_experts=4, num_experts_per_tok=2, norm_topk_prob=False, clip_qkv=None,
                   rope_theta=10000.0, attention_bias=False, tie_word_embeddings=False, output_router_logits=False,
                   router_aux_loss_coef=0.01),
              "olmoe", "bpe", "gpt-2"),
    # Qwen3-MoE (transformers 4.51; the newer llama.cpp): Qwen3's attention with 4 experts of width 32, 2 used with
    # their weights renormalised (norm_topk_prob).
    "qwen3moe": ("Qwen3MoeForCausalLM", "qwen3_moe",
                 dict(num_key_value_heads=2, head_dim=16, attention_bias=False, rope_theta=1000000.0, rms_norm_eps=1e-6,
                      use_sliding_window=False, sliding_window=None, max_window_layers=2, tie_word_embeddings=False,
                      num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, norm_topk_prob=True,
                      decoder_sparse_step=1, mlp_only_layers=[], output_router_logits=False, router_aux_loss_coef=0.001),
                 "qwen3moe", "bpe", "gpt-2"),
    # MiniMax-M2 (GGUF "minimax-m2"; the newer llama.cpp): transformers v4.57.6 has no MiniMaxM2ForCausalLM and
    # the publisher's own modeling_minimax_m2.py is not in the stored copies of GitHub (only later transformers'
    # modular file, and third-party ports), so it is written here in the names and config.json keys the
    # publisher's class saves. RMSNorms over the whole Q and K projections (use_qk_norm), head_dim 32 (query width
    # 128 over hidden 64) of which rotary_dim 16 rotate, GQA 4/2; every layer a mixture (block_sparse_moe) of 4
    # experts w1/w2/w3 of width intermediate_size 32, 2 used: sigmoid scores chosen by score +
    # e_score_correction_bias, renormalised; untied.
    "minimax-m2": ("MiniMaxM2ForCausalLM", "minimax_m2",
                   dict(num_key_value_heads=2, head_dim=32, rotary_dim=16, intermediate_size=32, num_local_experts=4,
                        num_experts_per_tok=2, scoring_func="sigmoid", use_routing_bias=True, use_qk_norm=True,
                        qk_norm_type="per_layer", rope_theta=5000000.0, rms_norm_eps=1e-6, router_jitter_noise=0.0,
                        output_router_logits=False, router_aux_loss_coef=0.001, tie_word_embeddings=False),
                   "minimax_m2", "bpe", "gpt-2"),
}


def minimax_m2_tensors(sd, cfg, g):
    """MiniMax-M2's blocks: RMSNorms over the whole Q and K projections (q_norm [heads·head_dim], k_norm
    [kv_heads·head_dim]) and the dense MLP replaced by block_sparse_moe: a router (gate), num_local_experts
    experts (experts.N.w1 gate, w3 up, w2 down) of width intermediate_size, all N(0, 1/fan_in), and the
    expert-choice bias e_score_correction_bias N(0, 0.2²)."""
    out = {}
    d, f, n, hd = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_local_experts"], cfg["head_dim"]
    for name, t in sd.items():
        if ".mlp." in name:
            continue
        out[name] = t
        if name.endswith("input_layernorm.weight"):
            prefix = name[: -len("input_layernorm.weight")]
            out[prefix + "self_attn.q_norm.weight"] = 1 + torch.randn(cfg["num_attention_heads"] * hd, generator=g) * 0.2
            out[prefix + "self_attn.k_norm.weight"] = 1 + torch.randn(cfg["num_key_value_heads"] * hd, generator=g) * 0.2
            m = prefix + "block_sparse_moe."
            out[m + "gate.weight"] = torch.randn(n, d, generator=g) * d ** -0.5
            out[m + "e_score_correction_bias"] = torch.randn(n, generator=g) * 0.2
            for x in range(n):
                e = m + f"experts.{x}."
                out[e + "w1.weight"] = torch.randn(f, d, generator=g) * d ** -0.5
                out[e + "w3.weight"] = torch.randn(f, d, generator=g) * d ** -0.5
                out[e + "w2.weight"] = torch.randn(d, f, generator=g) * f ** -0.5
    return out


def moe_experts(out, prefix, d, f, n, g):
    """A router (mlp.gate) and n experts (mlp.experts.N.gate_proj/up_proj/down_proj) of width f, N(0, 1/fan_in)."""
    out[prefix + "mlp.gate.weight"] = torch.randn(n, d, generator=g) * d ** -0.5
    for x in range(n):
        e = prefix + f"mlp.experts.{x}."
        out[e + "gate_proj.weight"] = torch.randn(f, d, generator=g) * d ** -0.5
        out[e + "up_proj.weight"] = torch.randn(f, d, generator=g) * d ** -0.5
        out[e + "down_proj.weight"] = torch.randn(d, f, generator=g) * f ** -0.5


def qwen3moe_tensors(sd, cfg, g):
    """Qwen3's per-head q_norm/k_norm, and the dense MLP replaced by a mixture (moe_experts)."""
    out = {}
    d = cfg["hidden_size"]
    for name, t in qwen3_tensors(sd, cfg, g).items():
        if ".mlp." in name:
            continue
        out[name] = t
        if name.endswith("input_layernorm.weight"):
            moe_experts(out, name[: -len("input_layernorm.weight")], d, cfg["moe_intermediate_size"], cfg["num_experts"], g)
    return out


def olmoe_tensors(sd, cfg, g):
    """OLMoE's blocks: the dense MLP replaced by a router (mlp.gate) and num_experts experts (mlp.experts.N.
    gate_proj/up_proj/down_proj), all N(0, 1/fan_in); RMSNorms over the whole Q and K projections."""
    out = {}
    d, f, n = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_experts"]
    kv = cfg["num_key_value_heads"] * (d // cfg["num_attention_heads"])
    for name, t in sd.items():
        if ".mlp." in name:
            continue
        out[name] = t
        if name.endswith("input_layernorm.weight"):
            prefix = name[: -len("input_layernorm.weight")]
            out[prefix + "self_attn.q_norm.weight"] = 1 + torch.randn(d, generator=g) * 0.2
            out[prefix + "self_attn.k_norm.weight"] = 1 + torch.randn(kv, generator=g) * 0.2
            out[prefix + "mlp.gate.weight"] = torch.randn(n, d, generator=g) * d ** -0.5
            for x in range(n):
                e = prefix + f"mlp.experts.{x}."
                out[e + "gate_proj.weight"] = torch.randn(f, d, generator=g) * d ** -0.5
                out[e + "up_proj.weight"] = torch.randn(f, d, generator=g) * d ** -0.5
                out[e + "down_proj.weight"] = torch.randn(d, f, generator=g) * f ** -0.5
    return out


def olmo2_tensors(sd, cfg, g):
    """OLMo 2's blocks: no pre-norms; RMSNorms over the whole Q and K projections; norms after attention and
    after the MLP (post_attention_layernorm, post_feedforward_layernorm)."""
    out = {}
    q, kv = cfg["hidden_size"], cfg["num_key_value_heads"] * (cfg["hidden_size"] // cfg["num_attention_heads"])
    for name, t in sd.items():
        if name.endswith("input_layernorm.weight"):
            prefix = name[: -len("input_layernorm.weight")]
            out[prefix + "self_attn.q_norm.weight"] = 1 + torch.randn(q, generator=g) * 0.2
            out[prefix + "self_attn.k_norm.weight"] = 1 + torch.randn(kv, generator=g) * 0.2
            out[prefix + "post_feedforward_layernorm.weight"] = 1 + torch.randn(cfg["hidden_size"], generator=g) * 0.2
            continue
        out[name] = t
    return out


def qwen3_tensors(sd, cfg, g):
    """Qwen3's per-head RMSNorms on queries and keys (q_norm, k_norm: [head_dim])."""
    out = dict(sd)
    for name in sd:
        if name.endswith("input_layernorm.weight"):
            prefix = name[: -len("input_layernorm.weight")]
            out[prefix + "self_attn.q_norm.weight"] = 1 + torch.randn(cfg["head_dim"], generator=g) * 0.2
            out[prefix + "self_attn.k_norm.weight"] = 1 + torch.randn(cfg["head_dim"], generator=g) * 0.2
    return out


def gemma3_tensors(sd, cfg, g):
    """Gemma 3's blocks: norms before and after attention and the MLP, per-head q_norm/k_norm, every norm
    weight w applied as (1 + w) (so drawn around 0), and the head tied to the embedding (no lm_head)."""
    d, hd = cfg["hidden_size"], cfg["head_dim"]
    out = {}
    for name, t in sd.items():
        if name == "lm_head.weight":
            continue
        if name.endswith("norm.weight"):
            t = torch.randn(t.shape, generator=g) * 0.2
        out[name] = t
        if name.endswith("input_layernorm.weight"):
            prefix = name[: -len("input_layernorm.weight")]
            for n, size in (("pre_feedforward_layernorm", d), ("post_feedforward_layernorm", d),
                            ("self_attn.q_norm", hd), ("self_attn.k_norm", hd)):
                out[prefix + n + ".weight"] = torch.randn(size, generator=g) * 0.2
    return out


def make_handmade(family, llamacpp, dump_bin, shared):
    cls, model_type, extra, edit, tok, pre = HANDMADE[family]
    seed = zlib.crc32(family.encode())
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed + 1)
    llama = transformers.LlamaForCausalLM(transformers.LlamaConfig(**dict(BASE, **extra))).eval()
    randomize(llama, seed)
    cfg = dict(BASE, **extra)
    sd = {k: v.detach().clone().contiguous() for k, v in llama.state_dict().items() if "rotary_emb" not in k}
    if edit == "olmo2":
        sd = olmo2_tensors(sd, cfg, g)
    elif edit == "olmoe":
        sd = olmoe_tensors(sd, cfg, g)
    elif edit == "qwen3moe":
        sd = qwen3moe_tensors(sd, cfg, g)
        llamacpp, dump_bin = os.environ["NEW_LLAMACPP"], os.environ["NEW_LOGITS_DUMP"]
    elif edit == "qwen3":
        sd = qwen3_tensors(sd, cfg, g)
        llamacpp, dump_bin = os.environ["NEW_LLAMACPP"], os.environ["NEW_LOGITS_DUMP"]
    elif edit == "gemma3":
        sd = gemma3_tensors(sd, cfg, g)
        llamacpp, dump_bin = os.environ["NEW_LLAMACPP"], os.environ["NEW_LOGITS_DUMP"]
    elif edit == "minimax_m2":
        sd = minimax_m2_tensors(sd, cfg, g)
        llamacpp, dump_bin = os.environ["NEW_LLAMACPP"], os.environ["NEW_LOGITS_DUMP"]
    root = os.path.join(HERE, family)
    hf = os.path.join(root, "hf")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(hf)
    from safetensors.torch import save_file
    save_file(sd, os.path.join(hf, "model.safetensors"), metadata={"format": "pt"})
    config = dict(architectures=[cls], model_type=model_type, hidden_act="silu", attention_dropout=0.0,
                  bos_token_id=1 if tok == "spm" else 999, eos_token_id=2 if tok == "spm" else 999, pad_token_id=0,
                  initializer_range=0.02, rope_scaling=None,
                  torch_dtype="float32", use_cache=True,
                  transformers_version=transformers.__version__ + " (config written by hand)")
    config.update(cfg)
    with open(os.path.join(hf, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    copy_tokenizer(tok, shared, hf, False)
    gg = os.path.join(root, "gguf")
    os.makedirs(gg)
    cmd = convert(llamacpp, hf, os.path.join(gg, f"{family}-f32.gguf"), "f32", pre)
    out = subprocess.run([dump_bin, os.path.join(gg, f"{family}-f32.gguf"), ",".join(map(str, INPUT_IDS))],
                         check=True, capture_output=True, text=True).stdout
    lc = json.loads(out)
    dump(os.path.join(gg, f"{family}-f32.logits.json"), {"tokens": lc["tokens"], "logits": f32(lc["logits"])})
    print(f"{family}: written by hand; llama.cpp's logits are the reference")
    return {"family": family, "class": cls, "handmade": True, "convert": [cmd], "seed": seed,
            "converter": "newer" if "NEW_LLAMACPP" in os.environ and llamacpp == os.environ["NEW_LLAMACPP"] else "c392e509"}


# LFM2-MoE (GGUF "lfm2moe"; the newer llama.cpp): transformers v4.57.6 has no Lfm2MoeForCausalLM (it came later),
# so the checkpoint is written here in the names and config.json keys that class saves, from an Lfm2ForCausalLM's
# redrawn weights (the same module names for the embedding, the short convolutions, the attention and the norms).
# 4 layers (conv, full_attention, conv, conv), GQA 4/2; layer 0 dense (num_dense_layers 1, its MLP 128 wide),
# layers 1-3 a mixture (feed_forward.gate, feed_forward.experts.N.w1/w3/w2 of width moe_intermediate_size 32) of 4
# experts, 2 used: sigmoid scores chosen by score + feed_forward.expert_bias (N(0, 0.2²)), renormalised; tied (the
# converter's lfm2moe has no output tensor).
# llama.cpp's logits are the reference (no reference.json).
LFM2MOE = dict(BASE, num_hidden_layers=4, intermediate_size=128, moe_intermediate_size=32, num_key_value_heads=2,
               num_experts=4, num_experts_per_tok=2, num_dense_layers=1, norm_topk_prob=True, use_expert_bias=True,
               routed_scaling_factor=1.0, rope_theta=1000000.0, norm_eps=1e-5, conv_L_cache=3, conv_bias=False,
               layer_types=["conv", "full_attention", "conv", "conv"], tie_word_embeddings=True,
               pad_token_id=999, bos_token_id=999, eos_token_id=999)


def make_lfm2moe(family, llamacpp, dump_bin, shared):
    llamacpp, dump_bin = os.environ["NEW_LLAMACPP"], os.environ["NEW_LOGITS_DUMP"]
    seed = zlib.crc32(family.encode())
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed + 1)
    cfg = dict(LFM2MOE)
    dense = {k: v for k, v in cfg.items() if k not in ("moe_intermediate_size", "num_experts", "num_experts_per_tok",
                                                       "num_dense_layers", "norm_topk_prob", "use_expert_bias",
                                                       "routed_scaling_factor")}
    model = transformers.Lfm2ForCausalLM(transformers.Lfm2Config(**dense, block_auto_adjust_ff_dim=False)).eval()
    randomize(model, seed)
    sd = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    d, f, n = cfg["hidden_size"], cfg["moe_intermediate_size"], cfg["num_experts"]
    for i in range(cfg["num_dense_layers"], cfg["num_hidden_layers"]):
        p = f"model.layers.{i}.feed_forward."
        for w in ("w1", "w2", "w3"):
            del sd[p + w + ".weight"]
        sd[p + "gate.weight"] = torch.randn((n, d), generator=g) * d ** -0.5
        sd[p + "expert_bias"] = torch.randn((n,), generator=g) * 0.2
        for x in range(n):
            sd[p + f"experts.{x}.w1.weight"] = torch.randn((f, d), generator=g) * d ** -0.5
            sd[p + f"experts.{x}.w3.weight"] = torch.randn((f, d), generator=g) * d ** -0.5
            sd[p + f"experts.{x}.w2.weight"] = torch.randn((d, f), generator=g) * f ** -0.5
    root = os.path.join(HERE, family)
    hf = os.path.join(root, "hf")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(hf)
    from safetensors.torch import save_file
    save_file(sd, os.path.join(hf, "model.safetensors"), metadata={"format": "pt"})
    config = dict(architectures=["Lfm2MoeForCausalLM"], model_type="lfm2_moe", initializer_range=0.02,
                  torch_dtype="float32", use_cache=True,
                  transformers_version=transformers.__version__ + " (config written by hand)")
    config.update(cfg)
    with open(os.path.join(hf, "config.json"), "w") as fh:
        json.dump(config, fh, indent=2, sort_keys=True)
        fh.write("\n")
    copy_tokenizer("bpe", shared, hf, False)
    gg = os.path.join(root, "gguf")
    os.makedirs(gg)
    cmd = convert(llamacpp, hf, os.path.join(gg, f"{family}-f32.gguf"), "f32", "gpt-2")
    out = subprocess.run([dump_bin, os.path.join(gg, f"{family}-f32.gguf"), ",".join(map(str, INPUT_IDS))],
                         check=True, capture_output=True, text=True).stdout
    lc = json.loads(out)
    dump(os.path.join(gg, f"{family}-f32.logits.json"), {"tokens": lc["tokens"], "logits": f32(lc["logits"])})
    new_tokens = NEW_TOKENS_OF.get(family, NEW_TOKENS)
    dump(os.path.join(hf, "generate.json"), {"reference": "llama.cpp greedy (logits-dump, argmax of the last row)",
                                             "prompt_ids": INPUT_IDS[:PROMPT], "max_new_tokens": new_tokens,
                                             "greedy": llamacpp_greedy(dump_bin, os.path.join(gg, f"{family}-f32.gguf"),
                                                                       new_tokens)})
    print(f"{family}: written by hand; llama.cpp's logits are the reference")
    return {"family": family, "class": "Lfm2MoeForCausalLM", "handmade": True, "convert": [cmd], "seed": seed,
            "converter": "newer"}


# DeepSeek's model classes are not in transformers v4.43.4: DeepSeek publishes them beside its checkpoints
# (modeling_deepseek.py, configuration_deepseek.py; README names the copy used). The folder holding the two
# files is given in $DEEPSEEK_V2_CODE; they are imported unmodified as one package.
# family -> (config kwargs, dir env var)
DEEPSEEK = {
    # DeepSeek-V2-Lite's form: no query compression (q_lora_rank None), keys and values through a 16-wide latent
    # (kv_lora_rank) plus one shared 8-wide rotary key, heads of 16 (no rope) + 8 (rope) for Q/K and 16 for V;
    # layer 0 dense (first_k_dense_replace 1), then 4 routed experts of width 16, 2 used per token (softmax,
    # greedy, not renormalised, scaled by routed_scaling_factor 1.5) beside 2 shared experts; YaRN rope_scaling as
    # V2-Lite states it (mscale = mscale_all_dim), original context 16, factor 4. 27 layers, hidden 32: llama.cpp
    # c392e509 takes a DeepSeek-2 model without query compression only at V2-Lite's 27 layers (is_lite).
    "deepseek2": (dict(hidden_size=32, intermediate_size=64, moe_intermediate_size=16, num_hidden_layers=27,
                       num_attention_heads=4, num_key_value_heads=4, vocab_size=1000, max_position_embeddings=64,
                       n_shared_experts=2, n_routed_experts=4, routed_scaling_factor=1.5, kv_lora_rank=16,
                       q_lora_rank=None, qk_rope_head_dim=8, v_head_dim=16, qk_nope_head_dim=16,
                       topk_method="greedy", n_group=1, topk_group=1, num_experts_per_tok=2, moe_layer_freq=1,
                       first_k_dense_replace=1, norm_topk_prob=False, scoring_func="softmax", aux_loss_alpha=0.001,
                       seq_aux=True, rms_norm_eps=1e-6, rope_theta=10000.0,
                       rope_scaling={"beta_fast": 32, "beta_slow": 1, "factor": 4, "mscale": 0.707,
                                     "mscale_all_dim": 0.707, "original_max_position_embeddings": 16,
                                     "type": "yarn"},
                       attention_bias=False, attention_dropout=0.0, tie_word_embeddings=False,
                       bos_token_id=999, eos_token_id=999, pad_token_id=None),
                  "DEEPSEEK_V2_CODE"),
    # DeepSeek-V3's form (its own model code, from $DEEPSEEK_V3_CODE): a 24-wide query bottleneck (q_lora_rank) with
    # its RMSNorm, the same latent attention; 3 layers, layer 0 dense, then 8 routed experts of width 16 in 4
    # groups, 2 used per token: sigmoid scores, chosen by score + e_score_correction_bias (redrawn non-zero, as
    # every bias) within the top 2 groups (noaux_tc), renormalised (norm_topk_prob) and scaled by 2.5, beside one
    # shared expert. llama.cpp c392e509 chooses among all experts (no groups), so its logits differ by design.
    "deepseek3": (dict(hidden_size=32, intermediate_size=64, moe_intermediate_size=16, num_hidden_layers=3,
                       num_nextn_predict_layers=1, num_attention_heads=4, num_key_value_heads=4, vocab_size=1000,
                       max_position_embeddings=64, n_shared_experts=1, n_routed_experts=8,
                       routed_scaling_factor=2.5, kv_lora_rank=16, q_lora_rank=24, qk_rope_head_dim=8,
                       v_head_dim=16, qk_nope_head_dim=16, topk_method="noaux_tc", n_group=4, topk_group=2,
                       num_experts_per_tok=2, moe_layer_freq=1, first_k_dense_replace=1, norm_topk_prob=True,
                       scoring_func="sigmoid", aux_loss_alpha=0.001, seq_aux=True, rms_norm_eps=1e-6,
                       rope_theta=10000.0,
                       rope_scaling={"beta_fast": 32, "beta_slow": 1, "factor": 4, "mscale": 1.0,
                                     "mscale_all_dim": 1.0, "original_max_position_embeddings": 16,
                                     "type": "yarn"},
                       attention_bias=False, attention_dropout=0.0, tie_word_embeddings=False,
                       bos_token_id=999, eos_token_id=999, pad_token_id=None),
                  "DEEPSEEK_V3_CODE"),
}


# The deepseek2 form at 2 layers (a dense one, then a mixture): llama.cpp c392e509 refuses it (without query
# compression it reads no q_lora_rank only at 27 layers), so it has no llama.cpp logits; it is here for the
# converter's byte identity and for a float32 comparison with transformers at a depth where rounding has not grown
# (27 layers carry it to ~9e-6 in transformers' own logits).
DEEPSEEK["deepseek2-short"] = (dict(DEEPSEEK["deepseek2"][0], num_hidden_layers=2), "DEEPSEEK_V2_CODE")

# Fixtures whose transformers class computes another model than the checkpoint's (model's hfDiffers): their
# generate.json holds llama.cpp's greedy decoding (transformers' beside it, as transformers_greedy).
GREEDY_BY_LLAMACPP = {"mamba2-groups": "transformers' pure-torch Mamba2 normalises y·SiLU(z) across all groups at once, "
                                       "the CUDA kernels and llama.cpp per group"}

# Fixtures llama.cpp (c392e509, or the newer one for NEWER families) refuses to load: no llama.cpp logits, and the refusal is checked when made.
LLAMACPP_REFUSES = {"deepseek2-short": "DeepSeek-2 without query compression at other than 27 layers",
                    "gemma3n-shared": "the newer llama.cpp fixes Gemma 3n's per-layer input width at 256"}


def deepseek_module(env):
    """DeepSeek's modeling_deepseek.py (and its configuration_deepseek.py) from the folder in $env, imported as
    a package so that its relative import resolves; nothing in them is changed."""
    import importlib.util
    folder = os.environ[env]
    name = "deepseek_" + env.lower()
    spec = importlib.util.spec_from_file_location(name, os.path.join(folder, "modeling_deepseek.py"),
                                                  submodule_search_locations=[folder])
    pkg = importlib.util.module_from_spec(spec)
    sys.modules[name] = pkg
    spec.loader.exec_module(pkg)
    return pkg


# gpt-oss (transformers 4.55; the newer llama.cpp): 2 layers, the first sliding (window 4 < 12 tokens), the second
# full; attention sinks; 4 experts of width 64, 2 used (softmax over the chosen two), biases on router and experts;
# YaRN (factor 4, original context 8, truncate false as published). Its experts are stored as MXFP4 blocks and E8M0
# scales the way the published checkpoints are: transformers packs MXFP4 only on a GPU (Triton kernels), so the
# float32 experts are packed by the Triton kernels' own pure-torch downcast_to_mxfp_torch (numerics_details/mxfp.py,
# from the folder given in $MXFP_CODE; README names its commit), loaded from that file with a stand-in for
# triton.cdiv, its one use of Triton. transformers then loads the packed checkpoint, dequantizing on the CPU.
GPTOSS = dict(vocab_size=1000, hidden_size=64, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16, num_local_experts=4, num_experts_per_tok=2, sliding_window=4,
              rope_theta=150000.0, max_position_embeddings=32, rms_norm_eps=1e-5,
              rope_scaling={"rope_type": "yarn", "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
                            "original_max_position_embeddings": 8},
              layer_types=["sliding_attention", "full_attention"], tie_word_embeddings=False,
              pad_token_id=999, bos_token_id=999, eos_token_id=999)
GPTOSS_QUANT = {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                           "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"}


def mxfp_downcast():
    """downcast_to_mxfp_torch from the Triton kernels' mxfp.py in $MXFP_CODE, unmodified: the module's own source,
    run with the names it imports from Triton replaced by stand-ins (triton.cdiv; MXFP_BLOCK_SIZE 32, which the
    kernel module defines; the GPU kernels it imports are not used by this function)."""
    import ast
    import enum
    import math
    import types
    import torch.nn.functional as F
    path = os.path.join(os.environ["MXFP_CODE"], "mxfp.py")
    with open(path) as f:
        tree = ast.parse(f.read())
    keep = {"DequantScaleRoundingMode", "right_shift_unsigned", "get_max_quant_val", "downcast_to_mxfp_torch"}
    tree.body = [n for n in tree.body if getattr(n, "name", None) in keep]
    triton = types.SimpleNamespace(cdiv=lambda a, b: -(-a // b))
    env = {"Enum": enum.Enum, "torch": torch, "F": F, "math": math, "triton": triton, "MXFP_BLOCK_SIZE": 32}
    exec(compile(tree, path, "exec"), env)
    return env["downcast_to_mxfp_torch"]


def mxfp4_pack(w, downcast):
    """[E, in, out] experts (transformers' layout) as the published [E, out, in/32, 16] blocks and [E, out, in/32]
    scales: packed along in, per output row."""
    blocks, scales = downcast(w.transpose(1, 2).contiguous(), torch.uint8, axis=-1)
    e, o, half = blocks.shape
    return blocks.reshape(e, o, half // 16, 16).contiguous(), scales.contiguous()


def make_gptoss(family, llamacpp, dump_bin, shared):
    from safetensors.torch import load_file, save_file
    have = tuple(int(x) for x in transformers.__version__.split(".")[:2])
    if have < (4, 57):
        raise RuntimeError(f"{family} needs transformers >= 4.57, this is {transformers.__version__}")
    llamacpp, dump_bin = os.environ["NEW_LLAMACPP"], os.environ["NEW_LOGITS_DUMP"]
    downcast = mxfp_downcast()
    seed = zlib.crc32(family.encode())
    torch.manual_seed(seed)
    config = transformers.GptOssConfig(**GPTOSS)
    config._attn_implementation = "eager"
    model = transformers.GptOssForCausalLM(config).eval()
    randomize(model, seed)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if p.dim() == 3:  # experts [E, in, out]: N(0, 1/in)
                p.copy_(torch.randn(p.shape, generator=g) * p.shape[1] ** -0.5)
            elif "experts" in name or name.endswith("router.bias"):  # expert and router biases
                p.copy_(torch.randn(p.shape, generator=g) * 0.2)
            elif name.endswith("sinks"):  # one logit per head, some above the scores, some below
                p.copy_(torch.randn(p.shape, generator=g))
    root = os.path.join(HERE, family)
    hf = os.path.join(root, "hf")
    shutil.rmtree(root, ignore_errors=True)
    model.save_pretrained(hf)
    copy_tokenizer("bpe", shared, hf, False)
    st = os.path.join(hf, "model.safetensors")
    sd = load_file(st)
    for k in sorted(sd):
        if k.endswith("experts.gate_up_proj") or k.endswith("experts.down_proj"):
            sd[k + "_blocks"], sd[k + "_scales"] = mxfp4_pack(sd.pop(k), downcast)
    save_file(sd, st, metadata={"format": "pt"})
    with open(os.path.join(hf, "config.json")) as f:
        cj = json.load(f)
    cj["quantization_config"] = GPTOSS_QUANT
    with open(os.path.join(hf, "config.json"), "w") as f:
        json.dump(cj, f, indent=2, sort_keys=True)
        f.write("\n")

    # The reference runs the saved checkpoint with its experts dequantized by transformers' own CPU function
    # (integrations/mxfp4.py convert_moe_packed_tensors, what from_pretrained calls on a machine without a GPU;
    # from_pretrained itself needs the accelerate package, which trixie lacks), in float32.
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    sd = load_file(st)
    for k in sorted(sd):
        if k.endswith("_blocks"):
            base = k[:-len("_blocks")]
            sd[base] = convert_moe_packed_tensors(sd.pop(k), sd.pop(base + "_scales"), dtype=torch.float32)
    cfg = transformers.GptOssConfig.from_pretrained(hf)
    del cfg.quantization_config
    cfg._attn_implementation = "eager"
    model = transformers.GptOssForCausalLM(cfg).eval()
    model.load_state_dict(sd, strict=True)
    ids = torch.tensor([INPUT_IDS])
    with torch.no_grad():
        logits = model(ids).logits[0]
        greedy = model.generate(ids[:, :PROMPT], max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                do_sample=False, num_beams=1, eos_token_id=None, pad_token_id=0)[0].tolist()
    versions = {"transformers": transformers.__version__, "torch": torch.__version__,
                "model_class": "GptOssForCausalLM", "seed": seed, "attn_implementation": "eager", "threads": 1,
                "experts": "MXFP4, packed by downcast_to_mxfp_torch ($MXFP_CODE), dequantized by transformers"}
    dump(os.path.join(hf, "reference.json"), dict(versions, input_ids=INPUT_IDS, logits=f32(logits)))
    dump(os.path.join(hf, "generate.json"), dict(versions, prompt_ids=INPUT_IDS[:PROMPT],
                                                  max_new_tokens=NEW_TOKENS, greedy=greedy))
    gg = os.path.join(root, "gguf")
    os.makedirs(gg)
    cmd = convert(llamacpp, hf, os.path.join(gg, f"{family}-f32.gguf"), "f32", "gpt-2")
    out = subprocess.run([dump_bin, os.path.join(gg, f"{family}-f32.gguf"), ",".join(map(str, INPUT_IDS))],
                         check=True, capture_output=True, text=True).stdout
    lc = json.loads(out)
    dump(os.path.join(gg, f"{family}-f32.logits.json"), {"tokens": lc["tokens"], "logits": f32(lc["logits"])})
    diff = float(np.max(np.abs(np.asarray(lc["logits"], np.float32) - logits.numpy())))
    print(f"{family}: llama.cpp f32 vs transformers max|d| = {diff:.3g}")
    return {"family": family, "class": "GptOssForCausalLM", "llamacpp_vs_transformers_max_abs": diff,
            "convert": [cmd], "pre": "gpt-2", "converter": "newer", "transformers": transformers.__version__,
            "torch": torch.__version__, "seed": seed}


# Nemotron-H (GGUF "nemotron_h"; the newer llama.cpp): transformers v4.57.6 has no class for it, and NVIDIA's own
# modeling_nemotron_h.py (README names the copy read) cannot run here: it raises ImportError at import unless
# mamba_ssm (Triton kernels, CUDA) is installed, and its gated RMSNorm calls that package's rmsnorm_fn even on its
# torch path. So the checkpoint is written here in the tensor names and config.json keys that class saves, and
# llama.cpp's logits are the reference. 5 layers by hybrid_override_pattern "M-M*-": Mamba-2 (8 heads of 16
# channels, 2 groups of B and C of state 16, convolution of 4 taps with a bias, the gated RMSNorm per group),
# MLP (up/down, squared ReLU, no gate), Mamba-2, attention (no RoPE, GQA 4/2, head_dim 16), MLP; each layer one
# pre-norm and one residual; untied. config.json states rms_norm_eps beside the class's layer_norm_epsilon: the
# converter reads the RMS epsilon from rms_norm_eps alone, and llama.cpp refuses a GGUF without it.
NEMOTRON_H = dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=5,
                  hybrid_override_pattern="M-M*-", num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  mamba_num_heads=8, mamba_head_dim=16, n_groups=2, ssm_state_size=16, conv_kernel=4, expand=2,
                  chunk_size=4, mamba_hidden_act="silu", mlp_hidden_act="relu2", layer_norm_epsilon=1e-5, rms_norm_eps=1e-5,
                  use_conv_bias=True, use_bias=False, mlp_bias=False, attention_bias=False,
                  mamba_proj_bias=False, residual_in_fp32=False, rescale_prenorm_residual=True,
                  time_step_limit=[0.0, float("inf")], time_step_min=0.001, time_step_max=0.1,
                  time_step_floor=1e-4, max_position_embeddings=128, sliding_window=None, use_mamba_kernels=True,
                  num_logits_to_keep=1, tie_word_embeddings=False, pad_token_id=0, bos_token_id=999,
                  eos_token_id=999)


def nemotron_h_tensors(cfg, g):
    """NemotronHForCausalLM's tensors (backbone.embeddings, backbone.layers.N.norm and .mixer.*, backbone.norm_f,
    lm_head), drawn as randomize() draws them: matrices N(0, 1/fan_in), the convolution's taps N(0, 1) (its
    fan-in is 1 per channel), norm weights and A_log and D 1 + N(0, 0.2²), biases (dt_bias, conv1d.bias)
    N(0, 0.2²)."""
    d, f, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    h, p, grp, n, k = cfg["mamba_num_heads"], cfg["mamba_head_dim"], cfg["n_groups"], cfg["ssm_state_size"], \
        cfg["conv_kernel"]
    inner, hd = h * p, cfg["head_dim"]
    conv = inner + 2 * grp * n

    def mat(rows, cols):
        return torch.randn(rows, cols, generator=g) * cols ** -0.5

    def one(size):
        return 1 + torch.randn(size, generator=g) * 0.2

    sd = {"backbone.embeddings.weight": mat(v, d)}
    for i, kind in enumerate(cfg["hybrid_override_pattern"]):
        b = f"backbone.layers.{i}."
        sd[b + "norm.weight"] = one(d)
        m = b + "mixer."
        if kind == "M":
            sd[m + "in_proj.weight"] = mat(2 * inner + 2 * grp * n + h, d)
            sd[m + "conv1d.weight"] = torch.randn(conv, 1, k, generator=g)
            sd[m + "conv1d.bias"] = torch.randn(conv, generator=g) * 0.2
            sd[m + "dt_bias"] = torch.randn(h, generator=g) * 0.2
            sd[m + "A_log"] = one(h)
            sd[m + "D"] = one(h)
            sd[m + "norm.weight"] = one(inner)
            sd[m + "out_proj.weight"] = mat(d, inner)
        elif kind == "*":
            sd[m + "q_proj.weight"] = mat(cfg["num_attention_heads"] * hd, d)
            sd[m + "k_proj.weight"] = mat(cfg["num_key_value_heads"] * hd, d)
            sd[m + "v_proj.weight"] = mat(cfg["num_key_value_heads"] * hd, d)
            sd[m + "o_proj.weight"] = mat(d, cfg["num_attention_heads"] * hd)
        else:
            sd[m + "up_proj.weight"] = mat(f, d)
            sd[m + "down_proj.weight"] = mat(d, f)
    sd["backbone.norm_f.weight"] = one(d)
    sd["lm_head.weight"] = mat(v, d)
    return sd


def make_nemotron_h(family, llamacpp, dump_bin, shared):
    from safetensors.torch import save_file
    llamacpp, dump_bin = os.environ["NEW_LLAMACPP"], os.environ["NEW_LOGITS_DUMP"]
    seed = zlib.crc32(family.encode())
    g = torch.Generator().manual_seed(seed)
    root = os.path.join(HERE, family)
    hf = os.path.join(root, "hf")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(hf)
    sd = {k: t.contiguous() for k, t in nemotron_h_tensors(NEMOTRON_H, g).items()}
    save_file(sd, os.path.join(hf, "model.safetensors"), metadata={"format": "pt"})
    config = dict(NEMOTRON_H, architectures=["NemotronHForCausalLM"], model_type="nemotron_h",
                  auto_map={"AutoConfig": "configuration_nemotron_h.NemotronHConfig",
                            "AutoModelForCausalLM": "modeling_nemotron_h.NemotronHForCausalLM"},
                  torch_dtype="float32", use_cache=True, initializer_range=0.02, hidden_dropout=0.0,
                  attention_dropout=0.0, transformers_version=transformers.__version__ + " (config written by hand)")
    with open(os.path.join(hf, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    copy_tokenizer("bpe", shared, hf, False)
    gg = os.path.join(root, "gguf")
    os.makedirs(gg)
    cmd = convert(llamacpp, hf, os.path.join(gg, f"{family}-f32.gguf"), "f32", "gpt-2")
    out = subprocess.run([dump_bin, os.path.join(gg, f"{family}-f32.gguf"), ",".join(map(str, INPUT_IDS))],
                         check=True, capture_output=True, text=True).stdout
    lc = json.loads(out)
    dump(os.path.join(gg, f"{family}-f32.logits.json"), {"tokens": lc["tokens"], "logits": f32(lc["logits"])})
    new_tokens = NEW_TOKENS_OF.get(family, NEW_TOKENS)
    dump(os.path.join(hf, "generate.json"), {"reference": "llama.cpp greedy (logits-dump, argmax of the last row)",
                                             "prompt_ids": INPUT_IDS[:PROMPT], "max_new_tokens": new_tokens,
                                             "greedy": llamacpp_greedy(dump_bin, os.path.join(gg, f"{family}-f32.gguf"),
                                                                       new_tokens)})
    print(f"{family}: written by hand; llama.cpp's logits are the reference")
    return {"family": family, "class": "NemotronHForCausalLM", "handmade": True, "convert": [cmd], "seed": seed,
            "converter": "newer"}


# RWKV-7 (GGUF "rwkv7"; the newer llama.cpp): transformers v4.57.6 has no RWKV-7 and fla's RWKV7ForCausalLM imports
# its Triton kernels, so the checkpoint is written here in the names and config.json keys fla's class saves
# (fla-org/flash-linear-attention bc3b101d, fla/models/rwkv7, fla/layers/rwkv7.py): 3 layers of hidden 128, two heads
# of 64 (head_dim; ggml's AVX-512 wkv7 steps 64 floats at a time, so a narrower head reads past its own on such a CPU),
# norm_eps 1e-5 (fla's ln_x group norm takes head_dim·norm_eps = 64e-5, the epsilon llama.cpp fixes), LoRA ranks
# decay 16, a 16, v 8, gate 16, channel mix 128 wide, untied head. Layer 0 has no v_lora (fla makes none).
# Every matrix N(0, 1/fan_in), norm weights 1 + N(0, 0.2²), biases N(0, 0.2²); the token-shift mixes x_* and
# ffn.x_k U(0, 1), k_k 0.7 + N(0, 0.1²), k_a 1 + N(0, 0.1²), r_k N(0, 0.2²), the decay bias (w_lora's) N(−0.5, 0.5²).
# The vocabulary is RWKV World's rwkv_vocab_v20230424.txt (BlinkDL/RWKV-LM 524481d5, RWKV-v7/, sha256
# e6dee3d4…552bca89, from $RWKV_VOCAB) cut to its first 999 lines (the 256 bytes and the first 743 two-byte
# tokens): with the converter's <s> in front, 1000 tokens.
# llama.cpp's logits are the reference (no reference.json); generate.json its greedy 32 tokens.
RWKV7 = dict(vocab_size=1000, hidden_size=128, hidden_ratio=4, intermediate_size=128, num_hidden_layers=3, head_dim=64,
             num_heads=2, decay_low_rank_dim=16, a_low_rank_dim=16, v_low_rank_dim=8, gate_low_rank_dim=16,
             hidden_act="sqrelu", norm_first=True, norm_bias=True, norm_eps=1e-5, attn=None, attn_mode="chunk",
             fuse_norm=True, fuse_cross_entropy=True, fuse_linear_cross_entropy=False, use_l2warp=True,
             max_position_embeddings=2048, tie_word_embeddings=False, bos_token_id=0, eos_token_id=0,
             pad_token_id=None, value_dim=[128, 128, 128])


RWKV7_CHAT = ("{% for m in messages %}{{ m['role'] | capitalize }}: {{ m['content'] | trim }}\n\n{% endfor %}"
              "{% if add_generation_prompt %}Assistant:{% endif %}")


def rwkv7_tensors(cfg, g):
    d, f, n = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    H, hd = cfg["num_heads"], cfg["head_dim"]
    mat = lambda o, i: torch.randn((o, i), generator=g) * i ** -0.5
    nrm = lambda: 1 + torch.randn((d,), generator=g) * 0.2
    bias = lambda *s: torch.randn(s, generator=g) * 0.2
    sd = {"model.embeddings.weight": mat(cfg["vocab_size"], d), "lm_head.weight": mat(cfg["vocab_size"], d),
          "model.norm.weight": nrm(), "model.norm.bias": bias(d),
          "model.layers.0.pre_norm.weight": nrm(), "model.layers.0.pre_norm.bias": bias(d)}
    for i in range(n):
        p = f"model.layers.{i}."
        for m in ("attn_norm", "ffn_norm", "attn.g_norm"):
            sd[p + m + ".weight"], sd[p + m + ".bias"] = nrm(), bias(d)
        for x in "rwkvag":
            sd[p + "attn.x_" + x] = torch.rand((1, 1, d), generator=g)
        sd[p + "attn.k_k"] = 0.7 + torch.randn((d,), generator=g) * 0.1
        sd[p + "attn.k_a"] = 1 + torch.randn((d,), generator=g) * 0.1
        sd[p + "attn.r_k"] = bias(H, hd)
        for m in ("r", "k", "v", "o"):
            sd[p + f"attn.{m}_proj.weight"] = mat(d, d)
        loras = [("w", cfg["decay_low_rank_dim"]), ("a", cfg["a_low_rank_dim"]), ("g", cfg["gate_low_rank_dim"])]
        if i > 0:
            loras.append(("v", cfg["v_low_rank_dim"]))
        for m, r in loras:
            sd[p + f"attn.{m}_lora.lora.0.weight"] = mat(r, d)
            sd[p + f"attn.{m}_lora.lora.2.weight"] = mat(d, r)
            if m != "g":
                sd[p + f"attn.{m}_lora.lora.2.bias"] = bias(d) if m != "w" else -0.5 + torch.randn((d,), generator=g) * 0.5
        sd[p + "ffn.x_k"] = torch.rand((d,), generator=g)
        sd[p + "ffn.key.weight"], sd[p + "ffn.value.weight"] = mat(f, d), mat(d, f)
    return sd


def make_rwkv7(family, llamacpp, dump_bin, shared):
    from safetensors.torch import save_file
    llamacpp, dump_bin = os.environ["NEW_LLAMACPP"], os.environ["NEW_LOGITS_DUMP"]
    seed = zlib.crc32(family.encode())
    g = torch.Generator().manual_seed(seed)
    root = os.path.join(HERE, family)
    hf = os.path.join(root, "hf")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(hf)
    sd = {k: t.contiguous() for k, t in rwkv7_tensors(RWKV7, g).items()}
    save_file(sd, os.path.join(hf, "model.safetensors"), metadata={"format": "pt"})
    config = dict(RWKV7, architectures=["RWKV7ForCausalLM"], model_type="rwkv7", torch_dtype="float32",
                  use_cache=True, initializer_range=0.02,
                  transformers_version=transformers.__version__ + " (config written by hand)")
    with open(os.path.join(hf, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.environ["RWKV_VOCAB"], encoding="utf-8") as f:
        lines = f.readlines()[:RWKV7["vocab_size"] - 1]
    with open(os.path.join(hf, "rwkv_vocab_v20230424.txt"), "w", encoding="utf-8") as f:
        f.writelines(lines)
    # A chat template of our own in tokenizer_config.json (RWKV World's "User: …\n\nAssistant:" turns): without one
    # the converter writes the text of its llama-cpp-rwkv-world.jinja, which tfconv does not copy (it writes that
    # template's name, rwkv-world, which llama.cpp knows).
    with open(os.path.join(hf, "tokenizer_config.json"), "w") as f:
        json.dump({"chat_template": RWKV7_CHAT}, f, indent=2)
        f.write("\n")
    gg = os.path.join(root, "gguf")
    os.makedirs(gg)
    gguf = os.path.join(gg, f"{family}-f32.gguf")
    cmd = convert(llamacpp, hf, gguf, "f32", None)
    out = subprocess.run([dump_bin, gguf, ",".join(map(str, INPUT_IDS))], check=True, capture_output=True,
                         text=True).stdout
    lc = json.loads(out)
    dump(os.path.join(gg, f"{family}-f32.logits.json"), {"tokens": lc["tokens"], "logits": f32(lc["logits"])})
    dump(os.path.join(hf, "generate.json"), {"reference": "llama.cpp greedy (logits-dump, argmax of the last row)",
                                             "prompt_ids": INPUT_IDS[:PROMPT], "max_new_tokens": 32,
                                             "greedy": llamacpp_greedy(dump_bin, gguf, 32)})
    print(f"{family}: written by hand; llama.cpp's logits are the reference")
    return {"family": family, "class": "RWKV7ForCausalLM", "handmade": True, "convert": [cmd], "seed": seed,
            "converter": "newer"}


def llamacpp_greedy(dump_bin, gguf, new_tokens):
    """Greedy decoding by llama.cpp, for a family transformers cannot run here: the logits dump of the whole
    sequence so far, its last row's argmax appended, new_tokens times after the first PROMPT ids."""
    ids = INPUT_IDS[:PROMPT]
    for _ in range(new_tokens):
        out = subprocess.run([dump_bin, gguf, ",".join(map(str, ids))], check=True, capture_output=True, text=True)
        ids = ids + [int(np.argmax(np.asarray(json.loads(out.stdout)["logits"][-1], np.float32)))]
    return ids


def greedy_ids(model, ids):
    """Greedy decoding by recomputing the whole sequence each step (what generate() with do_sample=False
    computes); DeepSeek's prepare_inputs_for_generation predates this transformers' cache interface."""
    out = ids
    with torch.no_grad():
        for _ in range(NEW_TOKENS):
            nxt = model(out, use_cache=False).logits[0, -1].argmax().view(1, 1)
            out = torch.cat([out, nxt], dim=1)
    return out[0].tolist()


def make_deepseek(family, llamacpp, dump_bin, shared):
    kw, env = DEEPSEEK[family]
    mod = deepseek_module(env)
    v = "V3" if env == "DEEPSEEK_V3_CODE" else "V2"
    from importlib import import_module
    cfg_cls = getattr(import_module(mod.__name__ + ".configuration_deepseek"), f"Deepseek{v}Config")
    model_cls = getattr(mod, f"Deepseek{v}ForCausalLM")
    seed = zlib.crc32(family.encode())
    torch.manual_seed(seed)
    config = cfg_cls(**kw)
    config._attn_implementation = "eager"
    config.architectures = [model_cls.__name__]
    model = model_cls(config).eval()
    randomize(model, seed)
    root = os.path.join(HERE, family)
    hf = os.path.join(root, "hf")
    shutil.rmtree(root, ignore_errors=True)
    model.save_pretrained(hf)
    copy_tokenizer("bpe", shared, hf, False)

    model = model_cls.from_pretrained(hf, attn_implementation="eager").eval()
    assert not model.training
    ids = torch.tensor([INPUT_IDS])
    with torch.no_grad():
        logits = model(ids, use_cache=False).logits[0]
    greedy = greedy_ids(model, ids[:, :PROMPT])
    versions = {"transformers": transformers.__version__, "torch": torch.__version__,
                "model_class": model_cls.__name__, "model_code": "modeling_deepseek.py (" + env + ")",
                "seed": seed, "attn_implementation": "eager", "threads": 1}
    dump(os.path.join(hf, "reference.json"), dict(versions, input_ids=INPUT_IDS, logits=f32(logits)))
    dump(os.path.join(hf, "generate.json"), dict(versions, prompt_ids=INPUT_IDS[:PROMPT],
                                                  max_new_tokens=NEW_TOKENS, greedy=greedy))
    gg = os.path.join(root, "gguf")
    os.makedirs(gg)
    cmd = convert(llamacpp, hf, os.path.join(gg, f"{family}-f32.gguf"), "f32", "gpt-2")
    r = subprocess.run([dump_bin, os.path.join(gg, f"{family}-f32.gguf"), ",".join(map(str, INPUT_IDS))],
                       capture_output=True, text=True)
    if family in LLAMACPP_REFUSES:
        assert r.returncode != 0, f"{family}: llama.cpp was expected to refuse it"
        print(f"{family}: llama.cpp refuses it ({LLAMACPP_REFUSES[family]})")
        return {"family": family, "class": model_cls.__name__, "llamacpp_refuses": LLAMACPP_REFUSES[family],
                "convert": [cmd], "pre": "gpt-2", "seed": seed}
    r.check_returncode()
    lc = json.loads(r.stdout)
    dump(os.path.join(gg, f"{family}-f32.logits.json"), {"tokens": lc["tokens"], "logits": f32(lc["logits"])})
    diff = float(np.max(np.abs(np.asarray(lc["logits"], np.float32) - logits.numpy())))
    print(f"{family}: llama.cpp f32 vs transformers max|d| = {diff:.3g}")
    return {"family": family, "class": model_cls.__name__, "llamacpp_vs_transformers_max_abs": diff,
            "convert": [cmd], "pre": "gpt-2", "seed": seed}


# Hunyuan-A13B's mixture (HunYuanMoEV1ForCausalLM, transformers 4.56; the newer llama.cpp's "hunyuan-moe"). Its
# converter (conversion/hunyuan.py HunYuanMoEModel.set_vocab) reads only the publisher's tiktoken tokenizer
# (tokenization_hy.py HYTokenizer, trust_remote_code: the ranks of hy.tiktoken counted in file order, 210 special
# tokens at the fixed ids 127957-128166) and asserts the tokenizer's n_vocab equals config.json's vocab_size, and
# the class asserts the ranks fill every id below 127957: so the vocabulary is 128167 wide whatever the ranks are.
# hy.tiktoken here: 256 bytes and 744 merges trained by tiktoken 0.9.0's own trainer (Hunyuan's split pattern, the
# first 60000 characters of this repository's README.md), then 3-byte tokens led by 0xF5, 0xF6 (bytes no UTF-8
# text holds, so no text reaches them) up to id 127956. The model is as small as that vocabulary allows: hidden 8,
# 2 layers, 2 heads of 4 (1 KV head), 4 experts of width 16, 2 used (softmax, renormalised), one shared MLP of width
# 16, tied embeddings (float32: 128167 x 8). No rope_scaling: the converter's alpha path asserts a head of 128
# (hidden_size / num_attention_heads). The logits files keep LOGIT_COLUMNS of each row (the full rows are 1.5
# million numbers); their max |d| is taken over the full rows before cutting.
HUNYUAN_MOE_RANKS = 1000
LOGIT_COLUMNS = sorted(set(range(1024)) | set(range(1024, 127957, 997)) | set(range(127957, 128167)))


def hunyuan_ranks(code):
    """hy.tiktoken for the fixture (see above), in tiktoken's ranks format."""
    import base64
    from tiktoken._educational import bpe_train
    sys.path.insert(0, code)
    import tokenization_hy
    with open(os.path.join(HERE, "../../README.md"), encoding="utf-8") as f:
        data = f.read()[:60000]
    ranks = bpe_train(data, HUNYUAN_MOE_RANKS, tokenization_hy.PAT_STR, visualise=None)
    toks = [t for t, _ in sorted(ranks.items(), key=lambda x: x[1])]
    lead = 0xF5
    while len(toks) < tokenization_hy.SPECIAL_START_ID:
        n = len(toks) - HUNYUAN_MOE_RANKS
        toks.append(bytes([lead + n // 65536, (n // 256) % 256, n % 256]))
    return b"".join(base64.b64encode(t) + b" " + str(i).encode() + b"\n" for i, t in enumerate(toks))


def make_hunyuanmoe(family, llamacpp, dump_bin, shared):
    llamacpp, dump_bin = os.environ["NEW_LLAMACPP"], os.environ["NEW_LOGITS_DUMP"]
    code = os.environ["HUNYUAN_CODE"]  # tokenization_hy.py and tokenizer_config.json as Tencent publishes them
    seed = zlib.crc32(family.encode())
    torch.manual_seed(seed)
    n = 2
    config = transformers.HunYuanMoEV1Config(
        vocab_size=128167, hidden_size=8, intermediate_size=16, num_hidden_layers=n, num_attention_heads=2,
        num_key_value_heads=1, head_dim=4, max_position_embeddings=4096, rms_norm_eps=1e-5, rope_theta=10000.0,
        attention_bias=False, tie_word_embeddings=True, num_experts=4, moe_topk=[2] * n,
        moe_intermediate_size=[16] * n, num_shared_expert=[1] * n, bos_token_id=1, eos_token_id=127960,
        pad_token_id=127961, sep_token_id=127962, eod_token_id=127967)
    config._attn_implementation = "eager"
    model = transformers.HunYuanMoEV1ForCausalLM(config).eval()
    randomize(model, seed)
    root = os.path.join(HERE, family)
    hf = os.path.join(root, "hf")
    shutil.rmtree(root, ignore_errors=True)
    model.save_pretrained(hf)
    with open(os.path.join(hf, "hy.tiktoken"), "wb") as f:
        f.write(hunyuan_ranks(code))
    shutil.copy(os.path.join(code, "tokenizer_config.json"), os.path.join(hf, "tokenizer_config.json"))

    model = transformers.HunYuanMoEV1ForCausalLM.from_pretrained(hf, attn_implementation="eager").eval()
    ids = torch.tensor([INPUT_IDS])
    with torch.no_grad():
        logits = model(ids).logits[0]
        greedy = model.generate(ids[:, :PROMPT], max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                do_sample=False, num_beams=1, eos_token_id=None, pad_token_id=0)[0].tolist()
    versions = {"transformers": transformers.__version__, "torch": torch.__version__,
                "model_class": "HunYuanMoEV1ForCausalLM", "seed": seed, "attn_implementation": "eager", "threads": 1}
    cols = torch.tensor(LOGIT_COLUMNS)
    dump(os.path.join(hf, "reference.json"), dict(versions, input_ids=INPUT_IDS, columns=LOGIT_COLUMNS,
                                                  logits=f32(logits[:, cols])))
    dump(os.path.join(hf, "generate.json"), dict(versions, prompt_ids=INPUT_IDS[:PROMPT],
                                                  max_new_tokens=NEW_TOKENS, greedy=greedy))

    gg = os.path.join(root, "gguf")
    os.makedirs(gg)
    # The converter loads the publisher's class from the folder (trust_remote_code); it is not kept there.
    tok_code = os.path.join(hf, "tokenization_hy.py")
    shutil.copy(os.path.join(code, "tokenization_hy.py"), tok_code)
    try:
        try:
            cmd = convert(llamacpp, hf, os.path.join(gg, f"{family}-f32.gguf"), "f32", None)
            pre = None
        except RuntimeError as e:
            # The trained ranks hash to no pre-tokenizer the converter knows (get_vocab_base_pre raises
            # NotImplementedError): the name the publisher's full vocabulary hashes to stands in, as for every
            # trimmed fixture.
            assert "BPE pre-tokenizer was not recognized" in str(e), str(e)
            pre = "hunyuan"
            cmd = convert(llamacpp, hf, os.path.join(gg, f"{family}-f32.gguf"), "f32", pre)
    finally:
        os.remove(tok_code)
        shutil.rmtree(os.path.join(hf, "__pycache__"), ignore_errors=True)
    r = subprocess.run([dump_bin, os.path.join(gg, f"{family}-f32.gguf"), ",".join(map(str, INPUT_IDS))],
                       capture_output=True, text=True)
    r.check_returncode()
    lc = json.loads(r.stdout)
    full = np.asarray(lc["logits"], np.float32)
    dump(os.path.join(gg, f"{family}-f32.logits.json"), {"tokens": lc["tokens"], "columns": LOGIT_COLUMNS,
                                                         "logits": f32(full[:, LOGIT_COLUMNS])})
    diff = float(np.max(np.abs(full - logits.numpy())))
    print(f"{family}: llama.cpp f32 vs transformers max|d| = {diff:.3g} (full rows)")
    return {"family": family, "class": "HunYuanMoEV1ForCausalLM", "llamacpp_vs_transformers_max_abs": diff,
            "convert": [cmd], "pre": pre, "converter": "newer", "transformers": transformers.__version__,
            "torch": torch.__version__}


# Fixtures whose hf/ (made above by c392e509's generation) the newer llama.cpp ($NEW_LLAMACPP, $NEW_LOGITS_DUMP)
# also converts, to gguf/F-newer-f32.gguf with its logits: its DeepSeek-2 form differs from c392e509's (the
# key/value expansion split into attn_k_b/attn_v_b, expert groups kept), and the family reads both. Asked for
# as "F+newer"; hf/ is not rewritten. The value says whether that llama.cpp runs the GGUF: it loads a DeepSeek-2
# without query compression (q_lora_rank) only at V2-Lite's 27 layers, so deepseek2-short has the GGUF alone (for
# the converter's bytes).
NEWER_GGUF = {"deepseek2": True, "deepseek2-short": False, "deepseek3": True}


def make_newer_gguf(family):
    llamacpp, dump_bin = os.environ["NEW_LLAMACPP"], os.environ["NEW_LOGITS_DUMP"]
    root = os.path.join(HERE, family)
    out = os.path.join(root, "gguf", f"{family}-newer-f32.gguf")
    cmd = convert(llamacpp, os.path.join(root, "hf"), out, "f32", "gpt-2")
    if not NEWER_GGUF[family]:
        return {"family": family, "convert": [cmd], "converter": "newer", "pre": "gpt-2",
                "transformers": transformers.__version__, "torch": torch.__version__}
    lc = json.loads(subprocess.run([dump_bin, out, ",".join(map(str, INPUT_IDS))], check=True, capture_output=True,
                                   text=True).stdout)
    dump(os.path.join(root, "gguf", f"{family}-newer-f32.logits.json"),
         {"tokens": lc["tokens"], "logits": f32(lc["logits"])})
    with open(os.path.join(root, "hf", "reference.json")) as f:
        ref = np.asarray(json.load(f)["logits"], np.float32)
    diff = float(np.max(np.abs(np.asarray(lc["logits"], np.float32) - ref)))
    print(f"{family}: newer llama.cpp f32 (its own conversion) vs transformers max|d| = {diff:.3g}")
    return {"family": family, "convert": [cmd], "converter": "newer", "llamacpp_vs_transformers_max_abs": diff,
            "pre": "gpt-2", "transformers": transformers.__version__, "torch": torch.__version__}


def main():
    llamacpp, dump_bin, shared = sys.argv[1:4]
    fams = sys.argv[4:] or sorted(FAMILIES) + sorted(HANDMADE) + sorted(DEEPSEEK) + ["gptoss", "lfm2moe", "nemotron_h", "rwkv7"]
    summary_path = os.path.join(HERE, "summary.json")
    summary = {}
    if os.path.exists(summary_path):
        with open(summary_path) as f:
            summary = json.load(f)
    for fam in fams:
        if fam.endswith("+newer") and fam[: -len("+newer")] in NEWER_GGUF:
            summary[fam] = make_newer_gguf(fam[: -len("+newer")])
            continue
        summary[fam] = (make_handmade if fam in HANDMADE else make_deepseek if fam in DEEPSEEK else
                        make_gptoss if fam == "gptoss" else make_lfm2moe if fam == "lfm2moe" else
                        make_nemotron_h if fam == "nemotron_h" else make_rwkv7 if fam == "rwkv7" else
                        make_hunyuanmoe if fam == "hunyuanmoe" else make)(fam, llamacpp, dump_bin, shared)
    with open(summary_path, "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
