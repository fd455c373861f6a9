// kv_report: what llama.cpp reports when it loads a GGUF and makes a context
// of N positions with a KV cache of a given type: its own log lines for the
// model size and the KV cache size, passed through unchanged (the memory
// estimate of `tfconv inspect --ctx` is checked against them).
//
// Build against a llama.cpp tree (as logits_dump.cpp):
//   g++ -O2 -std=c++17 kv_report.cpp -I$LLAMA/include -I$LLAMA/ggml/include \
//       -L$LLAMA/build/bin -lllama -lggml -lggml-base -Wl,-rpath,$LLAMA/build/bin -o kv-report
// Run: kv-report MODEL.gguf N_CTX f16|q8_0|q4_0|f32 [N_UBATCH [N_SEQ]] 2>&1 |
//          grep -E 'model buffer size|KV self size|output buffer size|compute buffer size'
// (N_UBATCH, default 512, is the physical batch llama.cpp reserves its compute
// graph for; N_SEQ, default 1, the sequences it reserves outputs for.)
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "llama.h"

int main(int argc, char **argv) {
    if (argc < 4 || argc > 6) {
        fprintf(stderr, "usage: %s MODEL.gguf N_CTX TYPE [N_UBATCH [N_SEQ]]\n", argv[0]);
        return 2;
    }
    ggml_type t = GGML_TYPE_F16;
    if (!strcmp(argv[3], "f32")) t = GGML_TYPE_F32;
    else if (!strcmp(argv[3], "q8_0")) t = GGML_TYPE_Q8_0;
    else if (!strcmp(argv[3], "q4_0")) t = GGML_TYPE_Q4_0;
    llama_backend_init();
    llama_model *model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) return 1;
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = atoi(argv[2]);
    if (argc > 4) cp.n_ubatch = atoi(argv[4]);
    if (argc > 5) cp.n_seq_max = atoi(argv[5]);
    cp.n_threads = cp.n_threads_batch = 1;
    cp.type_k = cp.type_v = t;
#ifdef LLAMA_FLASH_ATTN_TYPE_DISABLED_NEW_API
    // newer trees (d32676d7) name the switch flash_attn_type
    cp.flash_attn_type = t != GGML_TYPE_F16 && t != GGML_TYPE_F32 ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
#else
    cp.flash_attn = t != GGML_TYPE_F16 && t != GGML_TYPE_F32; // quantized V needs flash attention
#endif
    llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) return 1;
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
