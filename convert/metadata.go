package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/tensor"
)

// authorship is the general.* metadata convert_hf_to_gguf.py writes about a
// model (gguf-py's Metadata), "" or nil for what it leaves out. It comes,
// in order of precedence, from --model-name, the --metadata override file,
// config.json's _name_or_path and the source directory's name (a Hugging
// Face cache snapshot's repository id instead of its commit hash). The
// model card (README.md front matter), which the converter also reads, is
// not.
type authorship struct {
	name, author, version, organization, finetune, basename string
	description, quantizedBy, sizeLabel                     string
	license, licenseName, licenseLink                       string
	url, doi, uuid, repoURL                                 string
	sourceURL, sourceDOI, sourceUUID, sourceRepoURL         string
	baseModels, datasets                                    []map[string]string
	tags, languages                                         []string
	// lists say that baseModels and datasets were given (possibly empty):
	// the converter then writes a count of 0.
	hasBaseModels, hasDatasets bool
}

// The string-valued keys of a metadata override file, each with the field
// it sets, in the order the converter writes them (Metadata.set_gguf_meta_model).
func (m *authorship) stringKeys() []struct {
	key string
	p   *string
} {
	return []struct {
		key string
		p   *string
	}{
		{"general.name", &m.name}, {"general.author", &m.author}, {"general.version", &m.version},
		{"general.organization", &m.organization}, {"general.finetune", &m.finetune}, {"general.basename", &m.basename},
		{"general.description", &m.description}, {"general.quantized_by", &m.quantizedBy}, {"general.size_label", &m.sizeLabel},
		{"general.license", &m.license}, {"general.license.name", &m.licenseName}, {"general.license.link", &m.licenseLink},
		{"general.url", &m.url}, {"general.doi", &m.doi}, {"general.uuid", &m.uuid}, {"general.repo_url", &m.repoURL},
		{"general.source.url", &m.sourceURL}, {"general.source.doi", &m.sourceDOI}, {"general.source.uuid", &m.sourceUUID},
		{"general.source.repo_url", &m.sourceRepoURL},
	}
}

// entryKeys are the keys of a base model or dataset entry, in write order.
var entryKeys = []string{"name", "author", "version", "organization", "description", "url", "doi", "uuid", "repo_url"}

// MetadataKeys lists the keys a --metadata override file may set, as
// convert_hf_to_gguf.py's Metadata.load applies them.
func MetadataKeys() []string {
	var m authorship
	var out []string
	for _, k := range m.stringKeys() {
		out = append(out, k.key)
	}
	return append(out, "general.base_models", "general.datasets", "general.tags", "general.languages")
}

// kvs returns the keys as the converter writes them, in its order.
func (m *authorship) kvs() tensor.Metadata {
	var md tensor.Metadata
	for _, k := range m.stringKeys() {
		if *k.p != "" || k.key == keyName {
			md = append(md, tensor.KV{Key: k.key, Value: tensor.String(*k.p)})
		}
	}
	for _, l := range []struct {
		prefix  string
		has     bool
		entries []map[string]string
	}{{"general.base_model", m.hasBaseModels, m.baseModels}, {"general.dataset", m.hasDatasets, m.datasets}} {
		if !l.has {
			continue
		}
		md = append(md, tensor.KV{Key: l.prefix + ".count", Value: tensor.Uint32(uint32(len(l.entries)))})
		for i, e := range l.entries {
			for _, k := range entryKeys {
				if v, ok := e[k]; ok {
					md = append(md, tensor.KV{Key: fmt.Sprintf("%s.%d.%s", l.prefix, i, k), Value: tensor.String(v)})
				}
			}
		}
	}
	if m.tags != nil {
		md = append(md, tensor.KV{Key: "general.tags", Value: tensor.ArrayOf(m.tags)})
	}
	if m.languages != nil {
		md = append(md, tensor.KV{Key: "general.languages", Value: tensor.ArrayOf(m.languages)})
	}
	return md
}

// loadAuthorship is gguf-py's Metadata.load followed by the converter's
// fallbacks (prepare_metadata): totalParams is the parameter count of the
// tensors written (0 for --vocab-only), which decides whether a size in the
// name is the model's and, when none is, gives general.size_label (label).
func loadAuthorship(c *checkpoint.Checkpoint, cfg Config, opts Options, totalParams int64, label func() string) (*authorship, []string, error) {
	m := &authorship{}
	dir := sourceDir(c)
	// _name_or_path, when it is a model id and not a path of the machine
	// that saved the config.
	if id, ok := cfg.Str("_name_or_path"); ok && strings.Count(id, "/") <= 1 {
		m.fill(modelIDComponents(id, totalParams))
	}
	m.fill(modelIDComponents(dirModelID(dir), totalParams))
	if c.HubRepo != "" {
		// Read from the Hub: the repository, and the commit read as the
		// URL of its tree at that commit (gguf-py has no commit key).
		m.sourceRepoURL = c.HubRepo
		if c.HubCommit != "" {
			m.sourceURL = c.HubRepo + "/tree/" + c.HubCommit
		}
	}
	var warn []string
	if opts.MetadataFile != "" {
		w, err := m.override(opts.MetadataFile)
		if err != nil {
			return nil, nil, err
		}
		warn = w
	}
	if opts.ModelName != "" {
		m.name = opts.ModelName
	}
	if m.name == "" {
		m.name = filepath.Base(dir)
	}
	if m.sizeLabel == "" && totalParams > 0 {
		m.sizeLabel = label()
	}
	return m, warn, nil
}

// fill sets the fields a model id gives that are still unset.
func (m *authorship) fill(p idParts) {
	set := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	if p.full != "" {
		set(&m.name, idToTitle(p.full))
	}
	if p.org != "" {
		set(&m.organization, idToTitle(p.org))
	}
	set(&m.basename, p.basename)
	set(&m.finetune, p.finetune)
	set(&m.version, p.version)
	set(&m.sizeLabel, p.sizeLabel)
}

// override applies a --metadata file: a JSON object whose keys are the
// general.* keys (MetadataKeys); a key given as null unsets the field, as
// the converter's dict.get does. Other keys are ignored, as by the
// converter, and named in the returned warnings.
func (m *authorship) override(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("convert: --metadata: %w", err)
	}
	return m.overrideJSON(path, b)
}

// overrideJSON is override on the file's bytes b (path names it in errors).
func (m *authorship) overrideJSON(path string, b []byte) ([]string, error) {
	var raw map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&raw); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("convert: --metadata %s: not a JSON object: %w (byte offset %d)", path, err, max(syn.Offset-1, 0))
		}
		return nil, fmt.Errorf("convert: --metadata %s: not a JSON object: %w", path, err)
	}
	bad := func(key, want string, v json.RawMessage) error {
		return fmt.Errorf("convert: --metadata %s: key %q: want %s, got %.40s", path, key, want, v)
	}
	isNull := func(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }
	known := map[string]bool{}
	for _, k := range m.stringKeys() {
		known[k.key] = true
		v, ok := raw[k.key]
		if !ok {
			continue
		}
		var s string
		if isNull(v) {
			*k.p = ""
			continue
		}
		if err := json.Unmarshal(v, &s); err == nil {
			*k.p = s
			continue
		}
		// general.license may be a list (the model card's form): the
		// converter joins it with commas.
		var list []string
		if k.key == "general.license" && json.Unmarshal(v, &list) == nil {
			*k.p = strings.Join(list, ",")
			continue
		}
		return nil, bad(k.key, "a string", v)
	}
	for _, l := range []struct {
		key     string
		has     *bool
		entries *[]map[string]string
	}{{"general.base_models", &m.hasBaseModels, &m.baseModels}, {"general.datasets", &m.hasDatasets, &m.datasets}} {
		known[l.key] = true
		v, ok := raw[l.key]
		if !ok {
			continue
		}
		*l.has, *l.entries = false, nil
		if isNull(v) {
			continue
		}
		var list []map[string]json.RawMessage
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, bad(l.key, "a list of objects", v)
		}
		*l.has = true
		for i, e := range list {
			entry := map[string]string{}
			for _, ek := range entryKeys {
				ev, ok := e[ek]
				if !ok || isNull(ev) {
					continue
				}
				var s string
				if err := json.Unmarshal(ev, &s); err != nil {
					return nil, bad(fmt.Sprintf("%s[%d].%s", l.key, i, ek), "a string", ev)
				}
				entry[ek] = s
			}
			*l.entries = append(*l.entries, entry)
		}
	}
	for _, l := range []struct {
		key string
		p   *[]string
	}{{"general.tags", &m.tags}, {"general.languages", &m.languages}} {
		known[l.key] = true
		v, ok := raw[l.key]
		if !ok {
			continue
		}
		*l.p = nil
		if isNull(v) {
			continue
		}
		list := []string{}
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, bad(l.key, "a list of strings", v)
		}
		*l.p = list
	}
	var unknown []string
	for k := range raw {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	var warn []string
	for _, k := range unknown {
		warn = append(warn, fmt.Sprintf("--metadata %s: key %q ignored: convert_hf_to_gguf.py applies only %s", path, k, strings.Join(MetadataKeys(), ", ")))
	}
	return warn, nil
}

// sourceDir is the directory a checkpoint's name is taken from: the
// checkpoint itself when it is one, else the folder holding its file.
func sourceDir(c *checkpoint.Checkpoint) string {
	dir := c.Path
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = filepath.Dir(dir)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return dir
}

// dirModelID is the model id a directory stands for: its name, except for
// a snapshot in the Hugging Face cache (…/models--ORG--NAME/snapshots/HASH),
// which stands for the repository ORG/NAME rather than the commit HASH (the
// cache writes a repository id's "/" as "--", which Hub names cannot hold
// themselves).
func dirModelID(dir string) string {
	snapshots := filepath.Dir(dir)
	repo := filepath.Base(filepath.Dir(snapshots))
	if filepath.Base(snapshots) == "snapshots" && strings.HasPrefix(repo, "models--") && len(repo) > len("models--") {
		return strings.Replace(strings.TrimPrefix(repo, "models--"), "--", "/", 1)
	}
	return filepath.Base(dir)
}

// modelName is general.name as the converter derives it without a model
// card, override or config.json name (LoRA adapters): the directory's model
// id made a title.
func modelName(c *checkpoint.Checkpoint) string {
	dir := sourceDir(c)
	if p := modelIDComponents(dirModelID(dir), 0); p.full != "" {
		return idToTitle(p.full)
	}
	return filepath.Base(dir)
}

// versionWord matches the words Metadata.id_to_title leaves as they are.
var versionWord = regexp.MustCompile(`^(v\d+(?:\.\d+)*|\d.*)$`)

// idToTitle is gguf-py's Metadata.id_to_title: "-" becomes a space, and
// lower-case words are title-cased unless they look like versions or
// numbers.
func idToTitle(s string) string {
	var words []string
	for _, w := range strings.Fields(strings.ReplaceAll(strings.TrimSpace(s), "-", " ")) {
		if pyIsLower(w) && !versionWord.MatchString(w) {
			w = pyTitle(w)
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// pyIsLower is Python's str.islower: at least one cased letter, none
// upper-case.
func pyIsLower(s string) bool {
	cased := false
	for _, r := range s {
		if unicode.IsUpper(r) || unicode.IsTitle(r) {
			return false
		}
		if unicode.IsLower(r) {
			cased = true
		}
	}
	return cased
}

// pyTitle is Python's str.title: a letter after a non-letter is upper-cased,
// every other letter lower-cased.
func pyTitle(s string) string {
	var b strings.Builder
	prev := false
	for _, r := range s {
		if unicode.IsLetter(r) {
			if prev {
				r = unicode.ToLower(r)
			} else {
				r = unicode.ToUpper(r)
			}
			prev = true
		} else {
			prev = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// idParts are the components gguf-py's Metadata.get_model_id_components
// reads off a model id ("" where it finds none).
type idParts struct {
	full, org, basename, finetune, version, sizeLabel string
}

// The annotations of a name part.
const (
	partBasename = 1 << iota
	partSizeLabel
	partFinetune
	partVersion
	partType
)

var (
	idVersion  = regexp.MustCompile(`(?i)^(?:(v|iter)?\d+([.]\d+)*)$`)
	idType     = regexp.MustCompile(`(?i)^(?:i?q\d(_\w)*|b?fp?(16|32))$`)
	idSize     = regexp.MustCompile(`(?i)^(?:(([A]|\d+[x])?\d+([._]\d+)?[KMBT][\d]?|small|mini|medium|large|x?xl))$`)
	idFinetune = regexp.MustCompile(`(?i)^(?:chat|instruct|vision|lora)$`)
)

// modelIDComponents is gguf-py's Metadata.get_model_id_components: an id
// "ORG/Name-Size-Finetune-Version" split into its parts. totalParams is
// the model's parameter count (negative for a LoRA adapter, 0 unknown): a
// size far from it is taken for a context length ("32k", part of the
// finetune).
func modelIDComponents(id string, totalParams int64) idParts {
	if id == "" {
		return idParts{}
	}
	if strings.Contains(id, " ") {
		return idParts{full: id}
	}
	var p idParts
	full := id
	if org, rest, ok := strings.Cut(id, "/"); ok {
		p.org, full = org, rest
		if strings.HasPrefix(org, ".") {
			p.org = ""
		}
	}
	p.full = full
	var parts []string
	for _, s := range strings.Split(full, "-") {
		if s != "" {
			parts = append(parts, s)
		}
	}
	types := make([]int, len(parts))
	for i, part := range parts {
		switch {
		case idVersion.MatchString(part):
			types[i] |= partVersion
		case idType.MatchString(part):
			types[i] |= partType
			parts[i] = strings.ToUpper(part)
		case i > 0 && idSize.MatchString(part):
			part = strings.ReplaceAll(part, "_", ".")
			// bloom-7b1 means 7.1B.
			if n := len(part); isDecimal(part[n-1]) && n >= 2 {
				part = part[:n-2] + "." + part[n-1:] + part[n-2:n-1]
			}
			if n := len(part); n > 1 && isDecimal(part[n-2]) && strings.ContainsRune("kmbt", rune(part[n-1])) {
				part = part[:n-1] + strings.ToUpper(part[n-1:])
			}
			if totalParams != 0 {
				if label, ok := sizeLabelParams(part); ok {
					// A size much smaller (or, but for an adapter, larger)
					// than the model is likely a context length.
					if totalParams < 0 && label < float64(-totalParams/8) ||
						totalParams > 0 && math.Abs(label-float64(totalParams)) > float64(7*totalParams/8) {
						types[i] |= partFinetune
						part = part[:len(part)-1] + strings.ToLower(part[len(part)-1:])
					}
				}
			}
			if types[i] == 0 {
				types[i] |= partSizeLabel
			}
			parts[i] = part
		case i > 0 && idFinetune.MatchString(part):
			if totalParams < 0 && strings.ToLower(part) == "lora" {
				types[i] |= partType
			} else {
				types[i] |= partFinetune
			}
		}
	}
	// Word sizes ("small") yield to a numeric one.
	numeric := false
	for i, part := range parts {
		if types[i]&partSizeLabel != 0 && strings.IndexFunc(part, isDecimalRune) >= 0 {
			numeric = true
		}
	}
	if numeric {
		for i, part := range parts {
			if types[i]&partSizeLabel != 0 && strings.IndexFunc(part, func(r rune) bool { return !unicode.IsLetter(r) }) < 0 {
				types[i] &^= partSizeLabel
			}
		}
	}
	atStart := true
	for i, part := range parts {
		if atStart && (types[i] == 0 && unicode.IsLetter([]rune(part)[0]) || types[i]&partVersion != 0) {
			types[i] |= partBasename
			continue
		}
		atStart = false
		if types[i] == 0 {
			types[i] |= partFinetune
		}
	}
	// A trailing version is not part of the basename.
	for i := len(parts) - 1; i >= 0; i-- {
		if types[i]&partBasename == 0 || bits.OnesCount(uint(types[i])) <= 1 {
			break
		}
		types[i] &^= partBasename
	}
	join := func(want, not int, dedup bool) string {
		var out []string
		seen := map[string]bool{}
		for i, part := range parts {
			if types[i]&want == 0 || types[i]&not != 0 || dedup && seen[part] {
				continue
			}
			seen[part] = true
			out = append(out, part)
		}
		return strings.Join(out, "-")
	}
	p.basename = join(partBasename, 0, false)
	p.sizeLabel = join(partSizeLabel, 0, true)
	p.finetune = join(partFinetune, 0, false)
	p.version = join(partVersion, partBasename, false)
	if p.sizeLabel == "" && p.finetune == "" && p.version == "" {
		p.basename = "" // too ambiguous
	}
	return p
}

func isDecimal(b byte) bool     { return b >= '0' && b <= '9' }
func isDecimalRune(r rune) bool { return unicode.IsDigit(r) }

// sizeLabelParams is the parameter count a size part states ("1.1B" is
// 1.1e9), or false when its number does not parse (where float() raises
// ValueError: "8x7B", "small"). A suffix other than K, M, B or T scales by
// 1000**-1, as the converter's " KMBT".find gives -1 for it.
func sizeLabelParams(part string) (float64, bool) {
	f, err := strconv.ParseFloat(part[:len(part)-1], 64)
	if err != nil {
		return 0, false
	}
	scale := 1e-3
	if i := strings.IndexByte(" KMBT", part[len(part)-1]); i > 0 {
		scale = math.Pow(1000, float64(i))
	}
	return f * scale, true
}

// namingConvention is gguf-py's naming_convention, the converter's default
// output name without ".gguf" (the GGUF naming convention
// "<BaseName>-<SizeLabel>-<FineTune>-<Version>-<Encoding>-<Type>"): the
// basename, else the name, else "ggml-model", with spaces and "/" made "-";
// empty parts are left out. encoding is the file type ("F16"), kind
// "vocab" for --vocab-only.
func namingConvention(m *authorship, sizeLabel, encoding, kind string) string {
	dash := func(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), " ", "-") }
	name := "ggml-model"
	switch {
	case m.basename != "":
		name = strings.ReplaceAll(dash(m.basename), "/", "-")
	case m.name != "":
		name = strings.ReplaceAll(dash(m.name), "/", "-")
	}
	for _, part := range []string{sizeLabel, m.finetune, m.version, strings.ToUpper(encoding), kind} {
		if part != "" {
			name += "-" + dash(part)
		}
	}
	return name
}

// fillTemplate is gguf-py's fill_templated_filename: in a DST name,
// {ftype} and {outtype} (or {}) become the file type in lower case,
// {FTYPE} and {OUTTYPE} in upper case ("model-{ftype}.gguf").
func fillTemplate(name, fileType string) string {
	lo, up := strings.ToLower(fileType), strings.ToUpper(fileType)
	return strings.NewReplacer("{}", lo, "{0}", lo, "{ftype}", lo, "{outtype}", lo, "{FTYPE}", up, "{OUTTYPE}", up).Replace(name)
}
