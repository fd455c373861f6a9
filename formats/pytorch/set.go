package pytorch

import (
	"github.com/tfconv/tfconv/formats/shardindex"
)

// Conventional file names of a Hugging Face checkpoint folder saved with
// safe_serialization=False.
const (
	SingleName = "pytorch_model.bin"
	IndexName  = "pytorch_model.bin.index.json"
	// AdapterName holds a PEFT adapter's weights saved with
	// safe_serialization=False.
	AdapterName = "adapter_model.bin"
)

// Set is a checkpoint: one .bin file, or the shards an index lists (in
// sorted name order, …-00001-of-N first); its Tensors are in shard order,
// then each state dict's order. The opening, the index checks and the
// lookups are shardindex.Set's, which the safetensors format shares.
type Set = shardindex.Set[*File, Tensor]

// Index is a parsed shard index (pytorch_model.bin.index.json).
type Index = shardindex.Index

// format is PyTorch's .bin to shardindex.OpenSet.
var format = shardindex.Format[*File, Tensor]{
	Name:        "pytorch",
	Folder:      []string{SingleName, IndexName},
	Open:        Open,
	FileTensors: func(f *File) []Tensor { return f.Tensors },
	TensorName:  func(t *Tensor) string { return t.Name },
}

// OpenSet opens a checkpoint: a .bin file, an index .json file, or a
// directory holding pytorch_model.bin or (failing that)
// pytorch_model.bin.index.json, the order in which transformers looks.
func OpenSet(path string) (*Set, error) { return shardindex.OpenSet(path, format) }

// ReadIndex reads an index file (pytorch_model.bin.index.json).
func ReadIndex(path string) (*Index, error) { return shardindex.Read(path, "pytorch") }
