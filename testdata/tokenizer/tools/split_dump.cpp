// split_dump: prints how llama.cpp's pre-tokenizer splitting (its exported
// unicode_regex_split, the function llm_tokenizer_bpe runs on each text)
// cuts texts with a given list of regexes, as JSON lines.
//
//   split_dump REGEXES TEXTS
//
// REGEXES: the regexes, separated by "\n__regex__\n" lines; TEXTS: texts
// separated by "\n__ggml_vocab_test__\n" lines (llama.cpp's .inp form).
// Prints one JSON array of the pieces (raw bytes, not byte-encoded) per text.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

std::vector<std::string> unicode_regex_split(const std::string & text, const std::vector<std::string> & regex_exprs, bool byte_encode);

static std::string slurp(const char * path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

static std::vector<std::string> cut(const std::string & s, const std::string & sep) {
    std::vector<std::string> out;
    size_t at = 0;
    for (;;) {
        size_t i = s.find(sep, at);
        if (i == std::string::npos) {
            if (at < s.size()) out.push_back(s.substr(at));
            return out;
        }
        out.push_back(s.substr(at, i - at));
        at = i + sep.size();
    }
}

static void put_json(const std::string & s) {
    std::putchar('"');
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') { std::putchar('\\'); std::putchar(c); }
        else if (c < 0x20) std::printf("\\u%04x", c);
        else std::putchar(c);
    }
    std::putchar('"');
}

int main(int argc, char ** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s REGEXES TEXTS\n", argv[0]);
        return 2;
    }
    std::vector<std::string> res = cut(slurp(argv[1]), "\n__regex__\n");
    for (const std::string & t : cut(slurp(argv[2]), "\n__ggml_vocab_test__\n")) {
        std::vector<std::string> pieces = unicode_regex_split(t, res, false);
        std::putchar('[');
        for (size_t i = 0; i < pieces.size(); i++) {
            if (i) std::putchar(',');
            put_json(pieces[i]);
        }
        std::printf("]\n");
    }
    return 0;
}
