package tensor

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Kind is the type of a metadata value. The numbering is GGUF's value type
// numbering (gguf_type), so GGUF readers and writers use it directly; other
// formats use the same kinds (safetensors metadata is all KindString).
type Kind uint32

// The kinds of metadata values.
const (
	KindUint8 Kind = iota
	KindInt8
	KindUint16
	KindInt16
	KindUint32
	KindInt32
	KindFloat32
	KindBool
	KindString
	KindArray
	KindUint64
	KindInt64
	KindFloat64
	numKinds
)

var kindNames = [numKinds]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

// Valid reports whether k is one of the 13 kinds.
func (k Kind) Valid() bool { return k < numKinds }

func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint32(k))
}

// ParseKind returns the kind with the given name ("uint32", "string", ...).
func ParseKind(name string) (Kind, bool) {
	for k, n := range kindNames {
		if n == name {
			return Kind(k), true
		}
	}
	return 0, false
}

// Size returns the encoded size in bytes of one scalar of kind k, or 0 for
// strings and arrays, whose size depends on their contents.
func (k Kind) Size() int {
	switch k {
	case KindUint8, KindInt8, KindBool:
		return 1
	case KindUint16, KindInt16:
		return 2
	case KindUint32, KindInt32, KindFloat32:
		return 4
	case KindUint64, KindInt64, KindFloat64:
		return 8
	}
	return 0
}

// Value is one metadata value of any kind. The zero Value is invalid; build
// values with the constructors below. A Value holds exactly the Go type of its
// kind (uint8 ... float64, bool, string) or an Array.
type Value struct {
	v any
}

// Array is a homogeneous array value. Data is a slice of the element kind's Go
// type ([]uint32, []string, []float32, ...) or, for Elem == KindArray, an
// []Array (GGUF allows arrays of arrays).
type Array struct {
	Elem Kind
	Data any
}

// Len returns the number of elements.
func (a Array) Len() int {
	switch d := a.Data.(type) {
	case []uint8:
		return len(d)
	case []int8:
		return len(d)
	case []uint16:
		return len(d)
	case []int16:
		return len(d)
	case []uint32:
		return len(d)
	case []int32:
		return len(d)
	case []float32:
		return len(d)
	case []bool:
		return len(d)
	case []string:
		return len(d)
	case []Array:
		return len(d)
	case []uint64:
		return len(d)
	case []int64:
		return len(d)
	case []float64:
		return len(d)
	}
	return 0
}

// Index returns element i as a Value.
func (a Array) Index(i int) Value {
	switch d := a.Data.(type) {
	case []uint8:
		return Value{d[i]}
	case []int8:
		return Value{d[i]}
	case []uint16:
		return Value{d[i]}
	case []int16:
		return Value{d[i]}
	case []uint32:
		return Value{d[i]}
	case []int32:
		return Value{d[i]}
	case []float32:
		return Value{d[i]}
	case []bool:
		return Value{d[i]}
	case []string:
		return Value{d[i]}
	case []Array:
		return Value{d[i]}
	case []uint64:
		return Value{d[i]}
	case []int64:
		return Value{d[i]}
	case []float64:
		return Value{d[i]}
	}
	panic("tensor: Index on an invalid Array")
}

// Constructors.
func Uint8(x uint8) Value     { return Value{x} }
func Int8(x int8) Value       { return Value{x} }
func Uint16(x uint16) Value   { return Value{x} }
func Int16(x int16) Value     { return Value{x} }
func Uint32(x uint32) Value   { return Value{x} }
func Int32(x int32) Value     { return Value{x} }
func Float32(x float32) Value { return Value{x} }
func Bool(x bool) Value       { return Value{x} }
func String(x string) Value   { return Value{x} }
func Uint64(x uint64) Value   { return Value{x} }
func Int64(x int64) Value     { return Value{x} }
func Float64(x float64) Value { return Value{x} }

// ArrayOf builds an array value from a slice of one of the element Go types
// ([]uint8 ... []float64, []bool, []string, []Array). It panics on any other
// type, which is a programming error.
func ArrayOf(data any) Value {
	k, ok := sliceKind(data)
	if !ok {
		panic(fmt.Sprintf("tensor: ArrayOf(%T)", data))
	}
	return Value{Array{Elem: k, Data: data}}
}

func sliceKind(data any) (Kind, bool) {
	switch data.(type) {
	case []uint8:
		return KindUint8, true
	case []int8:
		return KindInt8, true
	case []uint16:
		return KindUint16, true
	case []int16:
		return KindInt16, true
	case []uint32:
		return KindUint32, true
	case []int32:
		return KindInt32, true
	case []float32:
		return KindFloat32, true
	case []bool:
		return KindBool, true
	case []string:
		return KindString, true
	case []Array:
		return KindArray, true
	case []uint64:
		return KindUint64, true
	case []int64:
		return KindInt64, true
	case []float64:
		return KindFloat64, true
	}
	return 0, false
}

// Kind returns the value's kind.
func (v Value) Kind() Kind {
	switch v.v.(type) {
	case uint8:
		return KindUint8
	case int8:
		return KindInt8
	case uint16:
		return KindUint16
	case int16:
		return KindInt16
	case uint32:
		return KindUint32
	case int32:
		return KindInt32
	case float32:
		return KindFloat32
	case bool:
		return KindBool
	case string:
		return KindString
	case Array:
		return KindArray
	case uint64:
		return KindUint64
	case int64:
		return KindInt64
	case float64:
		return KindFloat64
	}
	return numKinds
}

// IsValid reports whether v was built by a constructor.
func (v Value) IsValid() bool { return v.v != nil }

// Any returns the Go value held (uint8 ... float64, bool, string or Array).
func (v Value) Any() any { return v.v }

// Int returns an integer value of any integer kind as int64; false for
// other kinds and for uint64 values above MaxInt64.
func (v Value) Int() (int64, bool) {
	switch x := v.v.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// Float returns a float or integer value as float64.
func (v Value) Float() (float64, bool) {
	switch x := v.v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	if i, ok := v.Int(); ok {
		return float64(i), true
	}
	if x, ok := v.v.(uint64); ok {
		return float64(x), true
	}
	return 0, false
}

// Str returns a string value.
func (v Value) Str() (string, bool) {
	s, ok := v.v.(string)
	return s, ok
}

// BoolValue returns a bool value.
func (v Value) BoolValue() (bool, bool) {
	b, ok := v.v.(bool)
	return b, ok
}

// Array returns an array value.
func (v Value) Array() (Array, bool) {
	a, ok := v.v.(Array)
	return a, ok
}

// String formats a scalar, or an array as its element kind and length.
func (v Value) String() string {
	switch x := v.v.(type) {
	case string:
		return strconv.Quote(x)
	case Array:
		return fmt.Sprintf("[%s × %d]", x.Elem, x.Len())
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case nil:
		return "<invalid>"
	}
	return fmt.Sprint(v.v)
}

// Equal reports whether two values have the same kind and contents. Floats are
// compared bit for bit, so NaN equals the same NaN and 0 differs from -0.
func (v Value) Equal(o Value) bool {
	if v.Kind() != o.Kind() {
		return false
	}
	switch x := v.v.(type) {
	case float32:
		return math.Float32bits(x) == math.Float32bits(o.v.(float32))
	case float64:
		return math.Float64bits(x) == math.Float64bits(o.v.(float64))
	case Array:
		y := o.v.(Array)
		if x.Elem != y.Elem || x.Len() != y.Len() {
			return false
		}
		for i := 0; i < x.Len(); i++ {
			if !x.Index(i).Equal(y.Index(i)) {
				return false
			}
		}
		return true
	}
	return v.v == o.v
}

// MarshalJSON writes scalars as JSON scalars and arrays as JSON arrays.
// Non-finite floats, which JSON cannot hold, are written as the strings
// "NaN", "+Inf" and "-Inf".
func (v Value) MarshalJSON() ([]byte, error) {
	switch x := v.v.(type) {
	case float32:
		return jsonFloat(float64(x), 32), nil
	case float64:
		return jsonFloat(x, 64), nil
	case Array:
		return x.MarshalJSON()
	case nil:
		return []byte("null"), nil
	}
	return json.Marshal(v.v)
}

// MarshalJSON writes the array as a JSON array.
func (a Array) MarshalJSON() ([]byte, error) {
	n := a.Len()
	b := make([]byte, 0, 2+n*4)
	b = append(b, '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		e, err := a.Index(i).MarshalJSON()
		if err != nil {
			return nil, err
		}
		b = append(b, e...)
	}
	return append(b, ']'), nil
}

func jsonFloat(f float64, bitSize int) []byte {
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`)
	case math.IsInf(f, 1):
		return []byte(`"+Inf"`)
	case math.IsInf(f, -1):
		return []byte(`"-Inf"`)
	}
	return strconv.AppendFloat(nil, f, 'g', -1, bitSize)
}

// KV is one metadata entry.
type KV struct {
	Key   string
	Value Value
}

// Metadata is an ordered list of entries; order is kept as read so that
// files round-trip exactly.
type Metadata []KV

// Get returns the value of key.
func (m Metadata) Get(key string) (Value, bool) {
	for _, kv := range m {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return Value{}, false
}

// Str returns the string value of key.
func (m Metadata) Str(key string) (string, bool) {
	v, ok := m.Get(key)
	if !ok {
		return "", false
	}
	return v.Str()
}

// Int returns the integer value of key, whatever its integer kind.
func (m Metadata) Int(key string) (int64, bool) {
	v, ok := m.Get(key)
	if !ok {
		return 0, false
	}
	return v.Int()
}

// Set replaces the value of key, or appends it.
func (m *Metadata) Set(key string, v Value) {
	for i := range *m {
		if (*m)[i].Key == key {
			(*m)[i].Value = v
			return
		}
	}
	*m = append(*m, KV{key, v})
}

// Equal reports whether both lists hold the same entries in the same order.
func (m Metadata) Equal(o Metadata) bool {
	if len(m) != len(o) {
		return false
	}
	for i := range m {
		if m[i].Key != o[i].Key || !m[i].Value.Equal(o[i].Value) {
			return false
		}
	}
	return true
}
