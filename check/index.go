package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"slices"

	"github.com/tfconv/tfconv/formats/shardindex"
)

// maxIndexLen caps the index file read into memory, as the readers do.
const maxIndexLen = shardindex.MaxLen

// checkIndex checks a model.safetensors.index.json, then each shard it
// names, then that the weight_map and the shards agree.
func checkIndex(r *Report, path string) error {
	f, size, err := r.openFile(path)
	if err != nil {
		return err
	}
	if size > maxIndexLen {
		f.Close()
		r.add("idx-json", path, 0, "", "index file is %d bytes, above the limit of %d", size, maxIndexLen)
		return nil
	}
	buf, err := io.ReadAll(io.LimitReader(f, maxIndexLen+1))
	f.Close()
	if err != nil {
		r.add("io-error", path, -1, "", "%v", err)
		return nil
	}
	weightMap, order, ok := walkIndex(r, path, buf)
	if !ok {
		return nil
	}
	var shards []string
	for _, name := range order {
		shard := weightMap[name]
		if !shardindex.PlainName(shard) {
			r.add("idx-shard-name", path, -1, tensorItem(name), "shard %q is not a plain file name in the index's folder", shard)
			delete(weightMap, name)
			continue
		}
		if !slices.Contains(shards, shard) {
			shards = append(shards, shard)
		}
	}
	slices.Sort(shards)
	holder := map[string]string{}
	var all []placedInfo
	for _, shard := range shards {
		p := r.beside(path, shard)
		names, infos, err := checkSafetensorsFile(r, p)
		all = append(all, placed(p, infos)...)
		if errors.Is(err, fs.ErrNotExist) {
			r.add("idx-missing-shard", path, -1, "shard "+quote(shard), "does not exist")
			for name, s := range weightMap {
				if s == shard {
					delete(weightMap, name)
				}
			}
			continue
		}
		if err != nil {
			return err
		}
		for _, name := range names {
			if prev, dup := holder[name]; dup {
				r.add("dup-tensor-name", p, -1, tensorItem(name), "also in %s", prev)
				continue
			}
			holder[name] = shard
			want, listed := weightMap[name]
			switch {
			case !listed:
				r.add("idx-unlisted-tensor", p, -1, tensorItem(name), "in shard %s but not in weight_map", shard)
			case want != shard:
				r.add("idx-unlisted-tensor", p, -1, tensorItem(name), "in shard %s but weight_map says %s", shard, want)
			}
		}
	}
	for _, name := range order {
		shard, ok := weightMap[name]
		if !ok {
			continue
		}
		if holder[name] != shard {
			r.add("idx-missing-tensor", path, -1, tensorItem(name), "weight_map says shard %s, which does not hold it", shard)
		}
	}
	checkInt8Scales(r, all)
	return nil
}

// walkIndex reads the index JSON: weight_map (tensor → shard, and the
// tensors in file order); other keys are skipped.
func walkIndex(r *Report, path string, buf []byte) (map[string]string, []string, bool) {
	w := &jsonWalk{r: r, file: path, rule: "idx-json"}
	w.dec = json.NewDecoder(bytes.NewReader(buf))
	w.dec.UseNumber()
	t, err := w.token()
	if err != nil {
		return nil, nil, false
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		r.add("idx-json", path, 0, "", "index is %s, not an object", describe(t))
		return nil, nil, false
	}
	var weightMap map[string]string
	var order []string
	for w.dec.More() {
		at := w.pos()
		t, err := w.token()
		if err != nil {
			return nil, nil, false
		}
		key, _ := t.(string)
		v, err := w.token()
		if err != nil {
			return nil, nil, false
		}
		if key != "weight_map" || weightMap != nil {
			if key == "weight_map" {
				r.add("idx-json", path, at, keyItem(key), "appears twice")
			}
			if err := w.skip(v, 1); err != nil {
				return nil, nil, false
			}
			continue
		}
		if d, ok := v.(json.Delim); !ok || d != '{' {
			r.add("idx-json", path, at, keyItem(key), "is %s, not an object", describe(v))
			return nil, nil, false
		}
		weightMap = map[string]string{}
		for w.dec.More() {
			at := w.pos()
			t, err := w.token()
			if err != nil {
				return nil, nil, false
			}
			name, _ := t.(string)
			v, err := w.token()
			if err != nil {
				return nil, nil, false
			}
			shard, ok := v.(string)
			if !ok {
				r.add("idx-json", path, at, tensorItem(name), "shard is %s, not a string", describe(v))
				if err := w.skip(v, 2); err != nil {
					return nil, nil, false
				}
				continue
			}
			if _, dup := weightMap[name]; dup {
				r.add("dup-tensor-name", path, at, tensorItem(name), "appears twice in weight_map")
				continue
			}
			weightMap[name] = shard
			order = append(order, name)
		}
		if _, err := w.token(); err != nil {
			return nil, nil, false
		}
	}
	if _, err := w.token(); err != nil {
		return nil, nil, false
	}
	if w.dec.More() {
		r.add("idx-json", path, w.pos(), "", "text after the index object")
		return nil, nil, false
	}
	if weightMap == nil {
		r.add("idx-json", path, 0, "", `index has no "weight_map"`)
		return nil, nil, false
	}
	return weightMap, order, true
}
