package cgi

import (
	"github.com/sluice-server/sluice/engine"

	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
)

// spoolMem is how much of a chunked request body a CGI holds in memory;
// a longer body goes to an unlinked temporary file.
const spoolMem = 64 << 10

// Spool is a chunked request body read whole, as CGI and FastCGI need
// its length (CONTENT_LENGTH) before the program starts: in a pooled
// buffer of 64 KiB, or, when longer, in an unlinked temporary file, so a
// request holds at most 64 KiB of memory whatever its body. Close
// releases either. A Spool is used by one goroutine at a time.
type Spool struct {
	buf  *[]byte  // the pooled buffer, until the body is in a file or close
	mem  []byte   // the body, when it is in buf
	file *os.File // the body, when it is not, at offset 0
	disk int64    // bytes written to file
	n    int64    // the body's length
}

// spoolStats counts what spools hold now, for tests.
var spoolStats struct {
	mem   atomic.Int64 // bytes of memory
	files atomic.Int64 // temporary files open
	disk  atomic.Int64 // bytes in them
}

// spoolFile writes to a spool's file, counting the bytes.
type spoolFile struct{ s *Spool }

func (w spoolFile) Write(p []byte) (int, error) {
	n, err := w.s.file.Write(p)
	w.s.disk += int64(n)
	spoolStats.disk.Add(int64(n))
	return n, err
}

var spoolBufs = sync.Pool{New: func() any { b := make([]byte, spoolMem); return &b }}

// ErrBodyTooLarge is a body over SpoolBody's limit (Options.MaxBody).
var ErrBodyTooLarge = errors.New("cgi: request body too large")

// SpoolBody reads body to its end into a Spool. A body over limit
// bytes gives ErrBodyTooLarge; a failing read gives its error (the
// client went away, was too slow, or sent more than the server's limit:
// *http.MaxBytesError). Nothing is kept on error.
func SpoolBody(body io.Reader, limit int64) (_ *Spool, err error) {
	s := &Spool{buf: spoolBufs.Get().(*[]byte)}
	spoolStats.mem.Add(spoolMem)
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	b := *s.buf
	n := 0
	for n < len(b) {
		m, rerr := body.Read(b[n:])
		n += m
		if int64(n) > limit {
			return nil, ErrBodyTooLarge
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
	if s.file, err = tempFile(); err != nil {
		return nil, err
	}
	spoolStats.files.Add(1)
	if _, err := (spoolFile{s}).Write(b[:n]); err != nil {
		return nil, err
	}
	s.n = int64(n)
	s.putBuf()
	copyBuf := bufs.Get().(*[]byte)
	defer bufs.Put(copyBuf)
	m, err := io.CopyBuffer(spoolFile{s}, io.LimitReader(body, limit-s.n+1), *copyBuf)
	s.n += m
	switch {
	case err != nil:
		return nil, err
	case s.n > limit:
		return nil, ErrBodyTooLarge
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return s, nil
}

// BodyTooLarge reports whether err, from SpoolBody or a request body's
// Read, is a body over the component's or the server's limit: a 413.
func BodyTooLarge(err error) bool {
	var tooBig *http.MaxBytesError
	return err == ErrBodyTooLarge || errors.As(err, &tooBig)
}

// Len returns the body's length.
func (s *Spool) Len() int64 { return s.n }

// Reader returns a reader of the body from its start; each call starts
// again. It is valid until Close.
func (s *Spool) Reader() io.Reader {
	if s.file != nil {
		return io.NewSectionReader(s.file, 0, s.n)
	}
	return bytes.NewReader(s.mem)
}

func (s *Spool) putBuf() {
	if s.buf != nil {
		spoolBufs.Put(s.buf)
		spoolStats.mem.Add(-spoolMem)
		s.buf, s.mem = nil, nil
	}
}

// Close releases the spool's memory and file (a program given the file
// has a descriptor of its own). It may be called more than once.
func (s *Spool) Close() {
	s.putBuf()
	if s.file != nil {
		s.file.Close()
		spoolStats.files.Add(-1)
		spoolStats.disk.Add(-s.disk)
		s.file = nil
	}
}

// ReadBody readies r's body for a gateway that must send its length
// (CONTENT_LENGTH): one with a Content-Length is r.Body as it is, read
// by the caller up to length; a chunked one is read whole into a Spool
// of at most limit bytes (SpoolBody). It returns the body (nil when
// there is none), its length, and the Spool, which the caller closes
// (nil unless the body was chunked and not empty; the body then reads
// it). Its errors are SpoolBody's: BodyTooLarge (answer 413), or the
// client's, which went away or was too slow.
func ReadBody(r *engine.Request, limit int64) (body io.Reader, length int64, spool *Spool, err error) {
	switch length = r.ContentLength; {
	case length > 0:
		return r.Body, length, nil, nil
	case length == 0:
		return nil, 0, nil, nil
	}
	if spool, err = SpoolBody(r.Body, limit); err != nil {
		return nil, 0, nil, err
	}
	if spool.Len() == 0 {
		spool.Close()
		return nil, 0, nil, nil
	}
	return spool.Reader(), spool.Len(), spool, nil
}
