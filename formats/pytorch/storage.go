package pytorch

import (
	"fmt"

	"github.com/tfconv/tfconv/tensor"
)

// storageTypes maps torch's typed storage classes to dtypes. A class with
// no tfconv dtype maps to Invalid and is refused by name when used.
var storageTypes = map[string]tensor.DType{
	"FloatStorage":         tensor.F32,
	"HalfStorage":          tensor.F16,
	"BFloat16Storage":      tensor.BF16,
	"DoubleStorage":        tensor.F64,
	"LongStorage":          tensor.I64,
	"IntStorage":           tensor.I32,
	"ShortStorage":         tensor.I16,
	"CharStorage":          tensor.I8,
	"ByteStorage":          tensor.U8,
	"BoolStorage":          tensor.BOOL,
	"ComplexFloatStorage":  tensor.C64,
	"UntypedStorage":       tensor.U8, // torch.load reads it as uint8
	"ComplexDoubleStorage": tensor.Invalid,
	"QInt8Storage":         tensor.Invalid,
	"QUInt8Storage":        tensor.Invalid,
	"QInt32Storage":        tensor.Invalid,
	"QUInt4x2Storage":      tensor.Invalid,
	"QUInt2x4Storage":      tensor.Invalid,
}

// dtypeGlobals maps torch's dtype objects (torch.float16, ...) to dtypes,
// for _rebuild_tensor_v3, which names the dtype beside an untyped storage.
var dtypeGlobals = map[string]tensor.DType{
	"float32":       tensor.F32,
	"float":         tensor.F32,
	"float16":       tensor.F16,
	"half":          tensor.F16,
	"bfloat16":      tensor.BF16,
	"float64":       tensor.F64,
	"double":        tensor.F64,
	"int64":         tensor.I64,
	"long":          tensor.I64,
	"int32":         tensor.I32,
	"int":           tensor.I32,
	"int16":         tensor.I16,
	"short":         tensor.I16,
	"int8":          tensor.I8,
	"uint8":         tensor.U8,
	"bool":          tensor.BOOL,
	"complex64":     tensor.C64,
	"float8_e4m3fn": tensor.F8_E4M3,
	"float8_e5m2":   tensor.F8_E5M2,
	"uint16":        tensor.U16,
	"uint32":        tensor.U32,
	"uint64":        tensor.U64,
	"complex128":    tensor.Invalid,
}

// storageRef is one storage a persistent id names: its key, dtype and
// declared element count, and (once the container is read) where its bytes
// are.
type storageRef struct {
	key    string
	dtype  tensor.DType
	numel  int64 // elements as declared in the pickle
	nbytes int64 // numel × element size
	pos    int64 // offset of the BINPERSID that first named it, in the pickle

	// Set from the container: the absolute offset of the bytes and how
	// many there are.
	dataOff, dataLen int64
	placed           bool
}

// rebuilt is a tensor made by _rebuild_tensor_v2 (or _v3, or the old
// _rebuild_tensor): a view of a storage.
type rebuilt struct {
	st     *storageRef
	dtype  tensor.DType
	offset int64 // storage offset, in elements of dtype
	shape  tensor.Shape
	stride []int64
	pos    int64 // the REDUCE that made it, in the pickle
}

func intArg(v any) (int64, bool) {
	n, ok := v.(int64)
	return n, ok
}

func intTuple(v any) ([]int64, bool) {
	t, ok := v.(pyTuple)
	if !ok || len(t) > tensor.MaxDims {
		return nil, false
	}
	out := make([]int64, len(t))
	for i, x := range t {
		n, ok := x.(int64)
		if !ok || n < 0 {
			return nil, false
		}
		out[i] = n
	}
	return out, true
}

// rebuildTensor checks the arguments of a _rebuild_tensor* call and makes
// the view. The view must lie inside the storage's declared size.
func (u *unpickler) rebuildTensor(g *pyGlobal, a pyTuple) (any, error) {
	var lo, hi int
	switch g.kind {
	case gRebuildTensor:
		lo, hi = 4, 4
	case gRebuildTensorV2:
		lo, hi = 6, 7
	case gRebuildTensorV3:
		lo, hi = 7, 8
	}
	if len(a) < lo || len(a) > hi {
		return nil, u.fail("%s called with %d arguments", g, len(a))
	}
	st, ok := a[0].(*storageRef)
	if !ok {
		return nil, u.fail("%s called on %s, not a storage", g, typeName(a[0]))
	}
	off, ok := intArg(a[1])
	if !ok || off < 0 {
		return nil, u.fail("%s: storage offset is not a non-negative int", g)
	}
	shape, ok := intTuple(a[2])
	if !ok {
		return nil, u.fail("%s: size is not a tuple of at most %d non-negative ints", g, tensor.MaxDims)
	}
	stride, ok := intTuple(a[3])
	if !ok || len(stride) != len(shape) {
		return nil, u.fail("%s: stride is not a tuple of %d non-negative ints", g, len(shape))
	}
	dt := st.dtype
	if g.kind == gRebuildTensorV3 {
		dg, ok := a[6].(*pyGlobal)
		if !ok || dg.kind != gDType {
			return nil, u.fail("%s: dtype is %s, not a torch dtype", g, typeName(a[6]))
		}
		dt = dtypeGlobals[dg.name]
		if !dt.Valid() {
			return nil, u.unsupported("dtype torch.%s has no tfconv dtype", dg.name)
		}
	}
	r := &rebuilt{st: st, dtype: dt, offset: off, shape: tensor.Shape(shape), stride: stride, pos: int64(u.opOff)}
	if _, err := r.shape.NumElements(); err != nil {
		return nil, u.fail("%s: size %v: element count overflows", g, r.shape)
	}
	if _, err := r.span(); err != nil {
		return nil, u.fail("%v", err)
	}
	if err := u.count(len(shape) + 1); err != nil {
		return nil, err
	}
	return r, nil
}

// span returns the byte range [lo, hi) of the storage that the view
// touches, overflow-checked. An empty view touches nothing (lo == hi).
func (r *rebuilt) span() ([2]int64, error) {
	es := r.dtype.BlockBytes()
	n, _ := r.shape.NumElements()
	if n == 0 {
		return [2]int64{0, 0}, nil
	}
	last := r.offset
	for i, d := range r.shape {
		step, err := tensor.MulInt64(d-1, r.stride[i])
		if err != nil {
			return [2]int64{}, fmt.Errorf("size %v stride %v overflows", r.shape, r.stride)
		}
		if last, err = tensor.AddInt64(last, step); err != nil {
			return [2]int64{}, fmt.Errorf("size %v stride %v overflows", r.shape, r.stride)
		}
	}
	lo, err1 := tensor.MulInt64(r.offset, es)
	end, err2 := tensor.AddInt64(last, 1)
	hi, err3 := tensor.MulInt64(end, es)
	if err1 != nil || err2 != nil || err3 != nil {
		return [2]int64{}, fmt.Errorf("storage offset %d with size %v stride %v overflows", r.offset, r.shape, r.stride)
	}
	return [2]int64{lo, hi}, nil
}

// contiguous reports whether the view is row-major with no gaps, so that
// its bytes are one slice of the storage.
func (r *rebuilt) contiguous() bool {
	want := int64(1)
	for i := len(r.shape) - 1; i >= 0; i-- {
		if r.shape[i] != 1 && r.stride[i] != want {
			n, _ := r.shape.NumElements()
			return n == 0
		}
		want *= r.shape[i]
	}
	return true
}

// persistentID resolves torch's persistent ids: ('storage', storage_type,
// key, location, numel) in the zip format, with a sixth item (view
// metadata, always None since torch 1.0) in the legacy format. Every id
// naming a key gets the same storageRef, so tied tensors share it.
func persistentID(storages map[string]*storageRef, order *[]*storageRef, legacy bool) func(any, int64) (any, error) {
	return func(pid any, pos int64) (any, error) {
		t, ok := pid.(pyTuple)
		if !ok || len(t) == 0 {
			return nil, fmt.Errorf("persistent id is %s, not a tuple", typeName(pid))
		}
		if s, ok := t[0].(string); !ok || s != "storage" {
			if s == "module" {
				return nil, tensor.Unsupported("the pickle holds an nn.Module object, not a state dict (save model.state_dict())")
			}
			return nil, fmt.Errorf("persistent id of kind %s, not \"storage\"", typeName(t[0]))
		}
		want := 5
		if legacy {
			want = 6
		}
		if len(t) != want {
			return nil, fmt.Errorf("storage id has %d items, want %d", len(t), want)
		}
		g, ok := t[1].(*pyGlobal)
		if !ok || g.kind != gStorage {
			return nil, fmt.Errorf("storage type is %s, not a torch storage class", typeName(t[1]))
		}
		dt := storageTypes[g.name]
		if !dt.Valid() {
			return nil, tensor.Unsupported("storage type torch.%s has no tfconv dtype", g.name)
		}
		key, ok := t[2].(string)
		if !ok || key == "" || len(key) > 64 {
			return nil, fmt.Errorf("storage key is %s, not a short string", typeName(t[2]))
		}
		numel, ok := t[4].(int64)
		if !ok || numel < 0 {
			return nil, fmt.Errorf("storage %q: element count is not a non-negative int", key)
		}
		if legacy {
			if _, none := t[5].(pyNone); !none {
				return nil, tensor.Unsupported("storage %q is a storage view (torch < 1.0), which tfconv does not read", key)
			}
		}
		nbytes, err := tensor.MulInt64(numel, dt.BlockBytes())
		if err != nil {
			return nil, fmt.Errorf("storage %q: %d elements overflow", key, numel)
		}
		if s, ok := storages[key]; ok {
			if s.dtype != dt || s.numel != numel {
				return nil, fmt.Errorf("storage %q named as %s×%d and as %s×%d", key, s.dtype, s.numel, dt, numel)
			}
			return s, nil
		}
		if len(storages) >= MaxStorages {
			return nil, fmt.Errorf("more than %d storages", MaxStorages)
		}
		s := &storageRef{key: key, dtype: dt, numel: numel, nbytes: nbytes, pos: pos}
		storages[key] = s
		*order = append(*order, s)
		return s, nil
	}
}

// MaxStorages caps the storages one file names.
const MaxStorages = 1 << 16
