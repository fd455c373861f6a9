// mtmd_dump: what llama.cpp's mtmd computes for a text GGUF, an mmproj GGUF,
// one image and a prompt, as JSON, for tfconv's vision fixtures. Ours (not
// llama.cpp's code); it calls mtmd.h / mtmd-helper.h / llama.h, and mtmd's
// own image preprocessor class (mtmd-image.h) for the preprocessed tile.
//
// Output: {"image_width", "image_height", "tile" and "tile_height" (the
// first tile's width and height), "pixels" (the preprocessed tile,
// [3][H][W] channel-major as float32 little-endian, base64; the first tile
// for a sliced projector (Idefics3, InternVL, LLaVA-NeXT, Llama 4), which adds "grid" [rows, cols] and "tiles", every
// tile in the prompt's order in that form), "tokens" (the prompt's ids; -1
// at the image's positions), "image_embd" ([n][d_text], the projector's
// output for every image chunk in turn), "logits" ({index in tokens:
// [vocab]} for every text position after the image; the index is the
// position but for M-RoPE models, whose positions after an image jump)}.
// The tiles are made by mtmd's own preprocessor class for the projector, as
// mtmd.cpp chooses it. A sound file gives "audio": true and "samples", no
// tile, and the audio chunks' embeddings.
//
// The prompt's text is split at mtmd's marker <__media__>; mtmd tokenizes
// each part alone and puts <start_of_image> + the image + <end_of_image>
// there (Gemma 3). Text chunks are decoded with the logits of every
// position; the image chunk through mtmd_helper_decode_image_chunk (Gemma 3:
// non-causal). One thread, f32 KV cache, flash attention off.
//
// Build against a llama.cpp build tree with libmtmd (cmake --build build
// --target mtmd):
//   L=/work/ref/llama.cpp-d32676d7
//   g++ -O2 -std=c++17 testdata/vision/tools/mtmd_dump.cpp -I$L/include -I$L/ggml/include -I$L/tools/mtmd \
//       -L$L/build/bin -lmtmd -lllama -lggml -lggml-base -Wl,-rpath,$L/build/bin -o /work/ref/mtmd-dump-d32676d7
// Run: mtmd-dump TEXT.gguf MMPROJ.gguf IMAGE.png "prompt with <__media__>" > out.json
//
// Audio (an audio mmproj and a sound file, which mtmd's helper decodes with
// miniaudio): "audio": true, "samples" (image_width is the sample count),
// no tile ("tile" 0, "pixels" empty); "image_embd" holds the audio chunks'
// embeddings, one after the other; the context holds 2048 positions (one
// 30 s window is 750 Qwen2-Audio tokens).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "llama.h"
#include "mtmd.h"
#include "mtmd-helper.h"
#include "clip.h"
#include "clip-impl.h"
#include "clip-model.h"
#include "mtmd-image.h"

static void quiet(ggml_log_level level, const char *text, void *) { if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr); }

// With MTMD_DUMP_TENSORS set, every tensor the encoder computes is printed
// to stderr (name, shape, sum, first values): for finding where two
// implementations part.
static bool trace(struct ggml_tensor *t, bool ask, void *) {
    if (ask) return true;
    if (t->type != GGML_TYPE_F32 || !ggml_is_contiguous(t)) return true;
    std::vector<float> v(ggml_nelements(t));
    ggml_backend_tensor_get(t, v.data(), 0, v.size() * 4);
    double sum = 0;
    for (float x : v) sum += x;
    fprintf(stderr, "%s [%lld %lld %lld] sum %.9g first", t->name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], sum);
    for (size_t i = 0; i < v.size() && i < 4; i++) fprintf(stderr, " %.9g", v[i]);
    fprintf(stderr, "\n");
    return true;
}

static std::string base64(const unsigned char *p, size_t n) {
    static const char *tab = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = p[i] << 16 | (i + 1 < n ? p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        out += tab[v >> 18 & 63];
        out += tab[v >> 12 & 63];
        out += i + 1 < n ? tab[v >> 6 & 63] : '=';
        out += i + 2 < n ? tab[v & 63] : '=';
    }
    return out;
}

static void print_row(const float *x, int n) {
    printf("[");
    for (int j = 0; j < n; j++) printf("%s%.9g", j ? "," : "", x[j]);
    printf("]");
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s TEXT.gguf MMPROJ.gguf IMAGE PROMPT\n", argv[0]);
        return 2;
    }
    llama_log_set(quiet, nullptr);
    mtmd_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model *model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    mtmd_context_params mp = mtmd_context_params_default();
    mp.use_gpu = false;
    mp.n_threads = 1;
    mp.print_timings = false;
    mp.warmup = false;
    mp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    if (getenv("MTMD_DUMP_TENSORS")) mp.cb_eval = trace;
    mtmd_context *mctx = mtmd_init_from_file(argv[2], model, mp);
    if (!mctx) { fprintf(stderr, "cannot load %s\n", argv[2]); return 1; }
    mtmd_helper_bitmap_wrapper bw = mtmd_helper_bitmap_init_from_file(mctx, argv[3], false);
    if (!bw.bitmap) { fprintf(stderr, "cannot read %s\n", argv[3]); return 1; }
    int nx = mtmd_bitmap_get_nx(bw.bitmap), ny = mtmd_bitmap_get_ny(bw.bitmap);
    const bool audio = mtmd_bitmap_is_audio(bw.bitmap);

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = audio ? 2048 : 512;
    cp.n_batch = cp.n_ubatch = 512;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    llama_context *lctx = llama_init_from_model(model, cp);
    if (!lctx) { fprintf(stderr, "cannot make a context\n"); return 1; }

    // The preprocessed tiles, by mtmd's own preprocessor for this
    // projector (fixed size: Gemma 3; dyn size: Pixtral; llava-uhd slices
    // for Idefics3 and LLaVA-NeXT), over a second load of the projector;
    // none for audio.
    int S = 0, SH = 0;
    std::vector<float> chw;
    clip_init_result cr = {};
    bool sliced = false;
    mtmd_image_preproc_out po;
    std::vector<const clip_image_f32 *> tiles;
    auto chw_of = [](const clip_image_f32 &f) {
        const std::vector<float> &hwc = f.get_ro_buf();
        std::vector<float> chw(hwc.size());
        for (int i = 0; i < f.nx() * f.ny(); i++)
            for (int c = 0; c < 3; c++) chw[(size_t)c * f.nx() * f.ny() + i] = hwc[(size_t)i * 3 + c];
        return chw;
    };
    if (!audio) {
        clip_context_params ccp = {};
        ccp.use_gpu = false;
        ccp.flash_attn_type = CLIP_FLASH_ATTN_TYPE_DISABLED;
        ccp.image_min_tokens = -1;
        ccp.image_max_tokens = -1;
        ccp.warmup = false;
        cr = clip_init(argv[2], ccp);
        if (!cr.ctx_v) { fprintf(stderr, "clip_init failed\n"); return 1; }
        clip_image_u8 u8;
        u8.set_size({nx, ny}, false);
        const unsigned char *rgb = mtmd_bitmap_get_data(bw.bitmap);
        u8.cpy_buf(std::vector<uint8_t>(rgb, rgb + (size_t)nx * ny * 3));
        const projector_type pt = clip_get_projector_type(cr.ctx_v);
        // llava-uhd slices over the projector's resolution candidates, as
        // mtmd.cpp picks them: LLaVA-NeXT's legacy mmproj (mlp with
        // pinpoints) and Llama 4 (clip.cpp's 1..3 × 1..3 tile grids).
        const bool uhd = (pt == PROJECTOR_TYPE_MLP && !clip_get_hparams(cr.ctx_v)->image_res_candidates.empty()) ||
                         pt == PROJECTOR_TYPE_LLAMA4;
        sliced = pt == PROJECTOR_TYPE_IDEFICS3 || pt == PROJECTOR_TYPE_INTERNVL || uhd;
        if (pt == PROJECTOR_TYPE_IDEFICS3) {
            mtmd_image_preprocessor_idefics3 pre(cr.ctx_v);
            po = pre.preprocess(u8);
        } else if (pt == PROJECTOR_TYPE_INTERNVL) {
            // InternVL: llava-uhd slices over its own grid candidates, the
            // overview last (mtmd_image_preprocessor_internvl).
            mtmd_image_preprocessor_internvl pre(cr.ctx_v);
            po = pre.preprocess(u8);
        } else if (uhd) {
            mtmd_image_preprocessor_llava_uhd pre(cr.ctx_v);
            po = pre.preprocess(u8);
        } else if (pt == PROJECTOR_TYPE_PIXTRAL || pt == PROJECTOR_TYPE_QWEN2VL || pt == PROJECTOR_TYPE_QWEN25VL ||
                   pt == PROJECTOR_TYPE_QWEN3VL) {
            // Projectors of native image size resize to patch multiples
            // (mtmd_image_preprocessor_dyn_size, as mtmd.cpp picks it).
            mtmd_image_preprocessor_dyn_size pre(cr.ctx_v);
            po = pre.preprocess(u8);
        } else {
            mtmd_image_preprocessor_fixed_size pre(cr.ctx_v);
            po = pre.preprocess(u8);
        }
        if (!sliced && po.entries.size() != 1) { fprintf(stderr, "%zu preprocessed entries\n", po.entries.size()); return 1; }
        // The tiles in the prompt's order: the slices row by row, then the
        // overview (Idefics3, InternVL, LLaVA-NeXT and Llama 4 put it last), each [3][H][W]
        // channel-major.
        for (const auto &e : po.entries) tiles.push_back(&e);
        if (sliced && po.overview.nx() > 0) tiles.push_back(&po.overview);
        S = tiles[0]->nx();
        SH = tiles[0]->ny();
        chw = chw_of(*tiles[0]);
    }

    mtmd_input_chunks *chunks = mtmd_input_chunks_init();
    mtmd_input_text text = {argv[4], strlen(argv[4]), true, true};
    const mtmd_bitmap *bitmaps[] = {bw.bitmap};
    if (mtmd_tokenize(mctx, chunks, &text, bitmaps, 1) != 0) { fprintf(stderr, "mtmd_tokenize failed\n"); return 1; }

    int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    int n_embd = llama_model_n_embd_inp(model);
    std::vector<int> tokens;
    std::vector<float> embd;
    std::vector<std::pair<int, std::vector<float>>> logits;
    llama_pos n_past = 0;
    bool after_image = false;
    for (size_t ci = 0; ci < mtmd_input_chunks_size(chunks); ci++) {
        const mtmd_input_chunk *ch = mtmd_input_chunks_get(chunks, ci);
        if (mtmd_input_chunk_get_type(ch) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
            size_t n = 0;
            const llama_token *ids = mtmd_input_chunk_get_tokens_text(ch, &n);
            llama_batch b = llama_batch_init(n, 0, 1);
            for (size_t i = 0; i < n; i++) {
                b.token[i] = ids[i]; b.pos[i] = n_past + i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1;
                tokens.push_back(ids[i]);
            }
            b.n_tokens = n;
            if (llama_decode(lctx, b) != 0) { fprintf(stderr, "llama_decode failed\n"); return 1; }
            for (size_t i = 0; i < n; i++) {
                if (!after_image) continue;
                const float *l = llama_get_logits_ith(lctx, i);
                logits.push_back({(int)(tokens.size() - n + i), std::vector<float>(l, l + n_vocab)});
            }
            n_past += n;
            llama_batch_free(b);
        } else {
            if (mtmd_encode_chunk(mctx, ch) != 0) { fprintf(stderr, "mtmd_encode_chunk failed\n"); return 1; }
            size_t n = mtmd_input_chunk_get_n_tokens(ch);
            float *e = mtmd_get_output_embd(mctx);
            embd.insert(embd.end(), e, e + n * n_embd); // every image chunk in turn
            llama_pos np = 0;
            if (mtmd_helper_decode_image_chunk(mctx, lctx, ch, e, n_past, 0, 512, &np, nullptr, nullptr) != 0) {
                fprintf(stderr, "decode image failed\n"); return 1;
            }
            for (size_t i = 0; i < n; i++) tokens.push_back(-1);
            n_past = np;
            after_image = true;
        }
    }

    if (audio) printf("{\"audio\":true,\"samples\":%d,", nx);
    else printf("{");
    printf("\"image_width\":%d,\"image_height\":%d,\"tile\":%d,\"tile_height\":%d,\"pixels\":\"%s\",\"tokens\":[", nx, ny, S, SH,
           base64((const unsigned char *)chw.data(), chw.size() * 4).c_str());
    for (size_t i = 0; i < tokens.size(); i++) printf("%s%d", i ? "," : "", tokens[i]);
    printf("]");
    if (sliced) {
        printf(",\"grid\":[%d,%d],\"tiles\":[", po.grid_y, po.grid_x);
        for (size_t i = 0; i < tiles.size(); i++) {
            std::vector<float> t = chw_of(*tiles[i]);
            printf("%s\"%s\"", i ? "," : "", base64((const unsigned char *)t.data(), t.size() * 4).c_str());
        }
        printf("]");
    }
    printf(",\"image_embd\":[");
    for (size_t i = 0; i < embd.size() / n_embd; i++) { printf("%s", i ? "," : ""); print_row(&embd[i * n_embd], n_embd); }
    printf("],\"logits\":{");
    for (size_t i = 0; i < logits.size(); i++) {
        printf("%s\"%d\":", i ? "," : "", logits[i].first);
        print_row(logits[i].second.data(), n_vocab);
    }
    printf("}}\n");
    mtmd_input_chunks_free(chunks);
    mtmd_bitmap_free(bw.bitmap);
    if (cr.ctx_v) clip_free(cr.ctx_v);
    mtmd_free(mctx);
    llama_free(lctx);
    llama_model_free(model);
    return 0;
}
