package output

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mattn/go-isatty"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// IsTerminal reports whether w is a terminal.
// A writer that wraps a file (progress.Line) says so with an Fd method.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
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

// Render writes the table: boxed on a terminal, as wide as the terminal at
// most, tab-separated otherwise (a header line, then one line per row).
func (t *Table) Render(w io.Writer) error {
	if IsTerminal(w) {
		return t.RenderBoxed(w, TerminalWidth(w))
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

// RenderBoxed writes the boxed form whatever w is, at most width columns
// wide (0: no limit): cells wrap at spaces, and words longer than their
// column break; headers stay whole. The headers are printed as written — tablewriter's header
// auto-format would turn "SQNR dB" into "SQNR D B" and "bits/weight" into
// "BITS/WEIGHT".
func (t *Table) RenderBoxed(w io.Writer, width int) error {
	opts := []tablewriter.Option{
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
	}
	if cols := t.fitWidths(width); cols != nil {
		m := tw.NewMapper[int, int]()
		for i, c := range cols {
			m[i] = c + 2 // tablewriter's widths include the cell's padding
		}
		opts = append(opts, tablewriter.WithColumnWidths(m), tablewriter.WithRowAutoWrap(tw.WrapBreak))
	}
	tbl := tablewriter.NewTable(w, opts...)
	h := make([]any, len(t.header))
	for i, s := range t.header {
		h[i] = s
	}
	tbl.Header(h...)
	if err := tbl.Bulk(t.rows); err != nil {
		return err
	}
	return tbl.Render()
}

// fitWidths returns the content width of each column such that the boxed
// table is at most width columns wide, or nil when it fits as it is (or
// width is 0). The widest columns give way first, and no column becomes
// narrower than its header (nor 4), so headers stay whole; when even that
// does not fit, the table is as narrow as its headers allow.
func (t *Table) fitWidths(width int) []int {
	if width <= 0 {
		return nil
	}
	n := len(t.header)
	cols, floor := make([]int, n), make([]int, n)
	for i, h := range t.header {
		floor[i] = max(utf8.RuneCountInString(h), 4)
		cols[i] = utf8.RuneCountInString(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			if i < n {
				for _, line := range strings.Split(c, "\n") {
					cols[i] = max(cols[i], utf8.RuneCountInString(line))
				}
			}
		}
	}
	total := 3*n + 1 // "│ " before each cell, " " after it, the last "│"
	for _, c := range cols {
		total += c
	}
	if total <= width {
		return nil
	}
	for total > width {
		widest := -1
		for i := range cols {
			if cols[i] > floor[i] && (widest < 0 || cols[i] > cols[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			break
		}
		cols[widest]--
		total--
	}
	return cols
}

// TerminalWidth is the width in columns of the terminal w writes to: the
// window size the kernel reports, else $COLUMNS, else 0 (unknown).
func TerminalWidth(w io.Writer) int {
	if f, ok := w.(interface{ Fd() uintptr }); ok {
		if n := windowWidth(f.Fd()); n > 0 {
			return n
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 0
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
