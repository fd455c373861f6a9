package pytorch

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/internal/openfile"
	"github.com/tfconv/tfconv/tensor"
)

// Container is the on-disk layout of a checkpoint.
type Container string

// The containers torch.save writes.
const (
	Zip    Container = "zip"    // torch ≥ 1.6 default
	Legacy Container = "legacy" // _use_new_zipfile_serialization=False
)

// Magic is the start of a legacy checkpoint: PROTO 2, then LONG1 of the 10
// bytes of torch's MAGIC_NUMBER 0x1950a86a20f9469cfc6c, little-endian.
var Magic = []byte("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19")

// ZipMagic is the start of a zip archive (a local file header).
var ZipMagic = []byte("PK\x03\x04")

// Sniff reports whether head, a file's first bytes, starts a torch.save
// file: a zip archive or the legacy format's magic number.
func Sniff(head []byte) bool {
	return bytes.HasPrefix(head, ZipMagic) || bytes.HasPrefix(head, Magic)
}

// legacyProtocol is torch's PROTOCOL_VERSION, the second legacy pickle.
const legacyProtocol = 1001

// File is an opened PyTorch checkpoint: the state dict's tensors, in the
// dict's order, read lazily from their storages.
type File struct {
	Name      string    // path given to Open, "" for NewFile
	Size      int64     // file size
	Container Container // Zip or Legacy
	// Prefix is the zip records' folder ("archive/", "pytorch_model/"), ""
	// for a legacy file.
	Prefix string
	// PickleOffset is the absolute offset of the state dict's pickle
	// (data.pkl's bytes in a zip).
	PickleOffset int64
	Tensors      []Tensor // the state dict's order

	byName map[string]int
	closer io.Closer
}

// Tensor is one entry of the state dict: a view of a storage. Info.Offset
// is the absolute offset of the view's first element; Info.Size is the
// byte size of the tensor made contiguous.
type Tensor struct {
	tensor.Info
	Storage       string  // storage key (zip record data/<key>); tied tensors share it
	StorageOffset int64   // in elements
	Strides       []int64 // in elements, outermost first
	// Contiguous is set when the bytes are one run of the storage, read in
	// place; otherwise Open gathers them into memory (Size bytes).
	Contiguous bool

	r        io.ReaderAt
	base     int64 // absolute offset of the storage's first byte
	file     string
	elemSize int64
}

// Open returns a reader of the tensor's bytes, row-major and contiguous.
// A contiguous view reads the file in place; any other view is gathered
// into a buffer of the tensor's size when first read. Each call gives an
// independent reader.
func (t *Tensor) Open() *io.SectionReader {
	if t.Contiguous {
		return io.NewSectionReader(t.r, t.Offset, t.Size)
	}
	return io.NewSectionReader(&gather{t: t}, 0, t.Size)
}

// Open opens the named file and reads its pickle. On failure the file is
// closed.
func Open(path string) (*File, error) {
	f, c, err := openfile.Open(path, "pytorch", func(r io.ReaderAt, size int64) (*File, error) { return newFile(r, size, path) })
	if err != nil {
		return nil, err
	}
	f.closer = c
	return f, nil
}

// NewFile reads a checkpoint of the given size through r: the zip
// directory or the legacy pickles, never the tensor data.
func NewFile(r io.ReaderAt, size int64) (*File, error) {
	return newFile(r, size, "")
}

// Tensor returns the tensor with the given name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	i, ok := f.byName[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// Close closes the file opened by Open; it does nothing for a File made by
// NewFile.
func (f *File) Close() error { return openfile.Close(&f.closer) }

// RefusedGlobal is a global a pickle names that is not on the allow-list.
type RefusedGlobal struct {
	Module, Name string
	Offset       int64 // absolute offset of the GLOBAL/STACK_GLOBAL opcode in the file
	PickleOffset int64 // its offset in the pickle (data.pkl)
}

// Scan runs the same reading as NewFile in a mode that does not stop at a
// disallowed global: each is recorded, stands in for whatever is made from
// it, and the pickle goes on. It returns every disallowed global and the
// error NewFile gives (nil when the file reads cleanly). Nothing the
// pickle names is executed in either mode.
func Scan(r io.ReaderAt, size int64, name string) ([]RefusedGlobal, error) {
	d := &decoder{r: r, size: size, name: name, lenient: true}
	_, err := d.decode()
	if len(d.refused) > 0 {
		// The lenient walk went past refused globals that the strict one
		// stops at; report what the strict reader says.
		_, err = newFile(r, size, name)
	}
	return d.refused, err
}

type decoder struct {
	r       io.ReaderAt
	size    int64
	name    string
	lenient bool
	refused []RefusedGlobal

	// where the pickle being run sits, for errors
	pklBase int64
	pklName string
}

func newFile(r io.ReaderAt, size int64, name string) (*File, error) {
	d := &decoder{r: r, size: size, name: name}
	return d.decode()
}

func (d *decoder) errAt(off int64, item, format string, args ...any) *tensor.FormatError {
	return &tensor.FormatError{Format: "pytorch", File: d.name, Offset: off, Item: item, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) unsupportedAt(off int64, item, format string, args ...any) *tensor.FormatError {
	e := d.errAt(off, item, format, args...)
	e.Unsupported = true
	return e
}

// pickleErr places a pickle machine error in the file.
func (d *decoder) pickleErr(err error) error {
	var pe *pickleError
	if !errors.As(err, &pe) {
		return err
	}
	item := d.pklName + " offset " + strconv.Itoa(pe.off)
	if d.pklName == "" {
		item = ""
	}
	e := d.errAt(d.pklBase+int64(pe.off), item, "%s", pe.msg)
	e.Unsupported = pe.unsupported
	return e
}

func (d *decoder) decode() (*File, error) {
	head := make([]byte, len(Magic))
	n, err := d.r.ReadAt(head, 0)
	if n < len(head) && err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("pytorch: %s: %w", d.name, err)
	}
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, ZipMagic):
		return d.decodeZip()
	case bytes.Equal(head, Magic):
		return d.decodeLegacy()
	case len(head) >= 2 && head[0] == opProto:
		return nil, d.errAt(0, "", "a pickle that does not start with torch's magic number: not a torch.save checkpoint")
	}
	return nil, d.errAt(0, "", "neither a zip archive nor a legacy torch.save pickle (first bytes %q)", head)
}

// readAt reads len(b) bytes at off; a short read is a truncated file.
func (d *decoder) readAt(b []byte, off int64, what string) error {
	n, err := d.r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return d.errAt(off, "", "file ends inside %s (%d of %d bytes)", what, n, len(b))
	}
	return fmt.Errorf("pytorch: %s: reading %s at %d: %w", d.name, what, off, err)
}

// --- zip ---

func (d *decoder) decodeZip() (*File, error) {
	zr, err := zip.NewReader(d.r, d.size)
	if err != nil {
		// The zip directory is found from the end of the file.
		return nil, d.errAt(d.size, "", "zip archive: %v", err)
	}
	var pkl *zip.File
	byName := map[string]*zip.File{}
	for _, zf := range zr.File {
		if _, dup := byName[zf.Name]; dup {
			return nil, d.errAt(-1, "record "+strconv.Quote(zf.Name), "appears twice in the zip directory")
		}
		byName[zf.Name] = zf
		if zf.Name == "data.pkl" || strings.HasSuffix(zf.Name, "/data.pkl") && strings.Count(zf.Name, "/") == 1 {
			if pkl != nil {
				return nil, d.errAt(-1, "", "two data.pkl records (%s and %s)", pkl.Name, zf.Name)
			}
			pkl = zf
		}
	}
	if pkl == nil {
		return nil, d.errAt(-1, "", "zip archive without a data.pkl record: not a torch.save checkpoint")
	}
	prefix := strings.TrimSuffix(pkl.Name, "data.pkl")
	if bo, ok := byName[prefix+"byteorder"]; ok {
		b, err := d.smallRecord(bo, 16)
		if err != nil {
			return nil, err
		}
		if s := string(b); s != "little" {
			return nil, d.unsupportedAt(-1, "record "+strconv.Quote(bo.Name), "byte order %q (tfconv reads little-endian checkpoints)", s)
		}
	}
	off, n, err := d.record(pkl)
	if err != nil {
		return nil, err
	}
	if n > MaxPickleLen {
		return nil, d.errAt(off, "record "+strconv.Quote(pkl.Name), "data.pkl is %d bytes, above the limit of %d", n, MaxPickleLen)
	}
	buf := make([]byte, n)
	if err := d.readAt(buf, off, "data.pkl"); err != nil {
		return nil, err
	}
	if crc32.ChecksumIEEE(buf) != pkl.CRC32 {
		return nil, d.errAt(off, "record "+strconv.Quote(pkl.Name), "CRC-32 of data.pkl does not match the zip directory")
	}
	d.pklBase, d.pklName = off, "data.pkl"
	storages := map[string]*storageRef{}
	var order []*storageRef
	u := &unpickler{buf: buf, lenient: d.lenient, persistentLoad: persistentID(storages, &order, false)}
	res, err := u.run()
	d.noteRefused(u)
	if err != nil {
		return nil, d.pickleErr(err)
	}
	if u.pos != len(buf) {
		return nil, d.errAt(off+int64(u.pos), "data.pkl offset "+strconv.Itoa(u.pos), "%d bytes after the pickle's STOP", len(buf)-u.pos)
	}
	for _, s := range order {
		zf, ok := byName[prefix+"data/"+s.key]
		if !ok {
			return nil, d.errAt(off+s.pos, "storage "+strconv.Quote(s.key), "no record %sdata/%s in the archive", prefix, s.key)
		}
		roff, rlen, err := d.record(zf)
		if err != nil {
			return nil, err
		}
		s.dataOff, s.dataLen, s.placed = roff, rlen, true
	}
	f := &File{Name: d.name, Size: d.size, Container: Zip, Prefix: prefix, PickleOffset: off}
	if err := d.tensors(f, res); err != nil {
		return nil, err
	}
	return f, nil
}

// record returns where a stored record's bytes are, checked against the
// file's size; compressed records are refused.
func (d *decoder) record(zf *zip.File) (int64, int64, error) {
	item := "record " + strconv.Quote(zf.Name)
	if zf.Method != zip.Store {
		off, _ := zf.DataOffset()
		return 0, 0, d.unsupportedAt(max(off, 0), item, "compressed (zip method %d): torch.save stores records uncompressed and tfconv reads them in place", zf.Method)
	}
	if zf.CompressedSize64 != zf.UncompressedSize64 {
		return 0, 0, d.errAt(-1, item, "stored record with compressed size %d and size %d", zf.CompressedSize64, zf.UncompressedSize64)
	}
	off, err := zf.DataOffset()
	if err != nil {
		return 0, 0, d.errAt(-1, item, "local header: %v", err)
	}
	if zf.UncompressedSize64 > uint64(d.size) || off < 0 || off > d.size-int64(zf.UncompressedSize64) {
		return 0, 0, d.errAt(off, item, "%d bytes at offset %d run past the end of the %d-byte file", zf.UncompressedSize64, off, d.size)
	}
	return off, int64(zf.UncompressedSize64), nil
}

func (d *decoder) smallRecord(zf *zip.File, max int64) ([]byte, error) {
	off, n, err := d.record(zf)
	if err != nil {
		return nil, err
	}
	if n > max {
		return nil, d.errAt(off, "record "+strconv.Quote(zf.Name), "%d bytes, above %d", n, max)
	}
	b := make([]byte, n)
	return b, d.readAt(b, off, zf.Name)
}

func (d *decoder) noteRefused(u *unpickler) {
	for _, g := range u.refused {
		d.refused = append(d.refused, RefusedGlobal{Module: g.module, Name: g.name, Offset: d.pklBase + g.off, PickleOffset: g.off})
	}
	u.refused = nil
}

// --- legacy ---

// legacyChunk is the first read of a legacy file's pickles; it grows
// fourfold up to MaxPickleLen while the pickles run past it.
const legacyChunk = 1 << 20

func (d *decoder) decodeLegacy() (*File, error) {
	for n := int64(legacyChunk); ; n *= 4 {
		n = min(n, d.size, MaxPickleLen)
		buf := make([]byte, n)
		if err := d.readAt(buf, 0, "the pickles"); err != nil {
			return nil, err
		}
		f, err := d.legacyPickles(buf)
		var pe *pickleError
		if errors.As(err, &pe) && pe.truncated && n < min(d.size, MaxPickleLen) {
			d.refused = nil
			continue
		}
		if err != nil {
			return nil, d.pickleErr(err)
		}
		return f, nil
	}
}

func (d *decoder) legacyPickles(buf []byte) (*File, error) {
	d.pklBase, d.pklName = 0, ""
	pos := 0
	next := func(pl func(any, int64) (any, error)) (any, *unpickler, error) {
		u := &unpickler{buf: buf, pos: pos, lenient: d.lenient, persistentLoad: pl}
		v, err := u.run()
		d.noteRefused(u)
		pos = u.pos
		return v, u, err
	}
	magic, _, err := next(nil)
	if err != nil {
		return nil, err
	}
	if m, ok := magic.(pyLong); !ok || !bytes.Equal(m, Magic[4:]) {
		return nil, &pickleError{off: 0, msg: "not torch's magic number"}
	}
	start := pos
	proto, _, err := next(nil)
	if err != nil {
		return nil, err
	}
	if p, ok := proto.(int64); !ok || p != legacyProtocol {
		return nil, &pickleError{off: start, msg: fmt.Sprintf("protocol version %v, want %d", proto, legacyProtocol), unsupported: true}
	}
	start = pos
	info, _, err := next(nil)
	if err != nil {
		return nil, err
	}
	if di, ok := info.(*pyDict); ok {
		if i, ok := di.idx["little_endian"]; ok && di.vals[i] == false {
			return nil, &pickleError{off: start, msg: "a big-endian checkpoint (sys_info little_endian=False)", unsupported: true}
		}
	} else {
		return nil, &pickleError{off: start, msg: "sys_info is " + typeName(info) + ", not a dict"}
	}
	mainOff := int64(pos)
	storages := map[string]*storageRef{}
	var order []*storageRef
	res, _, err := next(persistentID(storages, &order, true))
	if err != nil {
		return nil, err
	}
	start = pos
	keys, _, err := next(nil)
	if err != nil {
		return nil, err
	}
	kl, ok := keys.(*pyList)
	if !ok {
		return nil, &pickleError{off: start, msg: "storage key list is " + typeName(keys) + ", not a list"}
	}
	// The storages follow, in the list's order: an 8-byte little-endian
	// element count, then the bytes.
	off := int64(pos)
	seen := map[string]bool{}
	for _, k := range kl.items {
		key, ok := k.(string)
		if !ok {
			return nil, &pickleError{off: start, msg: "storage key list holds " + typeName(k)}
		}
		s, ok := storages[key]
		item := "storage " + strconv.Quote(key)
		if !ok || seen[key] {
			return nil, d.errAt(off, item, "listed for the data section but not named by the state dict (or listed twice)")
		}
		seen[key] = true
		var nb [8]byte
		if err := d.readAt(nb[:], off, "storage "+strconv.Quote(key)+"'s element count"); err != nil {
			return nil, err
		}
		if c := binary.LittleEndian.Uint64(nb[:]); c != uint64(s.numel) {
			return nil, d.errAt(off, item, "element count %d, the state dict says %d", c, s.numel)
		}
		off += 8
		if s.nbytes > d.size-off {
			if name, ok := firstTensorOf(res, s); ok {
				item = "tensor " + strconv.Quote(name) + ": " + item
			}
			return nil, d.errAt(off, item, "%d bytes (%d × %s) run past the end of the %d-byte file", s.nbytes, s.numel, s.dtype, d.size)
		}
		s.dataOff, s.dataLen, s.placed = off, s.nbytes, true
		off += s.nbytes
	}
	for _, s := range order {
		if !s.placed {
			return nil, d.errAt(s.pos, "storage "+strconv.Quote(s.key), "not in the list of stored storages")
		}
	}
	if off != d.size {
		return nil, d.errAt(off, "", "%d bytes after the last storage", d.size-off)
	}
	f := &File{Name: d.name, Size: d.size, Container: Legacy, PickleOffset: mainOff}
	if err := d.tensors(f, res); err != nil {
		return nil, err
	}
	return f, nil
}

// --- the state dict ---

// firstTensorOf names the first state dict entry that views s.
func firstTensorOf(res any, s *storageRef) (string, bool) {
	if dict, ok := res.(*pyDict); ok {
		for i, v := range dict.vals {
			if r, ok := v.(*rebuilt); ok && r.st == s {
				name, ok := dict.keys[i].(string)
				return name, ok
			}
		}
	}
	return "", false
}

// tensors lists the state dict's entries. The top-level object must be a
// dict (an OrderedDict) of tensors.
func (d *decoder) tensors(f *File, res any) error {
	if r, ok := res.(*pyRefused); ok {
		return d.errAt(d.pklBase+r.g.off, "", "the pickle's result is made by global %q, which is not allowed", r.g.String())
	}
	dict, ok := res.(*pyDict)
	if !ok {
		return d.unsupportedAt(f.PickleOffset, "", "the pickle holds %s, not a state dict (a dict of tensors)", typeName(res))
	}
	f.byName = make(map[string]int, len(dict.keys))
	for i, k := range dict.keys {
		name, ok := k.(string)
		if !ok {
			return d.unsupportedAt(f.PickleOffset, "", "state dict key %d is %s, not a string", i, typeName(k))
		}
		item := "tensor " + strconv.Quote(name)
		r, ok := dict.vals[i].(*rebuilt)
		if !ok {
			return d.unsupportedAt(f.PickleOffset, "key "+strconv.Quote(name), "holds %s, not a tensor (tfconv reads state dicts: a flat dict of tensors)", typeName(dict.vals[i]))
		}
		if r.dtype != r.st.dtype && r.st.dtype != tensor.U8 {
			return d.errAt(d.pklBase+r.pos, item, "dtype %s over a %s storage", r.dtype, r.st.dtype)
		}
		span, err := r.span()
		if err != nil {
			return d.errAt(d.pklBase+r.pos, item, "%v", err)
		}
		if r.st.dataLen < r.st.nbytes {
			return d.errAt(r.st.dataOff, item, "storage %q: record is %d bytes, the storage needs %d (%d × %s)",
				r.st.key, r.st.dataLen, r.st.nbytes, r.st.numel, r.st.dtype)
		}
		if span[1] > r.st.nbytes {
			return d.errAt(d.pklBase+r.pos, item, "view (offset %d, size %v, stride %v) needs %d bytes of storage %q, which holds %d",
				r.offset, r.shape, r.stride, span[1], r.st.key, r.st.nbytes)
		}
		size, err := r.dtype.ShapeBytes(r.shape)
		if err != nil {
			return d.errAt(d.pklBase+r.pos, item, "%v", err)
		}
		contiguous := r.contiguous()
		if !contiguous && size > r.st.dataLen {
			// Only views that read elements more than once (stride 0, as
			// expand() makes) are larger than their storage; gathering one
			// would allocate more than the file holds.
			return d.unsupportedAt(d.pklBase+r.pos, item, "view (size %v, stride %v) is %d bytes, more than its storage's %d: it repeats elements",
				r.shape, r.stride, size, r.st.dataLen)
		}
		t := Tensor{
			Info: tensor.Info{Name: name, DType: r.dtype, Shape: r.shape.Clone(),
				Offset: r.st.dataOff + span[0], Size: size},
			Storage: r.st.key, StorageOffset: r.offset, Strides: append([]int64(nil), r.stride...),
			Contiguous: contiguous,
			r:          d.r, base: r.st.dataOff, file: d.name, elemSize: r.dtype.BlockBytes(),
		}
		if _, dup := f.byName[name]; dup {
			// A dict cannot hold a key twice; a pickle can only repeat one
			// through SETITEM, which replaced the value.
			continue
		}
		f.byName[name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	return nil
}
