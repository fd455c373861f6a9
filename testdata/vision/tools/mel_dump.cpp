// mel_dump: llama.cpp mtmd's audio front end on one file, for tfconv's tests (issue 33).
//
// Usage: mel_dump TEXT.gguf MMPROJ.gguf AUDIO [FRAMES]
//
// Loads the text model (llama.h) and the projector (mtmd.h), decodes AUDIO with mtmd's own helper
// (mtmd_helper_bitmap_init_from_file: miniaudio, one float32 channel at the projector's rate), runs the
// projector's Whisper preprocessor (mtmd_audio_preprocessor_whisper, whose symbols libmtmd exports) and prints
// JSON: the decoded sample count and the first window's mel as [n_mel][FRAMES] (default 48) plus the value of
// its last frame of bin 0, shortest round-trip float formatting.
#include "clip.h"
#include "llama.h"
#include "mtmd-audio.h"
#include "mtmd-helper.h"
#include "mtmd.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

static void print_float(float v) { printf("%.9g", v); }

int main(int argc, char ** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s TEXT.gguf MMPROJ.gguf AUDIO [FRAMES]\n", argv[0]);
        return 2;
    }
    int frames = argc > 4 ? atoi(argv[4]) : 48;
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    mtmd_context_params cp = mtmd_context_params_default();
    cp.use_gpu = false;
    cp.n_threads = 1;
    cp.print_timings = false;
    cp.warmup = false;
    mtmd_context * ctx = mtmd_init_from_file(argv[2], model, cp);
    if (!ctx) { fprintf(stderr, "cannot load %s\n", argv[2]); return 1; }
    mtmd_helper_bitmap_wrapper bw = mtmd_helper_bitmap_init_from_file(ctx, argv[3], false);
    if (!bw.bitmap || !mtmd_bitmap_is_audio(bw.bitmap)) { fprintf(stderr, "cannot read %s as audio\n", argv[3]); return 1; }
    const float * samples = (const float *) mtmd_bitmap_get_data(bw.bitmap);
    size_t n = mtmd_bitmap_get_n_bytes(bw.bitmap) / sizeof(float);

    clip_context_params clp = {};
    clp.use_gpu = false;
    clp.flash_attn_type = CLIP_FLASH_ATTN_TYPE_DISABLED;
    clp.image_min_tokens = -1;
    clp.image_max_tokens = -1;
    clp.warmup = false;
    clp.no_alloc = true;
    clip_init_result cr = clip_init(argv[2], clp);
    if (!cr.ctx_a) { fprintf(stderr, "%s has no audio encoder\n", argv[2]); return 1; }
    mtmd_audio_preprocessor_whisper pre(cr.ctx_a);
    pre.initialize();
    std::vector<mtmd_audio_mel> mels;
    if (!pre.preprocess(samples, n, mels) || mels.empty()) { fprintf(stderr, "preprocess failed\n"); return 1; }
    const mtmd_audio_mel & m = mels[0];
    printf("{\"samples\":%zu,\"windows\":%zu,\"n_mel\":%lld,\"n_len\":%lld,\"first\":[", n, mels.size(),
           (long long) m.n_mel, (long long) m.n_len);
    for (int i = 0; i < 8 && (size_t) i < n; i++) { if (i) printf(","); print_float(samples[i]); }
    printf("],\"last_frame_bin0\":");
    print_float(m.data[(size_t) m.n_len - 1]);
    printf(",\"frames\":%d,\"mel\":[", frames);
    for (int64_t b = 0; b < m.n_mel; b++) {
        printf(b ? ",[" : "[");
        for (int t = 0; t < frames && t < m.n_len; t++) { if (t) printf(","); print_float(m.data[(size_t) b * m.n_len + t]); }
        printf("]");
    }
    printf("]}\n");
    return 0;
}
