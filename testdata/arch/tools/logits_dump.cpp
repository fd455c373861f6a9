// logits_dump: the logits llama.cpp computes for a GGUF and a list of token
// ids, as JSON, for tfconv's fixtures. Ours (not llama.cpp's code); it only
// calls llama.h. One llama_decode of all ids at positions 0..n-1 with the
// logits of every position, f32 KV cache, one thread.
//
// Build against a llama.cpp build tree (libllama); for trees newer than
// mid-2025 (flash_attn_type instead of flash_attn) add
// -DLLAMA_FLASH_ATTN_TYPE_DISABLED_NEW_API:
//   g++ -O2 -std=c++17 logits_dump.cpp -I$LLAMA/include -I$LLAMA/ggml/include \
//       -L$LLAMA/build/bin -lllama -lggml -lggml-base -Wl,-rpath,$LLAMA/build/bin -o logits-dump
// Run: logits-dump MODEL.gguf 1,2,3 > MODEL.logits.json
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "llama.h"

static void quiet(ggml_log_level level, const char *text, void *) { if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr); }

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODEL.gguf ID,ID,...\n", argv[0]);
        return 2;
    }
    std::vector<llama_token> ids;
    for (char *p = strtok(argv[2], ","); p; p = strtok(nullptr, ",")) ids.push_back(atoi(p));
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = ids.size() + 8;
    cp.n_batch = cp.n_ubatch = ids.size();
    cp.n_threads = cp.n_threads_batch = 1;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
#ifdef LLAMA_FLASH_ATTN_TYPE_DISABLED_NEW_API
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED; // newer trees turn it on by default (f16 score sums)
#else
    cp.flash_attn = false;
#endif
    llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "cannot make a context\n"); return 1; }
    llama_batch b = llama_batch_init(ids.size(), 0, 1);
    for (size_t i = 0; i < ids.size(); i++) {
        b.token[i] = ids[i]; b.pos[i] = i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1;
    }
    b.n_tokens = ids.size();
    if (llama_decode(ctx, b) != 0) { fprintf(stderr, "llama_decode failed\n"); return 1; }
    int nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
    printf("{\"tokens\":[");
    for (size_t i = 0; i < ids.size(); i++) printf("%s%d", i ? "," : "", ids[i]);
    printf("],\"logits\":[");
    for (size_t i = 0; i < ids.size(); i++) {
        const float *l = llama_get_logits_ith(ctx, i);
        printf("%s[", i ? "," : "");
        for (int j = 0; j < nv; j++) printf("%s%.9g", j ? "," : "", l[j]);
        printf("]");
    }
    printf("]}\n");
    llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
