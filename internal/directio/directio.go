// Package directio reads and writes large files sequentially with O_DIRECT
// where the file system takes it: the data moves between the device and
// the program's buffers without a copy into the page cache. A
// multi-gigabyte output written or verified this way neither evicts what
// the machine has cached (the model being converted, among others) nor
// pays for that copy, which on some virtual machines costs more than the
// disk transfer itself. Where O_DIRECT is refused (other systems, tmpfs,
// some network and FUSE file systems) the same calls do ordinary I/O.
//
// O_DIRECT needs buffers, file offsets and lengths aligned to the device's
// logical block; Align (4096) covers every size Linux devices report.
package directio

import (
	"errors"
	"io"
	"os"
	"sync"
	"unsafe"
)

// Align is the alignment of buffers, offsets and lengths for O_DIRECT.
const Align = 4096

// BufSize is the size of the buffers Scan reads with and atomicfile.Stream
// writes with: long sequential transfers for the device, small beside any
// model.
const BufSize = 8 << 20

// Buf returns n bytes starting at a multiple of Align.
func Buf(n int) []byte {
	b := make([]byte, n+Align)
	off := (Align - int(uintptr(unsafe.Pointer(&b[0]))%Align)) % Align
	return b[off : off+n : off+n]
}

// kept holds BufSize buffers given back with PutBuf, for the next GetBuf:
// a split set's shards, each written through a Stream and read back with
// Scan, reuse the same few buffers instead of leaving 16 MiB of garbage a
// shard (which Go's collector lets pile up to the size of everything live,
// doubling a convert's peak). At most keptMax are kept.
var kept struct {
	sync.Mutex
	bufs [][]byte
}

// keptMax is a Stream's two buffers and a Scan's two.
const keptMax = 4

// GetBuf returns a BufSize buffer starting at a multiple of Align: one
// given back with PutBuf, or a new one.
func GetBuf() []byte {
	kept.Lock()
	defer kept.Unlock()
	if n := len(kept.bufs); n > 0 {
		b := kept.bufs[n-1]
		kept.bufs = kept.bufs[:n-1]
		return b
	}
	return Buf(BufSize)
}

// PutBuf gives back a buffer from GetBuf that nothing uses any more (its
// length is ignored; anything not from GetBuf is left to the collector).
func PutBuf(b []byte) {
	b = b[:cap(b)]
	if len(b) != BufSize || uintptr(unsafe.Pointer(&b[0]))%Align != 0 {
		return
	}
	kept.Lock()
	defer kept.Unlock()
	if len(kept.bufs) < keptMax {
		kept.bufs = append(kept.bufs, b)
	}
}

// Write writes b at f's offset. When f has O_DIRECT set (direct) and the
// file system refuses the write itself (EINVAL), O_DIRECT is cleared and
// the write done the ordinary way; the returned flag says whether O_DIRECT
// is still set.
func Write(f *os.File, b []byte, direct bool) (bool, error) {
	n, err := f.Write(b)
	if err != nil && direct && errors.Is(err, errInvalid) {
		Set(f, false)
		_, err = f.Write(b[n:])
		return false, err
	}
	return direct, err
}

// scanBuffered is set by tests of Scan's ordinary path.
var scanBuffered bool

// Scan reads path's bytes [from, to) front to back and calls fn with
// consecutive pieces of them (off is p's offset in the file; p is valid
// only during the call), reading the next piece while fn runs. It reads
// with O_DIRECT where the file system takes it: the bytes come from the
// device, not from what the page cache holds.
func Scan(path string, from, to int64, fn func(off int64, p []byte) error) error {
	if from >= to {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	direct := !scanBuffered && Set(f, true)
	start := from
	if direct {
		start = from &^ (Align - 1)
	}
	type piece struct {
		off int64
		b   []byte
		err error
	}
	full := make(chan piece, 1)
	free := make(chan []byte, 2)
	free <- GetBuf()
	free <- GetBuf()
	stop := make(chan struct{})
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return err
	}
	go func() {
		defer close(full)
		for off := start; off < to; {
			var b []byte
			select {
			case b = <-free:
			case <-stop:
				return
			}
			// One read(2) a piece: a short count (the end of the file)
			// is taken as it is, never followed by an unaligned read.
			want := min(int64(len(b)), (to-off+Align-1)&^(Align-1))
			n, err := f.Read(b[:want])
			if err != nil && direct && errors.Is(err, errInvalid) {
				direct = false
				Set(f, false)
				n, err = f.Read(b[:want])
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			select {
			case full <- piece{off, b[:n], err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
			off += int64(n)
		}
	}()
	defer func() {
		// Once the reader has stopped (it closes full), the buffers it
		// gave back go to PutBuf; one it held when stopped is left to
		// the collector.
		close(stop)
		for p := range full {
			free <- p.b[:cap(p.b)]
		}
		for len(free) > 0 {
			PutBuf(<-free)
		}
	}()
	next := from
	for p := range full {
		if p.err != nil {
			return p.err
		}
		b, off := p.b, p.off
		if off < next { // the aligned start before from
			b = b[min(int64(len(b)), next-off):]
			off = next
		}
		if end := off + int64(len(b)); end > to {
			b = b[:to-off]
		}
		if len(b) > 0 {
			if err := fn(off, b); err != nil {
				return err
			}
			next = off + int64(len(b))
		}
		free <- p.b[:cap(p.b)]
		if next >= to {
			return nil
		}
	}
	return io.ErrUnexpectedEOF
}
