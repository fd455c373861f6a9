// lora_logits: the logits llama.cpp computes for a base GGUF with a GGUF LoRA
// adapter applied (unmerged: llama.cpp adds scale·B·(A·x) beside each matmul),
// as JSON, for tfconv's fixtures. Ours (not llama.cpp's code); it only calls
// llama.h: llama_adapter_lora_init loads the adapter, llama_set_adapter_lora
// attaches it with a user scale (llama.cpp multiplies it by alpha/rank). One
// llama_decode of all ids at positions 0..n-1 with the logits of every
// position, f32 KV cache, one thread (as testdata/arch/tools/logits_dump.cpp).
//
// Build against a llama.cpp build tree (libllama):
//   g++ -O2 -std=c++17 lora_logits.cpp -I$LLAMA/include -I$LLAMA/ggml/include \
//       -L$LLAMA/build/bin -lllama -lggml -lggml-base -Wl,-rpath,$LLAMA/build/bin -o lora-logits
// Run: lora-logits BASE.gguf ADAPTER.gguf SCALE 1,2,3 > out.logits.json
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "llama.h"

static void quiet(ggml_log_level level, const char *text, void *) { if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr); }

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s BASE.gguf ADAPTER.gguf SCALE ID,ID,...\n", argv[0]);
        return 2;
    }
    float scale = strtof(argv[3], nullptr);
    std::vector<llama_token> ids;
    for (char *p = strtok(argv[4], ","); p; p = strtok(nullptr, ",")) ids.push_back(atoi(p));
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model *model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    llama_adapter_lora *lora = llama_adapter_lora_init(model, argv[2]);
    if (!lora) { fprintf(stderr, "cannot load adapter %s\n", argv[2]); return 1; }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = ids.size() + 8;
    cp.n_batch = cp.n_ubatch = ids.size();
    cp.n_threads = cp.n_threads_batch = 1;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn = false;
    llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "cannot make a context\n"); return 1; }
    if (llama_set_adapter_lora(ctx, lora, scale) != 0) { fprintf(stderr, "cannot attach the adapter\n"); return 1; }
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
    llama_adapter_lora_free(lora);
    llama_model_free(model);
    return 0;
}
