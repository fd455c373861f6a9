// Package shardindex reads the index of a sharded Hugging Face checkpoint
// (model.safetensors.index.json, pytorch_model.bin.index.json): a JSON
// object whose "weight_map" maps each tensor name to the shard file that
// holds it, beside an informative "metadata" object. Both shard formats
// (packages safetensors and pytorch) read their index here, so the file
// has one parser.
package shardindex
