package output

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/olekukonko/tablewriter"
)

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// Table collects rows and renders them once.
type Table struct {
	header []string
	rows   [][]string
}

// NewTable starts a table with the given column headers.
func NewTable(header ...string) *Table { return &Table{header: header} }

// Row appends one row; values are formatted with fmt.Sprint.
func (t *Table) Row(cells ...any) {
	r := make([]string, len(cells))
	for i, c := range cells {
		r[i] = fmt.Sprint(c)
	}
	t.rows = append(t.rows, r)
}

// Len returns the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// Render writes the table: boxed on a terminal, tab-separated otherwise (a
// header line, then one line per row).
func (t *Table) Render(w io.Writer) error {
	if IsTerminal(w) {
		tw := tablewriter.NewWriter(w)
		h := make([]any, len(t.header))
		for i, s := range t.header {
			h[i] = s
		}
		tw.Header(h...)
		if err := tw.Bulk(t.rows); err != nil {
			return err
		}
		return tw.Render()
	}
	var b strings.Builder
	b.WriteString(strings.Join(t.header, "\t"))
	b.WriteByte('\n')
	for _, r := range t.rows {
		b.WriteString(strings.Join(r, "\t"))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// JSON writes v as indented JSON followed by a newline. A nil slice is
// written as [] (a documented list is never null), wherever it sits.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(noNil(reflect.ValueOf(v)).Interface())
}

// JSONLine is JSON on one line (run, generate and bench print it so).
func JSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(noNil(reflect.ValueOf(v)).Interface())
}

// noNil returns a copy of v in which every nil slice is an empty one;
// values that hold no slice come back as they are.
func noNil(v reflect.Value) reflect.Value {
	if !v.IsValid() {
		return v
	}
	switch v.Kind() {
	case reflect.Slice:
		if v.IsNil() {
			if v.Type().Elem().Kind() == reflect.Uint8 {
				return v // []byte: encoding/json writes base64; null stays null
			}
			return reflect.MakeSlice(v.Type(), 0, 0)
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			out.Index(i).Set(noNil(v.Index(i)))
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(noNil(v.Elem()))
		return out
	case reflect.Struct:
		if _, ok := v.Interface().(json.Marshaler); ok {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		for i := 0; i < v.NumField(); i++ {
			if out.Field(i).CanSet() {
				out.Field(i).Set(noNil(v.Field(i)))
			}
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), noNil(it.Value()))
		}
		return out
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		inner := noNil(v.Elem())
		out := reflect.New(v.Type()).Elem()
		out.Set(inner)
		return out
	}
	return v
}

// Bytes formats a byte count with binary units ("3.9 MiB").
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Count formats a large count with a metric suffix ("3.66M", "70.6B").
func Count(n int64) string {
	switch {
	case n >= 1e12:
		return fmt.Sprintf("%.2fT", float64(n)/1e12)
	case n >= 1e9:
		return fmt.Sprintf("%.2fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.2fK", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
