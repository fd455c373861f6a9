package page

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
)

//go:embed page.css
var css string

//go:embed page.js
var js string

// Page is one page: its title, what the server rendered, the data its
// scripts read and the page's own script.
type Page struct {
	Title string
	// Body is HTML rendered by the caller, placed in <main> before what
	// the script adds. It must be well-formed and escaped already.
	Body template.HTML
	// CSS is the page's own style, after the shared one.
	CSS string
	// Data is embedded as JSON, read by the scripts with P.data().
	Data any
	// Script is the page's own script, run after the shared one.
	Script string
}

var shell = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>{{.CSS}}</style>
</head><body>
<main id="main">
{{.Body}}
</main>
<script type="application/json" id="page-data">{{.Data}}</script>
<script>{{.Shared}}</script>
{{if .Script}}<script>{{.Script}}</script>{{end}}
<script>P.done()</script>
</body></html>
`))

// Write writes p as a self-contained HTML page.
func Write(w io.Writer, p Page) error {
	data, err := EncodeData(p.Data)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	err = shell.Execute(&b, struct {
		Title  string
		CSS    template.CSS
		Body   template.HTML
		Data   template.JS
		Shared template.JS
		Script template.JS
	}{p.Title, template.CSS(css + p.CSS), p.Body, template.JS(data), template.JS(js), template.JS(p.Script)})
	if err != nil {
		return fmt.Errorf("page: %w", err)
	}
	_, err = w.Write(b.Bytes())
	return err
}

// EncodeData is the JSON of v as a page embeds it: encoding/json's HTML
// escaping writes <, > and & as \u003c, \u003e and \u0026 (and U+2028,
// U+2029 escaped), so no string in the data can close the script element
// ("</script>") or open a comment.
func EncodeData(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("page: data: %w", err)
	}
	if bytes.Contains(b, []byte("</")) || bytes.Contains(b, []byte("<!--")) {
		return nil, fmt.Errorf("page: data: unescaped markup in JSON") // json.Marshal escapes '<'; never reached
	}
	return b, nil
}

// Data returns the embedded JSON of a page that Write wrote, for tests
// and tools that read a page back.
func Data(html []byte) ([]byte, error) {
	const open = `<script type="application/json" id="page-data">`
	i := bytes.Index(html, []byte(open))
	if i < 0 {
		return nil, fmt.Errorf("page: no page-data element")
	}
	rest := html[i+len(open):]
	j := bytes.Index(rest, []byte("</script>"))
	if j < 0 {
		return nil, fmt.Errorf("page: page-data element not closed")
	}
	return rest[:j], nil
}
