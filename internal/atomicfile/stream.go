package atomicfile

import (
	"errors"
	"io"
	"os"

	"github.com/tfconv/tfconv/internal/directio"
)

// tryDirect is false in tests of the ordinary path.
var tryDirect = true

// Stream writes a File front to back through two buffers (directio.BufSize):
// while a background goroutine writes one, the caller fills the other.
// Where the file system takes it, the buffers go to the device with
// O_DIRECT (package directio), bypassing the page cache; elsewhere they are
// written the ordinary way.
//
// Close writes what is left and must be called before Commit; it leaves
// the file open. A write error is returned by the next Write or by Close.
type Stream struct {
	f      *os.File
	direct bool // O_DIRECT is set on f
	cur    []byte
	free   chan []byte
	work   chan []byte
	done   chan struct{}
	err    error // set by the writer goroutine; read after done or through errc
	errc   chan error
	size   int64
	closed bool
}

// Stream returns a Stream writing to f from its current offset, which must
// be 0 (a new File). Commit closes it if the caller has not; so does Abort.
func (f *File) Stream() *Stream {
	s := &Stream{f: f.File, free: make(chan []byte, 2), work: make(chan []byte, 1),
		done: make(chan struct{}), errc: make(chan error, 1)}
	s.direct = tryDirect && directio.Set(f.File, true)
	s.free <- directio.GetBuf()[:0]
	s.cur = directio.GetBuf()[:0]
	go s.writer()
	f.stream = s
	return s
}

// writer writes the buffers sent on work, in order, and returns each to
// free. After the first error it only returns them.
func (s *Stream) writer() {
	defer close(s.done)
	for b := range s.work {
		if n := len(b); s.direct && n%directio.Align != 0 {
			// The last buffer: O_DIRECT writes whole blocks; Close
			// truncates the padding away.
			padded := (n + directio.Align - 1) &^ (directio.Align - 1)
			b = b[:padded]
			clear(b[n:])
		}
		if s.err == nil {
			var err error
			if s.direct, err = directio.Write(s.f, b, s.direct); err != nil {
				s.err = err
				s.errc <- err
			}
		}
		s.free <- b[:0]
	}
}

// failed returns the writer's error, if it has reported one.
func (s *Stream) failed() error {
	select {
	case err := <-s.errc:
		s.errc <- err
		return err
	default:
		return nil
	}
}

// Write buffers p, handing each full buffer to the writer goroutine.
func (s *Stream) Write(p []byte) (int, error) {
	if s.closed {
		return 0, errors.New("atomicfile: write to a closed stream")
	}
	if err := s.failed(); err != nil {
		return 0, err
	}
	n := len(p)
	for len(p) > 0 {
		k := copy(s.cur[len(s.cur):cap(s.cur)], p)
		s.cur = s.cur[:len(s.cur)+k]
		p = p[k:]
		if len(s.cur) == cap(s.cur) {
			s.work <- s.cur
			s.cur = <-s.free
		}
	}
	s.size += int64(n)
	return n, nil
}

// Close writes the last, partial buffer, waits for the writer and leaves
// the file at exactly the bytes written, its O_DIRECT flag cleared. With
// O_DIRECT the last buffer is written padded to a whole block and the file
// truncated back.
func (s *Stream) Close() error {
	if s.closed {
		return s.err
	}
	s.closed = true
	if len(s.cur) > 0 {
		s.work <- s.cur
	}
	close(s.work)
	<-s.done
	// The buffers go now, not at Commit: a split set's Group keeps every
	// shard's File until then, and 16 MiB a shard would add up. The
	// writer has stopped, so both are back in free, for the next shard.
	s.cur = nil
	for len(s.free) > 0 {
		directio.PutBuf(<-s.free)
	}
	if s.err != nil {
		return s.err
	}
	if s.direct {
		directio.Set(s.f, false)
	}
	if st, err := s.f.Stat(); err == nil && st.Size() != s.size {
		if err := s.f.Truncate(s.size); err != nil {
			return err
		}
		if _, err := s.f.Seek(s.size, io.SeekStart); err != nil {
			return err
		}
	}
	return nil
}
