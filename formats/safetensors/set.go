package safetensors

import (
	"github.com/tfconv/tfconv/formats/shardindex"
)

// Conventional file names of a Hugging Face checkpoint folder.
const (
	SingleName = "model.safetensors"
	IndexName  = "model" + IndexSuffix
	// AdapterName holds a PEFT adapter's weights (beside adapter_config.json).
	AdapterName = "adapter_model.safetensors"
)

// FolderNames are the files a folder's checkpoint is looked for in, in the
// order transformers looks: the single file, then the index.
var FolderNames = []string{SingleName, IndexName}

// Set is a checkpoint: one safetensors file, or the shards listed by an
// index file (model-00001-of-N first); its Tensors are every tensor of
// every shard, in shard order, then data-offset order. The opening, the
// index checks and the lookups are shardindex.Set's, which the pytorch
// format shares.
type Set = shardindex.Set[*File, Tensor]

// Index is a parsed shard index (model.safetensors.index.json).
type Index = shardindex.Index

// format is safetensors to shardindex.OpenSet.
var format = shardindex.Format[*File, Tensor]{
	Name:        "safetensors",
	Folder:      FolderNames,
	Open:        Open,
	FileTensors: func(f *File) []Tensor { return f.Tensors },
	TensorName:  func(t *Tensor) string { return t.Name },
}

// OpenSet opens a checkpoint. path is a .safetensors file, an index .json
// file, or a directory holding model.safetensors or (failing that)
// model.safetensors.index.json, the order in which transformers looks.
func OpenSet(path string) (*Set, error) { return shardindex.OpenSet(path, format) }

// OpenShards opens the shards idx lists, each with open (given its name in
// the weight map; local files or HTTP), and checks that they hold what the
// weight map says. An open error matching fs.ErrNotExist is a missing
// shard; others are returned as they are (a shard's own error names its
// file). Dir is left empty.
func OpenShards(idx *Index, open func(shard string) (*File, error)) (*Set, error) {
	return shardindex.OpenShards(idx, format, open)
}
