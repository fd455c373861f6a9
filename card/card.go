// Package card writes the Hugging Face Hub model card of a folder of
// quantizations (a GGUF repository as people publish them): YAML front
// matter the Hub reads (base_model, base_model_relation, quantized_by,
// license, library_name, pipeline_tag, tags), the table of files with type,
// size and bits per weight (and KL divergence and perplexity from tfconv
// verify reports when given), the chat template, and how each file was made.
package card

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/internal/output"
)

// Options say what the files do not: each empty field is read from the
// GGUF metadata where it can be (general.base_model.*, general.license,
// general.quantized_by).
type Options struct {
	BaseModel   string   // Hub id of the model quantized ("Qwen/Qwen2.5-0.5B-Instruct")
	QuantizedBy string   // who made the files
	License     string   // SPDX-like license id the Hub knows ("apache-2.0")
	Tags        []string // extra tags
	// Verify are tfconv verify --json reports; a report whose candidate is
	// one of the files gives that file's KL divergence and perplexity.
	Verify []string
	// Version is the tfconv version written into the card.
	Version string
	Force   bool // replace an existing README.md
}

// File is one row of the card's table.
type File struct {
	Name     string  `json:"name"`
	Type     string  `json:"type"` // general.file_type as llama.h names it ("Q4_K_M"), or the prevalent dtype
	Bytes    int64   `json:"bytes"`
	BPW      float64 `json:"bits_per_weight"`
	Params   int64   `json:"params"`
	Imatrix  string  `json:"imatrix,omitempty"` // quantize.imatrix.file
	Mmproj   bool    `json:"mmproj,omitempty"`
	KLD      float64 `json:"kld,omitempty"` // mean KL divergence from the verify reference
	PPL      float64 `json:"ppl,omitempty"` // the candidate's perplexity in that report
	RefName  string  `json:"kld_reference,omitempty"`
	Shards   int     `json:"shards,omitempty"`
	template string
}

// Card is what Write wrote.
type Card struct {
	Path         string   `json:"path"`
	BaseModel    string   `json:"base_model"`
	License      string   `json:"license"`
	QuantizedBy  string   `json:"quantized_by"`
	Architecture string   `json:"architecture"`
	Tags         []string `json:"tags"`
	Files        []File   `json:"files"`
	ChatTemplate bool     `json:"chat_template"`
	Replaced     bool     `json:"replaced,omitempty"`
}

// splitShard matches a gguf-split shard name ("m-00002-of-00003.gguf").
var splitShard = regexp.MustCompile(`^(.*)-(\d{5})-of-(\d{5})\.gguf$`)

// Write reads every GGUF in dir (a split set counts once, by its first
// shard) and writes dir/README.md, refusing to replace one without
// o.Force.
func Write(dir string, o Options) (*Card, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("card: %w", err)
	}
	dst := filepath.Join(dir, "README.md")
	_, statErr := os.Stat(dst)
	existed := statErr == nil
	if existed && !o.Force {
		return nil, fmt.Errorf("card: %s: %w", dst, atomicfile.ErrExists)
	}
	c := &Card{Path: dst, BaseModel: o.BaseModel, License: o.License, QuantizedBy: o.QuantizedBy, Replaced: existed}
	shards := map[string]int{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(strings.ToLower(name), ".gguf") {
			continue
		}
		if m := splitShard.FindStringSubmatch(name); m != nil {
			if m[2] != "00001" {
				shards[m[1]]++
				continue
			}
			shards[m[1]]++
		}
		f, md, err := readFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		if f.Type == "" {
			continue // an imatrix or adapter GGUF is not a model file
		}
		c.Files = append(c.Files, f)
		c.fill(md, f)
	}
	if len(c.Files) == 0 {
		return nil, fmt.Errorf("card: %s: no model GGUF files", dir)
	}
	for i := range c.Files {
		if m := splitShard.FindStringSubmatch(c.Files[i].Name); m != nil {
			c.Files[i].Shards = shards[m[1]]
			for n := 2; n <= shards[m[1]]; n++ {
				if st, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%s-%05d-of-%s.gguf", m[1], n, m[3]))); err == nil {
					c.Files[i].Bytes += st.Size()
				}
			}
		}
	}
	for _, v := range o.Verify {
		if err := c.addVerify(v); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(c.Files, func(i, j int) bool {
		if c.Files[i].Mmproj != c.Files[j].Mmproj {
			return !c.Files[i].Mmproj
		}
		return c.Files[i].Bytes < c.Files[j].Bytes
	})
	c.Tags = append([]string{"gguf", "tfconv"}, o.Tags...)
	if c.Architecture != "" {
		c.Tags = append(c.Tags, c.Architecture)
	}
	if c.BaseModel != "" {
		c.Tags = append(c.Tags, "base_model:quantized:"+c.BaseModel)
	}
	text := c.render(o.Version)
	out, err := atomicfile.Create(dst, o.Force)
	if err != nil {
		return nil, fmt.Errorf("card: %w", err)
	}
	if _, err := out.WriteString(text); err != nil {
		out.Abort()
		return nil, fmt.Errorf("card: %s: %w", dst, err)
	}
	if err := out.Commit(); err != nil {
		return nil, fmt.Errorf("card: %s: %w", dst, err)
	}
	return c, nil
}

// readFile summarizes one GGUF.
func readFile(path string) (File, map[string]any, error) {
	ck, err := checkpoint.Open(path)
	if err != nil {
		return File{}, nil, err
	}
	defer ck.Close()
	s, err := checkpoint.Summarize(ck)
	if err != nil {
		return File{}, nil, err
	}
	md := map[string]any{}
	for _, kv := range ck.Metadata {
		if v, ok := kv.Value.Str(); ok {
			md[kv.Key] = v
		}
	}
	f := File{Name: filepath.Base(path), Bytes: s.FileSize, BPW: s.BitsPerWeight, Params: s.Params}
	switch s.Type {
	case "imatrix", "adapter":
		return File{}, nil, nil
	case "mmproj":
		f.Mmproj = true
	}
	f.Type = s.FileType
	if f.Type == "" && len(s.DTypes) > 0 {
		f.Type = s.DTypes[0].DType
	}
	f.Imatrix, _ = md["quantize.imatrix.file"].(string)
	f.template, _ = md["tokenizer.chat_template"].(string)
	md["general.architecture"] = s.Architecture
	return f, md, nil
}

// fill takes what the options left empty from a file's metadata.
func (c *Card) fill(md map[string]any, f File) {
	str := func(k string) string { v, _ := md[k].(string); return v }
	if c.Architecture == "" && !f.Mmproj {
		c.Architecture = str("general.architecture")
	}
	if c.BaseModel == "" {
		c.BaseModel = hubID(str("general.base_model.0.repo_url"))
		if c.BaseModel == "" && str("general.base_model.0.organization") != "" && str("general.base_model.0.name") != "" {
			c.BaseModel = str("general.base_model.0.organization") + "/" + str("general.base_model.0.name")
		}
	}
	if c.License == "" {
		c.License = str("general.license")
	}
	if c.QuantizedBy == "" {
		c.QuantizedBy = str("general.quantized_by")
	}
}

// hubID is ORG/NAME of a https://huggingface.co/ORG/NAME address ("" for
// another).
func hubID(url string) string {
	const p = "https://huggingface.co/"
	if !strings.HasPrefix(url, p) {
		return ""
	}
	parts := strings.Split(strings.Trim(strings.TrimPrefix(url, p), "/"), "/")
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return ""
	}
	return parts[0] + "/" + parts[1]
}

// addVerify reads one tfconv verify --json report.
func (c *Card) addVerify(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("card: verify report %s: %w", path, err)
		}
		return fmt.Errorf("card: %w", err)
	}
	var r struct {
		Ref  string `json:"ref"`
		Cand string `json:"cand"`
		KLD  *struct {
			Mean float64 `json:"mean"`
		} `json:"kld"`
		PPL *struct {
			Cand float64 `json:"cand"`
		} `json:"ppl"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("card: verify report %s: %w", path, err)
	}
	if r.Cand == "" || r.KLD == nil {
		return fmt.Errorf("card: verify report %s: no cand and kld (a tfconv verify --json report?)", path)
	}
	for i := range c.Files {
		if c.Files[i].Name == filepath.Base(r.Cand) {
			c.Files[i].KLD, c.Files[i].RefName = r.KLD.Mean, filepath.Base(r.Ref)
			if r.PPL != nil {
				c.Files[i].PPL = r.PPL.Cand
			}
			return nil
		}
	}
	return fmt.Errorf("card: verify report %s: its candidate %s is not among the files", path, filepath.Base(r.Cand))
}

// yamlString is s as a YAML double-quoted scalar (JSON's escaping is
// YAML's).
func yamlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (c *Card) render(version string) string {
	var b strings.Builder
	b.WriteString("---\n")
	if c.BaseModel != "" {
		fmt.Fprintf(&b, "base_model: %s\nbase_model_relation: quantized\n", yamlString(c.BaseModel))
	}
	if c.QuantizedBy != "" {
		fmt.Fprintf(&b, "quantized_by: %s\n", yamlString(c.QuantizedBy))
	}
	if c.License != "" {
		fmt.Fprintf(&b, "license: %s\n", yamlString(c.License))
	}
	b.WriteString("library_name: gguf\npipeline_tag: text-generation\ntags:\n")
	for _, t := range c.Tags {
		fmt.Fprintf(&b, "- %s\n", yamlString(t))
	}
	b.WriteString("---\n\n")
	title := c.BaseModel
	if title == "" {
		title = strings.TrimSuffix(c.Files[0].Name, filepath.Ext(c.Files[0].Name))
	}
	fmt.Fprintf(&b, "# %s — GGUF\n\n", title)
	if c.BaseModel != "" {
		fmt.Fprintf(&b, "GGUF files of [%s](https://huggingface.co/%s) for llama.cpp and the tools built on it", c.BaseModel, c.BaseModel)
	} else {
		b.WriteString("GGUF files for llama.cpp and the tools built on it")
	}
	if c.Architecture != "" {
		fmt.Fprintf(&b, " (architecture `%s`)", c.Architecture)
	}
	b.WriteString(".\n\n")
	withKLD := false
	for _, f := range c.Files {
		withKLD = withKLD || f.RefName != ""
	}
	b.WriteString("| File | Type | Size | Bits per weight |")
	if withKLD {
		b.WriteString(" KLD | PPL |")
	}
	b.WriteString("\n|---|---|---|---|")
	if withKLD {
		b.WriteString("---|---|")
	}
	b.WriteString("\n")
	for _, f := range c.Files {
		name := f.Name
		if f.Shards > 1 {
			name += fmt.Sprintf(" (%d shards)", f.Shards)
		}
		typ := f.Type
		if f.Imatrix != "" {
			typ += " (imatrix)"
		}
		if f.Mmproj {
			typ = "mmproj " + typ
		}
		fmt.Fprintf(&b, "| [%s](./%s) | %s | %s | %.2f |", name, f.Name, typ, output.Bytes(f.Bytes), f.BPW)
		if withKLD {
			if f.RefName != "" {
				ppl := "–"
				if f.PPL > 0 {
					ppl = strconv.FormatFloat(f.PPL, 'f', 4, 64)
				}
				fmt.Fprintf(&b, " %.6f | %s |", f.KLD, ppl)
			} else {
				b.WriteString(" – | – |")
			}
		}
		b.WriteString("\n")
	}
	if withKLD {
		refs := map[string]bool{}
		var names []string
		for _, f := range c.Files {
			if f.RefName != "" && !refs[f.RefName] {
				refs[f.RefName] = true
				names = append(names, "`"+f.RefName+"`")
			}
		}
		fmt.Fprintf(&b, "\nKLD is the mean KL divergence of each file's next-token distribution from %s's, and PPL the file's perplexity, on the same tokens (`tfconv verify`).\n", strings.Join(names, ", "))
	}
	var template string
	for _, f := range c.Files {
		if f.template != "" && !f.Mmproj {
			template = f.template
			break
		}
	}
	c.ChatTemplate = template != ""
	if template != "" {
		fence := "```"
		for strings.Contains(template, fence) {
			fence += "`"
		}
		fmt.Fprintf(&b, "\n## Chat template\n\nThe files carry this template (`tokenizer.chat_template`); `tfconv generate --chat` and llama.cpp apply it.\n\n%sjinja\n%s\n%s\n", fence, strings.TrimRight(template, "\n"), fence)
	}
	b.WriteString("\n## How these files were made\n\n")
	v := version
	if v == "" {
		v = "tfconv"
	} else {
		v = "tfconv " + v
	}
	fmt.Fprintf(&b, "Card written by %s (`tfconv card`). Each quantized file is the full-precision GGUF quantized to its type; these commands make them again (`tfconv quantize` writes llama-quantize's bytes, `tfconv convert` convert_hf_to_gguf.py's):\n\n```sh\n", v)
	src := ""
	for _, f := range c.Files {
		if !f.Mmproj && !isQuant(f.Type) && (src == "" || f.Type == "F16" || f.Type == "BF16") {
			src = f.Name
		}
	}
	if src == "" || c.BaseModel != "" {
		if src == "" {
			src = "MODEL-F16.gguf"
		}
		hf := "./MODEL"
		if c.BaseModel != "" {
			hf = "./" + c.BaseModel[strings.LastIndex(c.BaseModel, "/")+1:]
		}
		fmt.Fprintf(&b, "tfconv convert %s %s --outtype f16\n", hf, src)
	}
	for _, f := range c.Files {
		if f.Mmproj || !isQuant(f.Type) {
			continue
		}
		cmd := fmt.Sprintf("tfconv quantize %s %s --type %s", src, f.Name, strings.ToLower(f.Type))
		if f.Imatrix != "" {
			cmd += " --imatrix " + f.Imatrix
		}
		b.WriteString(cmd + "\n")
	}
	b.WriteString("```\n")
	return b.String()
}

// isQuant reports whether a file type is a quantization (not a float).
func isQuant(t string) bool {
	switch strings.ToUpper(t) {
	case "", "F32", "F16", "BF16", "ALL_F32", "MOSTLY_F16", "MOSTLY_BF16":
		return false
	}
	return true
}
