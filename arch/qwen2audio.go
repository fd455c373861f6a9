package arch

import "github.com/tfconv/tfconv/tensor"

// Qwen2Audio is Qwen2-Audio's projector (Qwen2AudioForConditionalGeneration)
// as llama.cpp's WhisperEncoderModel writes it (clip.projector_type
// "qwen2a"): a Whisper encoder over a 30 s log-mel window (two GELU
// convolutions, the second of stride 2, learned positions, pre-norm
// blocks with LayerNorm and GELU, the states average-pooled by 2, a final
// LayerNorm) and one linear map to the text width. The text half is the
// qwen2 family. It is the one audio model: llama.cpp d32676d7
// converts both its halves from the one Hugging Face class (Ultravox's
// converter has no text model, Voxtral's text half wants Mistral's Tekken
// files) and transformers v4.57.6 has the class (testdata/vision/README.md).
var Qwen2Audio = registerProjector(&Projector{
	Type:        "qwen2a",
	HFClasses:   []string{"Qwen2AudioForConditionalGeneration"},
	Text:        "qwen2",
	Encoder:     "audio_config",
	Prefixes:    qwen2AudioPrefixes,
	Summary:     "Whisper encoder (2 convolutions, positions, LayerNorm blocks, 2× average pool); linear",
	HFModelType: "qwen2_audio", TextModelType: "qwen2",
	TokenKeys: []TokenKey{{"audio_token_index", "<|AUDIO|>"}},
	// Qwen/Qwen2-Audio-7B-Instruct's preprocessor_config.json (the
	// WhisperFeatureExtractor): GGUF → HF writes it as published.
	Preprocessor: map[string]any{"chunk_length": 30, "feature_extractor_type": "WhisperFeatureExtractor",
		"feature_size": 128, "hop_length": 160, "n_fft": 400, "n_samples": 480000, "nb_max_frames": 3000,
		"padding_side": "right", "padding_value": 0.0, "processor_class": "Qwen2AudioProcessor",
		"return_attention_mask": true, "sampling_rate": 16000},
	Tower: Family{
		Name: MmprojArch,
		// Whisper's config names its heads and layers for the encoder.
		HeadKeys:  []string{"encoder_attention_heads", "num_attention_heads"},
		LayerKeys: []string{"encoder_layers", "num_hidden_layers"},
		// Written on GGUF → HF: the encoder's class, its activation, and
		// its 1500 positions (30 s of frames halved by conv2: the length
		// the encoder insists on, so every Qwen2-Audio has it).
		HFConst: map[string]any{"model_type": "qwen2_audio_encoder", "activation_function": "gelu",
			"max_source_positions": 1500, "scale_embedding": false},
		Params: withParams(mmprojAudioParams(),
			constString("projector_type", "qwen2a"),
			u32("audio.num_mel_bins", Required, "num_mel_bins"),
			Param{Key: "audio.attention.layer_norm_epsilon", HF: []string{"layer_norm_eps"}, Kind: tensor.KindFloat32,
				Need: Default, Default: 1e-5},
		),
		Tensors: whisperTensors("audio_tower.", []Tensor{
			// "audio." is the converter's prefix against a vision
			// projector's names.
			{GGUF: "mm.a.fc", HF: []string{"multi_modal_projector.linear"}},
		}),
		// WhisperEncoderModel.tensor_force_quant: the convolution kernels
		// are F16 at every outtype (their biases stay F32).
		F16: []Role{"a.conv1d.{bid}"},
	},
})

// mmprojAudioParams are MmprojModel.set_gguf_parameters' keys for an audio
// encoder, in its order (general.file_type first), before the subclass's.
// Whisper's config names come first: GGUF → HF writes them (the converter
// reads hidden_size … when a config has them, else Whisper's, the same
// values).
func mmprojAudioParams() []Param {
	return []Param{
		{Key: FileType},
		constBool("has_audio_encoder", true),
		{Key: "audio.projection_dim", Kind: tensor.KindUint32, Derive: fromText("hidden_size", "n_embd")},
		u32("audio.embedding_length", Required, "d_model", "hidden_size"),
		u32("audio.feed_forward_length", Required, "encoder_ffn_dim", "intermediate_size"),
		u32("audio.block_count", Required, "encoder_layers", "n_layers", "num_hidden_layers", "n_layer", "num_layers",
			"depth", "layers", "vt_num_hidden_layers"),
		u32("audio.attention.head_count", Required, "encoder_attention_heads", "num_attention_heads"),
	}
}

// whisperTensors are a Whisper encoder's tensors under prefix, as gguf-py's
// tensor map names them (A_ENC_*), then extra's. conv1 and conv2 are
// a.conv1d.1 and .2; their biases are columns ([n][1]) in the GGUF.
func whisperTensors(prefix string, extra []Tensor) []Tensor {
	l := prefix + "layers.{bid}."
	ts := []Tensor{
		{GGUF: "a.conv1d.1", HF: []string{prefix + "conv1"}, Reshape: ReshapeBiasColumn},
		{GGUF: "a.conv1d.2", HF: []string{prefix + "conv2"}, Reshape: ReshapeBiasColumn},
		{GGUF: "a.position_embd", HF: []string{prefix + "embed_positions"}},
		{GGUF: "a.post_ln", HF: []string{prefix + "layer_norm"}},
		{GGUF: "a.blk.{bid}.attn_q", HF: []string{l + "self_attn.q_proj"}},
		{GGUF: "a.blk.{bid}.attn_k", HF: []string{l + "self_attn.k_proj"}},
		{GGUF: "a.blk.{bid}.attn_v", HF: []string{l + "self_attn.v_proj"}},
		{GGUF: "a.blk.{bid}.attn_out", HF: []string{l + "self_attn.out_proj"}},
		{GGUF: "a.blk.{bid}.ln1", HF: []string{l + "self_attn_layer_norm"}},
		{GGUF: "a.blk.{bid}.ln2", HF: []string{l + "final_layer_norm"}},
		{GGUF: "a.blk.{bid}.ffn_up", HF: []string{l + "fc1"}},
		{GGUF: "a.blk.{bid}.ffn_down", HF: []string{l + "fc2"}},
	}
	return append(ts, extra...)
}

// qwen2AudioPrefixes are Qwen2Audio's Prefixes; qwen2AudioDrops its
// TextDrops, which the qwen2 family states.
var (
	qwen2AudioPrefixes = []string{"audio_tower.", "multi_modal_projector."}
	qwen2AudioDrops    = mmprojDrops(qwen2AudioPrefixes)
)
