// chat_apply: prints the chat template a GGUF carries and a two-message chat
// formatted by llama.cpp with it (llama_model_chat_template +
// llama_chat_apply_template, what llama-cli does with --conversation), as
// JSON. Ours; built against llama.h like logits_dump.cpp.
//
//	chat_apply MODEL.gguf
#include "llama.h"

#include <cstdio>
#include <string>
#include <vector>

static void json_str(const char * s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char) *s;
        if (c == '"' || c == '\\') { printf("\\%c", c); }
        else if (c == '\n') { printf("\\n"); }
        else if (c < 0x20) { printf("\\u%04x", c); }
        else { putchar(c); }
    }
    putchar('"');
}

int main(int argc, char ** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
        return 2;
    }
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    const char * tmpl = llama_model_chat_template(model, nullptr);
    llama_chat_message msgs[] = {{"system", "You are terse."}, {"user", "Hello?"}};
    std::vector<char> buf(4096);
    int32_t n = tmpl ? llama_chat_apply_template(tmpl, msgs, 2, true, buf.data(), (int32_t) buf.size()) : -1;
    printf("{\"template\": ");
    json_str(tmpl ? tmpl : "");
    printf(", \"applied\": ");
    json_str(n >= 0 ? std::string(buf.data(), n).c_str() : "");
    printf(", \"result\": %d}\n", n);
    llama_model_free(model);
    return 0;
}
