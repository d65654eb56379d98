package components

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
)

// cgiSpoolMem is how much of a chunked request body a CGI holds in memory;
// a longer body goes to an unlinked temporary file.
const cgiSpoolMem = 64 << 10

// cgiSpool is a chunked request body read whole, as CGI needs its length
// (CONTENT_LENGTH) before the program starts: in a pooled buffer of
// cgiSpoolMem bytes, or, when longer, in an unlinked temporary file, so a
// request holds at most cgiSpoolMem bytes of memory whatever its body.
// close releases either.
type cgiSpool struct {
	buf  *[]byte  // the pooled buffer, until the body is in a file or close
	mem  []byte   // the body, when it is in buf
	file *os.File // the body, when it is not, at offset 0
	disk int64    // bytes written to file
	n    int64    // the body's length
}

// cgiSpoolStats counts what spools hold now, for tests.
var cgiSpoolStats struct {
	mem   atomic.Int64 // bytes of memory
	files atomic.Int64 // temporary files open
	disk  atomic.Int64 // bytes in them
}

// cgiSpoolFile writes to a spool's file, counting the bytes.
type cgiSpoolFile struct{ s *cgiSpool }

func (w cgiSpoolFile) Write(p []byte) (int, error) {
	n, err := w.s.file.Write(p)
	w.s.disk += int64(n)
	cgiSpoolStats.disk.Add(int64(n))
	return n, err
}

var cgiSpoolBufs = sync.Pool{New: func() any { b := make([]byte, cgiSpoolMem); return &b }}

// errCGIBodyTooLarge is a body over CGIOptions.MaxBody.
var errCGIBodyTooLarge = errors.New("cgi: request body too large")

// cgiSpoolBody reads body to its end into a spool. A body over limit
// bytes gives errCGIBodyTooLarge; a failing read gives its error (the
// client went away, was too slow, or sent more than the server's limit:
// *http.MaxBytesError). Nothing is kept on error.
func cgiSpoolBody(body io.Reader, limit int64) (_ *cgiSpool, err error) {
	s := &cgiSpool{buf: cgiSpoolBufs.Get().(*[]byte)}
	cgiSpoolStats.mem.Add(cgiSpoolMem)
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	b := *s.buf
	n := 0
	for n < len(b) {
		m, rerr := body.Read(b[n:])
		n += m
		if int64(n) > limit {
			return nil, errCGIBodyTooLarge
		}
		if rerr == io.EOF {
			s.mem, s.n = b[:n], int64(n)
			return s, nil
		}
		if rerr != nil {
			return nil, rerr
		}
	}

	// Longer than the buffer: into a file.
	if s.file, err = cgiTempFile(); err != nil {
		return nil, err
	}
	cgiSpoolStats.files.Add(1)
	if _, err := (cgiSpoolFile{s}).Write(b[:n]); err != nil {
		return nil, err
	}
	s.n = int64(n)
	s.putBuf()
	copyBuf := cgiBufs.Get().(*[]byte)
	defer cgiBufs.Put(copyBuf)
	m, err := io.CopyBuffer(cgiSpoolFile{s}, io.LimitReader(body, limit-s.n+1), *copyBuf)
	s.n += m
	switch {
	case err != nil:
		return nil, err
	case s.n > limit:
		return nil, errCGIBodyTooLarge
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return s, nil
}

// cgiBodyTooLarge reports whether err is a body over the component's or
// the server's limit.
func cgiBodyTooLarge(err error) bool {
	var tooBig *http.MaxBytesError
	return err == errCGIBodyTooLarge || errors.As(err, &tooBig)
}

func (s *cgiSpool) putBuf() {
	if s.buf != nil {
		cgiSpoolBufs.Put(s.buf)
		cgiSpoolStats.mem.Add(-cgiSpoolMem)
		s.buf, s.mem = nil, nil
	}
}

// close releases the spool's memory and file (the program, if started,
// has a descriptor of its own). It may be called more than once.
func (s *cgiSpool) close() {
	s.putBuf()
	if s.file != nil {
		s.file.Close()
		cgiSpoolStats.files.Add(-1)
		cgiSpoolStats.disk.Add(-s.disk)
		s.file = nil
	}
}
