package engine

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"

	"golang.org/x/net/http2/hpack"
)

// An HTTP/2 stream's response: the ResponseWriter a handler answers
// through, which frames its header, body and trailer fields as HEADERS
// and DATA.

var (
	_ ResponseWriter = (*h2Stream)(nil)
	_ FileSender     = (*h2Stream)(nil)
	_ GoneNotifier   = (*h2Stream)(nil)
	_ InterimWriter  = (*h2Stream)(nil)
)

const h2OutBufSize = 4 << 10

// Header implements ResponseWriter.
func (st *h2Stream) Header() *Header { return &st.hdr }

// WriteHeader implements ResponseWriter.
func (st *h2Stream) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic("engine: invalid WriteHeader code " + strconv.Itoa(code))
	}
	if st.committed || st.status != 0 {
		return
	}
	if code < 200 {
		if code != 101 { // no protocol switch in HTTP/2 (§8.6)
			st.interim(code, nil)
		}
		return
	}
	st.status = code
	if !bodyAllowed(code) {
		st.noBody = true
	}
}

// WriteInterim implements InterimWriter.
func (st *h2Stream) WriteInterim(code int, fields ...string) error {
	if code < 100 || code > 199 || code == 101 {
		return errors.New("engine: WriteInterim of a status that is not 1xx")
	}
	if st.committed || st.werr != nil {
		return st.werr
	}
	return st.interim(code, fields)
}

// interim sends a 1xx response: with fields (name, value pairs), or with
// the response's header fields (but for 100) when fields is nil.
func (st *h2Stream) interim(code int, fields []string) error {
	if code == 100 {
		if st.continueSent {
			return nil
		}
		st.continueSent = true
	}
	h := st.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := st.waitRoomLocked(); err != nil {
		return err
	}
	h.encBuf.b = h.encBuf.b[:0]
	h.enc.WriteField(hpack.HeaderField{Name: ":status", Value: h2StatusText(code)})
	switch {
	case fields != nil:
		for i := 0; i+1 < len(fields); i += 2 {
			if !interimDrops(fields[i]) {
				h.writeField(fields[i], fields[i+1])
			}
		}
	case code != 100:
		for _, f := range st.hdr.fields {
			h.writeField(f.name, f.value)
		}
	}
	h.wbuf = appendHeaderBlock(h.wbuf, st.id, h.encBuf.b, false, h.peerMax)
	h.flushLocked()
	return st.errLocked()
}

// errLocked returns the error writes on the stream fail with, if any.
func (st *h2Stream) errLocked() error {
	if st.err != nil {
		return st.err
	}
	return st.h.werr
}

// limitWrite bounds a write of n bytes by the declared Content-Length.
func (st *h2Stream) limitWrite(n int) (int, error) {
	cl := st.declared
	if !st.committed {
		cl = st.hdr.contentLength
	}
	if cl >= 0 && st.written+int64(n) > cl {
		return int(cl - st.written), ErrContentLength
	}
	return n, nil
}

// Write implements ResponseWriter.
func (st *h2Stream) Write(p []byte) (int, error) {
	if st.werr != nil {
		return 0, st.werr
	}
	if st.status == 0 {
		st.status = http.StatusOK
	}
	if st.noBody {
		if !st.isHead && len(p) > 0 {
			return 0, http.ErrBodyNotAllowed
		}
		st.written += int64(len(p))
		return len(p), nil
	}
	n, lerr := st.limitWrite(len(p))
	p = p[:n]
	if len(st.out)+n <= cap(st.out) {
		st.out = append(st.out, p...)
		st.written += int64(n)
		return n, lerr
	}
	if err := st.send(p); err != nil {
		return 0, err
	}
	st.written += int64(n)
	return n, lerr
}

// WriteString implements ResponseWriter.
func (st *h2Stream) WriteString(s string) (int, error) {
	if len(st.out)+len(s) <= cap(st.out) && st.werr == nil && !st.noBody {
		if n, _ := st.limitWrite(len(s)); n == len(s) {
			if st.status == 0 {
				st.status = http.StatusOK
			}
			st.out = append(st.out, s...)
			st.written += int64(len(s))
			return len(s), nil
		}
	}
	return st.Write([]byte(s))
}

// Flush implements ResponseWriter.
func (st *h2Stream) Flush() error {
	if st.werr != nil {
		return st.werr
	}
	if st.status == 0 {
		st.status = http.StatusOK
	}
	return st.send(nil)
}

// SendFile implements FileSender: the file's bytes are read into DATA
// frames (over TLS, as HTTP/2 is served in practice, there is no
// sendfile to use).
func (st *h2Stream) SendFile(f *os.File, offset, n int64) error {
	if st.werr != nil {
		return st.werr
	}
	if st.status == 0 {
		st.status = http.StatusOK
	}
	if !st.committed && st.hdr.contentLength < 0 && st.written == 0 {
		st.hdr.contentLength = n
	}
	if st.noBody || n == 0 {
		st.written += n
		return nil
	}
	if m, _ := st.limitWrite(int(min(n, 1<<40))); int64(m) < n {
		st.werr = ErrContentLength
		return st.werr
	}
	if free := int64(cap(st.out) - len(st.out)); n <= free {
		end := len(st.out) + int(n)
		m, err := f.ReadAt(st.out[len(st.out):end], offset)
		if int64(m) < n {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		st.out = st.out[:end]
		st.written += n
		return nil
	}
	bp := h2FileBufPool.Get().(*[]byte)
	defer h2FileBufPool.Put(bp)
	for n > 0 {
		buf := (*bp)[:min(int64(len(*bp)), n)]
		m, err := f.ReadAt(buf, offset)
		if m < len(buf) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if err := st.send(buf); err != nil {
			return err
		}
		st.written += int64(m)
		offset += int64(m)
		n -= int64(m)
	}
	return nil
}

var h2FileBufPool = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// send commits the header if it is not, and frames the buffered body and
// p, as the flow-control windows
// allow, waiting for them to open; then it writes the connection's output
// unless another goroutine is writing it.
func (st *h2Stream) send(p []byte) error {
	h := st.h
	h.mu.Lock()
	defer h.mu.Unlock()
	err := st.sendLocked(p)
	if err == nil {
		h.flushLocked()
		err = st.errLocked()
	}
	if err != nil && st.werr == nil {
		st.werr = err
	}
	return err
}

func (st *h2Stream) sendLocked(p []byte) error {
	if err := st.errLocked(); err != nil {
		return err
	}
	body := st.out
	if !st.committed {
		if err := st.commitLocked(false); err != nil {
			return err
		}
	}
	if len(body) > 0 {
		if err := st.dataLocked(body, false); err != nil {
			return err
		}
		st.out = st.out[:0]
	}
	if len(p) > 0 {
		return st.dataLocked(p, false)
	}
	return nil
}

// commitLocked appends the response's HEADERS, once there is room for
// them (see waitRoomLocked), ending the stream with end (a response
// without body bytes), choosing the Content-Length: the declared one,
// or, at the handler's end (final), the length of what was written.
func (st *h2Stream) commitLocked(final bool) error {
	if err := st.waitRoomLocked(); err != nil {
		return err
	}
	h := st.h
	st.committed = true
	status := st.status
	if status == 0 {
		status = http.StatusOK
		st.status = status
	}
	cl := st.hdr.contentLength
	length := int64(-1)
	switch {
	case status < 200 || status == http.StatusNoContent:
	case status < 300 && st.req.IsMethod("CONNECT"):
		st.declared = cl
	case status == http.StatusNotModified:
		st.hdr.Del("Content-Type")
	case cl >= 0:
		length, st.declared = cl, cl
	case final:
		if !st.isHead || st.written > 0 {
			length, st.declared = st.written, st.written
		}
	}
	h.encBuf.b = h.encBuf.b[:0]
	h.enc.WriteField(hpack.HeaderField{Name: ":status", Value: h2StatusText(status)})
	if !st.hdr.hasServer {
		h.enc.WriteField(hpack.HeaderField{Name: "server", Value: h.srv.set.Load().serverValue})
	}
	if !st.hdr.hasDate {
		h.enc.WriteField(hpack.HeaderField{Name: "date", Value: dateValue(h.srv.tm.Now())})
	}
	for _, f := range st.hdr.fields {
		h.writeField(f.name, f.value)
	}
	if length >= 0 {
		h.enc.WriteField(hpack.HeaderField{Name: "content-length", Value: h.itoa(length)})
	}
	end := final && (st.noBody || len(st.out) == 0) && len(st.hdr.trailers) == 0
	h.wbuf = appendHeaderBlock(h.wbuf, st.id, h.encBuf.b, end, h.peerMax)
	if end {
		st.endLocalLocked()
	}
	if st.noBody {
		st.out = st.out[:0]
	}
	return nil
}

// finish completes the response after the handler returned.
func (st *h2Stream) finish() {
	if st.werr != nil {
		return
	}
	h := st.h
	if !st.committed && st.status == 0 {
		st.status = http.StatusOK
	}
	trailers := len(st.hdr.trailers) > 0 && !st.noBody
	h.mu.Lock()
	defer h.mu.Unlock()
	if st.errLocked() != nil || st.localDone {
		return
	}
	if !st.committed {
		if st.commitLocked(true) != nil {
			return
		}
	}
	if st.declared >= 0 && st.written < st.declared && !st.noBody {
		// A short body: the client must not take it for the whole.
		if len(st.out) > 0 {
			st.dataLocked(st.out, false)
		}
		h.resetStreamLocked(st.id, st, h2InternalError)
		return
	}
	if !st.localDone {
		if err := st.dataLocked(st.out, !trailers); err != nil {
			return
		}
		st.out = st.out[:0]
	}
	if trailers && !st.localDone {
		if st.waitRoomLocked() != nil {
			return
		}
		h.encBuf.b = h.encBuf.b[:0]
		for _, f := range st.hdr.trailers {
			h.writeField(f.name, f.value)
		}
		h.wbuf = appendHeaderBlock(h.wbuf, st.id, h.encBuf.b, true, h.peerMax)
		st.endLocalLocked()
	}
}
