package engine

import (
	"io"
	"net/http"
	"os"
)

// SendFile implements FileSender. A file that fits in the output buffer is
// read into it with pread(2), so it leaves with its header (and any
// pipelined responses before it) in one write; on Linux a larger one
// follows the header, sent with MSG_MORE, through sendfile(2) (elsewhere
// it too is read into the output buffer, a buffer at a time).
func (w *response) SendFile(f *os.File, offset, n int64) error {
	if w.err != nil {
		return w.err
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if !w.committed {
		if w.hdr.contentLength < 0 && len(w.c.s.bodyBuf) == 0 {
			w.hdr.contentLength = n
		}
		w.commit(false)
	}
	if w.noBody || n == 0 {
		w.written += n
		return nil
	}
	if w.declared >= 0 && w.written+n > w.declared {
		w.err = ErrContentLength
		return w.err
	}
	c, s := w.c, w.c.s
	if !rawSend || w.chunked || c.rc == nil || n <= int64(cap(s.out)-len(s.out)) {
		return w.copyFile(f, offset, n)
	}
	w.written += n
	if err := c.sendFile(f, offset, n); err != nil {
		w.err = err
		c.closeAfter, c.broken = true, true
		return err
	}
	return nil
}

// copyFile sends a file region through the output buffer: read straight
// into its free space, or, for a chunked body, into the session's body
// buffer (free once the header is committed) and framed from there.
func (w *response) copyFile(f *os.File, offset, n int64) error {
	s := w.c.s
	for n > 0 {
		var buf []byte
		if w.chunked {
			buf = s.bodyBuf[:min(n, int64(cap(s.bodyBuf)))]
		} else {
			room := int64(cap(s.out) - len(s.out))
			if room == 0 {
				if err := w.c.flush(); err != nil {
					w.err = err
					return err
				}
				continue
			}
			buf = s.out[len(s.out) : int64(len(s.out))+min(n, room)]
		}
		chunk := int64(len(buf))
		m, err := f.ReadAt(buf, offset)
		if m > 0 {
			if _, werr := w.writeBody(buf[:m]); werr != nil {
				return werr
			}
		}
		if err != nil && !(err == io.EOF && int64(m) == chunk) {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // the file shrank
			}
			w.err = err
			w.c.closeAfter = true
			return err
		}
		offset += int64(m)
		n -= int64(m)
	}
	return nil
}
