package pytorch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/tfconv/tfconv/tensor"
)

// Caps on what one pickle may make. torch's pickle of a state dict costs
// about 85 bytes, 22 objects and 9 memo entries per tensor, so these admit a
// single file of some 20,000 tensors (transformers shards checkpoints far
// below that) while bounding what a hostile pickle can make: every object
// costs a few tens of bytes, so the caps hold a reader under about 64 MB.
const (
	// MaxPickleLen caps data.pkl (and the legacy pickles together), read
	// into memory.
	MaxPickleLen = 64 << 20
	// MaxStack caps the unpickler's stack. torch's pickler batches
	// SETITEMS/APPENDS by 1000, so a real stack stays below a few thousand.
	MaxStack = 1 << 14
	// MaxMarks caps open MARKs (nesting of tuples being built).
	MaxMarks = 1 << 10
	// MaxMemo caps memo entries.
	MaxMemo = 1 << 18
	// MaxObjects caps the objects and container items one pickle creates.
	MaxObjects = 1 << 19
	// MaxStringLen caps one string or bytes value (tensor names, storage keys).
	MaxStringLen = 1 << 20
	// MaxStringBytes caps the bytes of all strings of one pickle together
	// (each is a copy of its bytes in the pickle).
	MaxStringBytes = 16 << 20
	// MaxLongLen caps a LONG1/LONG4 payload; torch's largest is the legacy
	// magic number (10 bytes).
	MaxLongLen = 32
)

// Pickle opcodes (Python's Lib/pickle.py), the subset torch state dicts use
// plus the plain-data ones any protocol 2-5 pickler may emit for them.
const (
	opMark           = '('
	opStop           = '.'
	opPop            = '0'
	opPopMark        = '1'
	opDup            = '2'
	opBinFloat       = 'G'
	opInt            = 'I'
	opBinInt         = 'J'
	opBinInt1        = 'K'
	opBinInt2        = 'M'
	opNone           = 'N'
	opBinPersID      = 'Q'
	opReduce         = 'R'
	opBinString      = 'T'
	opShortBinString = 'U'
	opBinUnicode     = 'X'
	opAppend         = 'a'
	opBuild          = 'b'
	opGlobal         = 'c'
	opDict           = 'd'
	opEmptyDict      = '}'
	opAppends        = 'e'
	opBinGet         = 'h'
	opLongBinGet     = 'j'
	opList           = 'l'
	opEmptyList      = ']'
	opBinPut         = 'q'
	opLongBinPut     = 'r'
	opSetItem        = 's'
	opTuple          = 't'
	opEmptyTuple     = ')'
	opSetItems       = 'u'
	opProto          = 0x80
	opNewObj         = 0x81
	opTuple1         = 0x85
	opTuple2         = 0x86
	opTuple3         = 0x87
	opNewTrue        = 0x88
	opNewFalse       = 0x89
	opLong1          = 0x8a
	opLong4          = 0x8b
	opBinBytes       = 'B'
	opShortBinBytes  = 'C'
	opShortBinUni    = 0x8c
	opBinUnicode8    = 0x8d
	opBinBytes8      = 0x8e
	opEmptySet       = 0x8f
	opAddItems       = 0x90
	opFrozenSet      = 0x91
	opNewObjEx       = 0x92
	opStackGlobal    = 0x93
	opMemoize        = 0x94
	opFrame          = 0x95
)

// Python values the unpickler makes. Containers are pointers so that the
// memo shares them as Python does.
type (
	pyNone  struct{}
	pyLong  []byte // a LONG1/LONG4 integer too wide for int64, little-endian two's complement
	pyBytes string
	pyTuple []any
	pyList  struct{ items []any }
	pyDict  struct {
		keys []any
		vals []any
		idx  map[any]int
	}
	pyGlobal struct {
		module, name string
		kind         globalKind
		off          int64 // where it was named, for errors
	}
	// pyRefused stands for a disallowed global and anything made from it,
	// in lenient (scan) mode only.
	pyRefused struct{ g *pyGlobal }
)

// globalKind is what an allowed global is.
type globalKind int

const (
	gRefused globalKind = iota
	gOrderedDict
	gRebuildTensorV2
	gRebuildTensor
	gRebuildTensorV3
	gRebuildParameter
	gRebuildParameterState
	gStorage // a storage class: the dtype is in storageDTypes
	gDType   // a torch.<dtype> object: the dtype is in dtypeGlobals
)

// allowed is the allow-list of globals: everything a torch.save of a state
// dict (or of a dict of parameters) names, and nothing that runs code.
var allowed = func() map[string]globalKind {
	m := map[string]globalKind{
		"collections.OrderedDict":                    gOrderedDict,
		"torch._utils._rebuild_tensor_v2":            gRebuildTensorV2,
		"torch._utils._rebuild_tensor":               gRebuildTensor,
		"torch._utils._rebuild_tensor_v3":            gRebuildTensorV3,
		"torch._utils._rebuild_parameter":            gRebuildParameter,
		"torch._utils._rebuild_parameter_with_state": gRebuildParameterState,
	}
	for name := range storageTypes {
		m["torch."+name] = gStorage
	}
	for name := range dtypeGlobals {
		m["torch."+name] = gDType
	}
	return m
}()

// unpickler is a pickle machine that builds plain values and never calls
// anything from the file: GLOBAL resolves only the allow-list, and REDUCE,
// NEWOBJ and BUILD act only on allowed globals, each by code of its own.
type unpickler struct {
	buf  []byte
	pos  int
	base int64 // file offset of buf[0], for errors
	// where names the pickle in errors ("data.pkl offset 12").
	where string

	stack    []any
	marks    []int
	memo     map[uint32]any
	objects  int
	strBytes int

	// persistentLoad resolves a BINPERSID id (torch's storage tuples).
	persistentLoad func(pid any, off int64) (any, error)
	// lenient records disallowed globals in refused and carries on with a
	// placeholder instead of failing.
	lenient bool
	refused []*pyGlobal

	opOff int // offset of the opcode being run
}

// pickleError is a defect at a position in a pickle. The File wraps it into
// a tensor.FormatError with its name.
type pickleError struct {
	off         int // offset in the pickle
	msg         string
	g           *pyGlobal // set for a disallowed global
	unsupported bool      // well-formed, but not something tfconv reads
	truncated   bool      // the pickle ran past the bytes it was given
}

func (e *pickleError) Error() string { return fmt.Sprintf("offset %d: %s", e.off, e.msg) }

func (u *unpickler) fail(format string, args ...any) error {
	return &pickleError{off: u.opOff, msg: fmt.Sprintf(format, args...)}
}

// unsupported reports a well-formed pickle that asks for something tfconv
// does not read.
func (u *unpickler) unsupported(format string, args ...any) error {
	return &pickleError{off: u.opOff, msg: fmt.Sprintf(format, args...), unsupported: true}
}

func (u *unpickler) need(n int) error {
	if n < 0 || len(u.buf)-u.pos < n {
		return &pickleError{off: u.opOff, truncated: true,
			msg: fmt.Sprintf("pickle ends inside opcode 0x%02x (needs %d more bytes, %d left)", u.buf[u.opOff], n, len(u.buf)-u.pos)}
	}
	return nil
}

func (u *unpickler) read(n int) ([]byte, error) {
	if err := u.need(n); err != nil {
		return nil, err
	}
	b := u.buf[u.pos : u.pos+n]
	u.pos += n
	return b, nil
}

func (u *unpickler) u8() (int, error) {
	b, err := u.read(1)
	if err != nil {
		return 0, err
	}
	return int(b[0]), nil
}

func (u *unpickler) u16() (int, error) {
	b, err := u.read(2)
	if err != nil {
		return 0, err
	}
	return int(binary.LittleEndian.Uint16(b)), nil
}

func (u *unpickler) u32() (uint32, error) {
	b, err := u.read(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (u *unpickler) u64() (uint64, error) {
	b, err := u.read(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// line reads up to a newline (GLOBAL's text arguments, INT), capped.
func (u *unpickler) line() (string, error) {
	for i := u.pos; i < len(u.buf) && i-u.pos <= 256; i++ {
		if u.buf[i] == '\n' {
			s := string(u.buf[u.pos:i])
			u.pos = i + 1
			return s, nil
		}
	}
	if len(u.buf)-u.pos <= 256 {
		return "", &pickleError{off: u.opOff, truncated: true, msg: "pickle ends inside a text argument"}
	}
	return "", u.fail("no newline within 256 bytes after opcode 0x%02x", u.buf[u.opOff])
}

// count adds n made objects and enforces MaxObjects.
func (u *unpickler) count(n int) error {
	u.objects += n
	if u.objects > MaxObjects {
		return u.fail("more than %d objects", MaxObjects)
	}
	return nil
}

func (u *unpickler) push(v any) error {
	if len(u.stack) >= MaxStack {
		return u.fail("stack deeper than %d", MaxStack)
	}
	u.stack = append(u.stack, v)
	return nil
}

func (u *unpickler) pop() (any, error) {
	floor := 0
	if len(u.marks) > 0 {
		floor = u.marks[len(u.marks)-1]
	}
	if len(u.stack) <= floor {
		return nil, u.fail("stack underflow")
	}
	v := u.stack[len(u.stack)-1]
	u.stack = u.stack[:len(u.stack)-1]
	return v, nil
}

func (u *unpickler) top() (any, error) {
	floor := 0
	if len(u.marks) > 0 {
		floor = u.marks[len(u.marks)-1]
	}
	if len(u.stack) <= floor {
		return nil, u.fail("stack underflow")
	}
	return u.stack[len(u.stack)-1], nil
}

// popMark pops everything down to the last MARK and the mark itself.
func (u *unpickler) popMark() ([]any, error) {
	if len(u.marks) == 0 {
		return nil, u.fail("no MARK on the stack")
	}
	m := u.marks[len(u.marks)-1]
	u.marks = u.marks[:len(u.marks)-1]
	items := append([]any(nil), u.stack[m:]...)
	u.stack = u.stack[:m]
	return items, nil
}

func (u *unpickler) str(n uint64, unicode bool) error {
	if n > MaxStringLen {
		return u.fail("string of %d bytes (the limit is %d)", n, MaxStringLen)
	}
	b, err := u.read(int(n))
	if err != nil {
		return err
	}
	if err := u.count(1); err != nil {
		return err
	}
	if u.strBytes += len(b); u.strBytes > MaxStringBytes {
		return u.fail("strings of more than %d bytes in all", MaxStringBytes)
	}
	if unicode {
		if !utf8.Valid(b) {
			return u.fail("string is not valid UTF-8")
		}
		return u.push(string(b))
	}
	return u.push(pyBytes(b))
}

func (u *unpickler) memoPut(key uint32) error {
	v, err := u.top()
	if err != nil {
		return err
	}
	if _, ok := u.memo[key]; !ok && len(u.memo) >= MaxMemo {
		return u.fail("memo larger than %d entries", MaxMemo)
	}
	u.memo[key] = v
	return nil
}

func (u *unpickler) memoGet(key uint32) error {
	v, ok := u.memo[key]
	if !ok {
		return u.fail("memo key %d was never stored", key)
	}
	return u.push(v)
}

// hashable returns a map key for a dict key, or false when tfconv does not
// take it as one (torch's state dicts have string keys).
func hashable(k any) (any, bool) {
	switch k.(type) {
	case string, int64, bool, float64, pyBytes, pyNone:
		return k, true
	}
	return nil, false
}

func (u *unpickler) setItem(d any, k, v any) error {
	switch d := d.(type) {
	case *pyDict:
		hk, ok := hashable(k)
		if !ok {
			return u.fail("dict key of type %s", typeName(k))
		}
		if i, dup := d.idx[hk]; dup {
			// Python keeps the first position and the last value.
			d.vals[i] = v
			return nil
		}
		if err := u.count(1); err != nil {
			return err
		}
		d.idx[hk] = len(d.keys)
		d.keys = append(d.keys, k)
		d.vals = append(d.vals, v)
		return nil
	case *pyRefused:
		return nil
	}
	return u.fail("SETITEM on %s, not a dict", typeName(d))
}

func (u *unpickler) appendTo(l any, vs ...any) error {
	switch l := l.(type) {
	case *pyList:
		if err := u.count(len(vs)); err != nil {
			return err
		}
		l.items = append(l.items, vs...)
		return nil
	case *pyRefused:
		return nil
	}
	return u.fail("APPEND on %s, not a list", typeName(l))
}

func newDict() *pyDict { return &pyDict{idx: map[any]int{}} }

// global resolves module.name against the allow-list.
func (u *unpickler) global(module, name string) error {
	g := &pyGlobal{module: module, name: name, off: int64(u.opOff)}
	kind, ok := allowed[module+"."+name]
	if !ok {
		if !u.lenient {
			return &pickleError{off: u.opOff, msg: fmt.Sprintf("global %q is not allowed", module+"."+name), g: g}
		}
		u.refused = append(u.refused, g)
		return u.push(&pyRefused{g})
	}
	g.kind = kind
	if err := u.count(1); err != nil {
		return err
	}
	return u.push(g)
}

// run executes the pickle from u.pos to its STOP and returns the result.
func (u *unpickler) run() (any, error) {
	if u.memo == nil {
		u.memo = map[uint32]any{}
	}
	for {
		if u.pos >= len(u.buf) {
			return nil, &pickleError{off: u.pos, truncated: true, msg: "pickle ends without STOP"}
		}
		u.opOff = u.pos
		op := u.buf[u.pos]
		u.pos++
		var err error
		switch op {
		case opProto:
			var v int
			if v, err = u.u8(); err == nil && (v < 2 || v > 5) {
				err = u.fail("pickle protocol %d (tfconv reads 2 to 5)", v)
			}
		case opFrame:
			// Frames only group opcodes for buffering; the length is
			// checked against what is left.
			var n uint64
			if n, err = u.u64(); err == nil && n > uint64(len(u.buf)-u.pos) {
				err = u.fail("frame of %d bytes runs past the end of the pickle", n)
			}
		case opStop:
			v, err := u.pop()
			if err != nil {
				return nil, err
			}
			if len(u.stack) != 0 || len(u.marks) != 0 {
				return nil, u.fail("STOP with %d values left on the stack", len(u.stack))
			}
			return v, nil
		case opMark:
			if len(u.marks) >= MaxMarks {
				return nil, u.fail("more than %d open MARKs", MaxMarks)
			}
			u.marks = append(u.marks, len(u.stack))
		case opPop:
			_, err = u.pop()
		case opPopMark:
			_, err = u.popMark()
		case opDup:
			var v any
			if v, err = u.top(); err == nil {
				err = u.push(v)
			}
		case opNone:
			err = u.push(pyNone{})
		case opNewTrue:
			err = u.push(true)
		case opNewFalse:
			err = u.push(false)
		case opBinInt:
			var v uint32
			if v, err = u.u32(); err == nil {
				err = u.push(int64(int32(v)))
			}
		case opBinInt1:
			var v int
			if v, err = u.u8(); err == nil {
				err = u.push(int64(v))
			}
		case opBinInt2:
			var v int
			if v, err = u.u16(); err == nil {
				err = u.push(int64(v))
			}
		case opInt:
			var s string
			if s, err = u.line(); err == nil {
				switch s {
				case "01":
					err = u.push(true)
				case "00":
					err = u.push(false)
				default:
					var v int64
					if v, err = strconv.ParseInt(s, 10, 64); err != nil {
						err = u.fail("INT %q is not an int64", s)
					} else {
						err = u.push(v)
					}
				}
			}
		case opLong1, opLong4:
			var n int
			if op == opLong1 {
				n, err = u.u8()
			} else {
				var v uint32
				v, err = u.u32()
				n = int(int32(v))
			}
			if err != nil {
				break
			}
			if n < 0 || n > MaxLongLen {
				err = u.fail("LONG of %d bytes (the limit is %d)", n, MaxLongLen)
				break
			}
			var b []byte
			if b, err = u.read(n); err == nil {
				err = u.push(long(b))
			}
		case opBinFloat:
			var b []byte
			if b, err = u.read(8); err == nil {
				err = u.push(math.Float64frombits(binary.BigEndian.Uint64(b)))
			}
		case opBinUnicode, opBinString, opBinBytes:
			var n uint32
			if n, err = u.u32(); err == nil {
				if op == opBinString && int32(n) < 0 {
					err = u.fail("negative string length")
					break
				}
				err = u.str(uint64(n), op == opBinUnicode)
			}
		case opShortBinUni, opShortBinString, opShortBinBytes:
			var n int
			if n, err = u.u8(); err == nil {
				err = u.str(uint64(n), op == opShortBinUni)
			}
		case opBinUnicode8, opBinBytes8:
			var n uint64
			if n, err = u.u64(); err == nil {
				err = u.str(n, op == opBinUnicode8)
			}
		case opEmptyDict:
			if err = u.count(1); err == nil {
				err = u.push(newDict())
			}
		case opEmptyList:
			if err = u.count(1); err == nil {
				err = u.push(&pyList{})
			}
		case opEmptyTuple:
			err = u.push(pyTuple{})
		case opTuple1, opTuple2, opTuple3:
			n := int(op-opTuple1) + 1
			t := make(pyTuple, n)
			for i := n - 1; i >= 0 && err == nil; i-- {
				t[i], err = u.pop()
			}
			if err == nil {
				if err = u.count(n); err == nil {
					err = u.push(t)
				}
			}
		case opTuple:
			var items []any
			if items, err = u.popMark(); err == nil {
				if err = u.count(len(items)); err == nil {
					err = u.push(pyTuple(items))
				}
			}
		case opList:
			var items []any
			if items, err = u.popMark(); err == nil {
				if err = u.count(len(items)); err == nil {
					err = u.push(&pyList{items: items})
				}
			}
		case opDict:
			var items []any
			if items, err = u.popMark(); err == nil {
				if len(items)%2 != 0 {
					err = u.fail("DICT with an odd number of items")
					break
				}
				d := newDict()
				for i := 0; i < len(items) && err == nil; i += 2 {
					err = u.setItem(d, items[i], items[i+1])
				}
				if err == nil {
					err = u.push(d)
				}
			}
		case opSetItem:
			var k, v, d any
			if v, err = u.pop(); err != nil {
				break
			}
			if k, err = u.pop(); err != nil {
				break
			}
			if d, err = u.top(); err == nil {
				err = u.setItem(d, k, v)
			}
		case opSetItems:
			var items []any
			if items, err = u.popMark(); err != nil {
				break
			}
			if len(items)%2 != 0 {
				err = u.fail("SETITEMS with an odd number of items")
				break
			}
			var d any
			if d, err = u.top(); err != nil {
				break
			}
			for i := 0; i < len(items) && err == nil; i += 2 {
				err = u.setItem(d, items[i], items[i+1])
			}
		case opAppend:
			var v, l any
			if v, err = u.pop(); err != nil {
				break
			}
			if l, err = u.top(); err == nil {
				err = u.appendTo(l, v)
			}
		case opAppends:
			var items []any
			if items, err = u.popMark(); err != nil {
				break
			}
			var l any
			if l, err = u.top(); err == nil {
				err = u.appendTo(l, items...)
			}
		case opBinPut:
			var k int
			if k, err = u.u8(); err == nil {
				err = u.memoPut(uint32(k))
			}
		case opLongBinPut:
			var k uint32
			if k, err = u.u32(); err == nil {
				err = u.memoPut(k)
			}
		case opMemoize:
			err = u.memoPut(uint32(len(u.memo)))
		case opBinGet:
			var k int
			if k, err = u.u8(); err == nil {
				err = u.memoGet(uint32(k))
			}
		case opLongBinGet:
			var k uint32
			if k, err = u.u32(); err == nil {
				err = u.memoGet(k)
			}
		case opGlobal:
			var module, name string
			if module, err = u.line(); err != nil {
				break
			}
			if name, err = u.line(); err == nil {
				err = u.global(module, name)
			}
		case opStackGlobal:
			var m, n any
			if n, err = u.pop(); err != nil {
				break
			}
			if m, err = u.pop(); err != nil {
				break
			}
			ms, ok1 := m.(string)
			ns, ok2 := n.(string)
			if !ok1 || !ok2 {
				err = u.fail("STACK_GLOBAL on %s and %s, not two strings", typeName(m), typeName(n))
				break
			}
			err = u.global(ms, ns)
		case opBinPersID:
			var pid any
			if pid, err = u.pop(); err != nil {
				break
			}
			if u.persistentLoad == nil {
				err = u.fail("persistent id in a pickle that may not have one")
				break
			}
			var v any
			if v, err = u.persistentLoad(pid, int64(u.opOff)); err != nil {
				err = &pickleError{off: u.opOff, msg: err.Error(), unsupported: errors.Is(err, tensor.ErrUnsupported)}
				break
			}
			err = u.push(v)
		case opReduce:
			var args, fn any
			if args, err = u.pop(); err != nil {
				break
			}
			if fn, err = u.pop(); err != nil {
				break
			}
			var v any
			if v, err = u.call(fn, args); err == nil {
				err = u.push(v)
			}
		case opNewObj:
			var args, cls any
			if args, err = u.pop(); err != nil {
				break
			}
			if cls, err = u.pop(); err != nil {
				break
			}
			var v any
			if v, err = u.newObj(cls, args); err == nil {
				err = u.push(v)
			}
		case opNewObjEx:
			var kwargs, args, cls any
			if kwargs, err = u.pop(); err != nil {
				break
			}
			if args, err = u.pop(); err != nil {
				break
			}
			if cls, err = u.pop(); err != nil {
				break
			}
			if d, ok := kwargs.(*pyDict); !ok || len(d.keys) != 0 {
				if _, refused := kwargs.(*pyRefused); !refused {
					err = u.fail("NEWOBJ_EX with keyword arguments")
					break
				}
			}
			var v any
			if v, err = u.newObj(cls, args); err == nil {
				err = u.push(v)
			}
		case opBuild:
			var state, obj any
			if state, err = u.pop(); err != nil {
				break
			}
			if obj, err = u.top(); err == nil {
				err = u.build(obj, state)
			}
		default:
			err = u.fail("opcode 0x%02x is not one tfconv reads in a checkpoint", op)
		}
		if err != nil {
			return nil, err
		}
	}
}

// long converts a LONG payload (little-endian two's complement) to int64
// when it fits, else keeps the bytes.
func long(b []byte) any {
	if len(b) == 0 {
		return int64(0)
	}
	if len(b) <= 8 {
		var v uint64
		for i := len(b) - 1; i >= 0; i-- {
			v = v<<8 | uint64(b[i])
		}
		if b[len(b)-1]&0x80 != 0 && len(b) < 8 {
			v |= ^uint64(0) << (8 * len(b))
		}
		return int64(v)
	}
	return pyLong(append([]byte(nil), b...))
}

// call runs REDUCE: fn(*args) for an allowed fn.
func (u *unpickler) call(fn, args any) (any, error) {
	if r, ok := fn.(*pyRefused); ok {
		return r, nil
	}
	if r, ok := args.(*pyRefused); ok {
		return r, nil
	}
	g, ok := fn.(*pyGlobal)
	if !ok {
		return nil, u.fail("REDUCE calls %s, not a global", typeName(fn))
	}
	a, ok := args.(pyTuple)
	if !ok {
		return nil, u.fail("REDUCE on %s with arguments %s, not a tuple", g, typeName(args))
	}
	switch g.kind {
	case gOrderedDict:
		if len(a) != 0 {
			return nil, u.fail("collections.OrderedDict called with %d arguments (tfconv reads only the empty call torch writes)", len(a))
		}
		if err := u.count(1); err != nil {
			return nil, err
		}
		return newDict(), nil
	case gRebuildTensorV2, gRebuildTensor, gRebuildTensorV3:
		return u.rebuildTensor(g, a)
	case gRebuildParameter, gRebuildParameterState:
		// (data, requires_grad, backward_hooks[, state]): the parameter is
		// its data.
		want := 3
		if g.kind == gRebuildParameterState {
			want = 4
		}
		if len(a) != want {
			return nil, u.fail("%s called with %d arguments, want %d", g, len(a), want)
		}
		if _, ok := a[0].(*rebuilt); !ok {
			return nil, u.fail("%s called on %s, not a tensor", g, typeName(a[0]))
		}
		return a[0], nil
	}
	return nil, u.fail("%s cannot be called", g)
}

func (u *unpickler) newObj(cls, args any) (any, error) {
	if r, ok := cls.(*pyRefused); ok {
		return r, nil
	}
	g, ok := cls.(*pyGlobal)
	if !ok || g.kind != gOrderedDict {
		return nil, u.fail("NEWOBJ on %s (tfconv makes only collections.OrderedDict objects)", typeName(cls))
	}
	if a, ok := args.(pyTuple); !ok || len(a) != 0 {
		return nil, u.fail("NEWOBJ of collections.OrderedDict with arguments")
	}
	if err := u.count(1); err != nil {
		return nil, err
	}
	return newDict(), nil
}

// build runs BUILD. torch's OrderedDict state dicts carry their _metadata
// (per-module versions) as instance state, which tfconv does not need.
func (u *unpickler) build(obj, state any) error {
	switch obj.(type) {
	case *pyDict, *pyRefused:
		return nil
	case *rebuilt:
		// A tensor's __setstate__ state (torch 1.x wrote (None, grad...)
		// for some tensors); it does not change the data.
		return nil
	}
	return u.fail("BUILD on %s", typeName(obj))
}

func (g *pyGlobal) String() string { return g.module + "." + g.name }

// typeName describes a value for errors, without its content.
func typeName(v any) string {
	switch v := v.(type) {
	case pyNone:
		return "None"
	case bool:
		return "a bool"
	case int64, pyLong:
		return "an int"
	case float64:
		return "a float"
	case string:
		return "a string"
	case pyBytes:
		return "bytes"
	case pyTuple:
		return "a tuple of " + strconv.Itoa(len(v))
	case *pyList:
		return "a list"
	case *pyDict:
		return "a dict"
	case *pyGlobal:
		return "global " + strconv.Quote(v.String())
	case *pyRefused:
		return "a refused global"
	case *storageRef:
		return "a storage"
	case *rebuilt:
		return "a tensor"
	}
	return fmt.Sprintf("%T", v)
}
