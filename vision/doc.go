// Package vision decodes images and turns them into the pixel tensors a
// vision tower reads, in the two ways the references do:
//
//   - llama.cpp's mtmd (d32676d7, tools/mtmd/mtmd-image.cpp): the image is
//     letterboxed into the tower's square (aspect kept, the resized image
//     centred on black, PAD_CEIL) with mtmd's own bilinear filter
//     (corner-aligned, no antialiasing, each channel truncated to u8), then
//     x/255 and (x−mean)/std in float32. This is what llama-mtmd-cli feeds
//     the tower for Gemma 3, and the default for GGUF inputs.
//   - transformers' slow Gemma3ImageProcessor (v4.57.6): the image is
//     stretched to the square (aspect not kept) with Pillow's BILINEAR
//     filter, which antialiases when it shrinks (its support widens with
//     the scale) and works in 8-bit fixed point (22 fractional bits, two
//     passes, horizontal first, each rounded to u8); then x·(1/255) in
//     float64, cast to float32, and (x−mean)/std in float32. This is what
//     pixel_values holds for a Hugging Face folder.
//
// The two differ on every image that is not already the tower's size: the
// filters differ (mtmd's samples 4 pixels, Pillow's averages over the
// shrink factor), and on non-square images mtmd pads where transformers
// stretches.
//
// Towers that tile the image have their own preprocessing beside
// Preprocess, each in both references' forms: Idefics3 (SmolVLM: tiles of
// the image resized towards its longest edge, and the whole image), CLIP
// (LLaVA-1.5: shortest edge and centre crop, or mtmd's letterbox) and
// AnyRes (LLaVA-NeXT: the best pinpoint's tiles and the whole image).
// Pillow's LANCZOS and BICUBIC (ResizePILFilter) and mtmd's bicubic
// (ResizeMtmdBicubic) join the two bilinear filters for them.
//
// Decoding uses Go's image packages (PNG, JPEG, GIF), no cgo. PNG decodes
// to the same bytes in Go, Pillow and stb_image; JPEG does not: FromImage
// upsamples the chroma as libjpeg (Pillow) and stb_image (llama.cpp) do,
// but the three decoders' inverse DCTs and colour conversions differ, so a
// JPEG's pixels may differ by a few levels from either reference. Neither is EXIF orientation applied here
// (transformers' load_image applies it, stb_image does not).
//
// Audio is the same for Whisper-style towers (Qwen2-Audio's qwen2a):
// DecodeWAV reads RIFF WAVE files (PCM 8/16/24/32-bit, float 32/64, any
// channels averaged to mono, as mtmd asks miniaudio for one float32
// channel), and WhisperMel computes mtmd's log-mel spectrogram
// (tools/mtmd/mtmd-audio.cpp: reflect-padded start, 30 s of zeros after,
// 400-point float32 FFT over a periodic Hann window, hop 160, Slaney mel
// filters, log10, clamped to max − 8, (x + 4)/4) in windows of 3000
// frames; it equals transformers' WhisperFeatureExtractor to 7.5e-5 on
// testdata/vision/audio/chirp.wav. Audio not at 16 kHz is refused: mtmd
// resamples it with miniaudio, which is not reproduced here yet.
// Qwen2AudioInput makes an audio encoder's input as either reference does
// (the feature extractor's one 30 s window attended over the clip's
// frames, or mtmd's every whole window attended whole), and ReadMedia
// tells a WAV file from an image by its content (run --image FILE.wav).
package vision
