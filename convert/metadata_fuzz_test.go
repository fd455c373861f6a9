package convert

import "testing"

// FuzzMetadataOverride feeds arbitrary bytes as a --metadata file: an error
// or a set of keys, never a panic, and a result that writes as metadata.
func FuzzMetadataOverride(f *testing.F) {
	for _, s := range []string{
		`{"general.name": "x", "general.license": ["mit", "apache-2.0"], "general.tags": ["a"]}`,
		`{"general.base_models": [{"name": "b", "organization": "o", "version": "1", "repo_url": "u"}], "general.datasets": [{"name": "d"}]}`,
		`{"general.version": null, "general.unknown": 3}`,
		`[1, 2]`, `{"general.name": 7}`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m := &authorship{}
		if _, err := m.overrideJSON("meta.json", b); err != nil {
			return
		}
		_ = m.kvs()
	})
}
