package engine

import (
	"errors"
	"net/http"
	"strconv"
)

// errAbortHandler is http.ErrAbortHandler: a handler panicking with it ends
// the connection without a log line, as in net/http.
var errAbortHandler = http.ErrAbortHandler

// response is the engine's ResponseWriter. Its header and the body written
// before the header is committed wait in the session's buffers; once
// committed, output accumulates in the session's out buffer and is written
// when it fills, when the handler flushes, or when the connection would
// otherwise wait for input (so pipelined responses share one write).
type response struct {
	c   *conn
	req *Request
	hdr Header

	status    int
	committed bool
	isHead    bool
	noBody    bool  // HEAD, or a status without content
	chunked   bool  // body sent with chunked coding
	declared  int64 // Content-Length declared (and sent, but to CONNECT), or -1
	written   int64 // body bytes the handler wrote
	err       error // sticky write error
}

var (
	_ ResponseWriter = (*response)(nil)
	_ FileSender     = (*response)(nil)
	_ BuffersWriter  = (*response)(nil)
)

func (w *response) start(c *conn, req *Request) {
	w.c, w.req = c, req
	w.hdr.reset()
	w.status, w.committed, w.chunked = 0, false, false
	w.isHead = req.IsMethod("HEAD")
	w.noBody = w.isHead
	w.declared, w.written, w.err = -1, 0, nil
}

func (w *response) reset() {
	w.hdr.reset()
	w.c, w.req = nil, nil
}

// Header implements ResponseWriter.
func (w *response) Header() *Header { return &w.hdr }

// WriteHeader implements ResponseWriter.
func (w *response) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic("engine: invalid WriteHeader code " + strconv.Itoa(code))
	}
	if w.committed || w.status != 0 {
		return
	}
	if code < 200 && code != 101 {
		w.writeInterim(code)
		return
	}
	w.status = code
	if !bodyAllowed(code) {
		w.noBody = true
	}
}

// writeInterim sends a 1xx response with the current header fields (for
// 103 Early Hints, the Link fields). HTTP/1.0 clients get none (RFC 9110
// §15.2).
func (w *response) writeInterim(code int) {
	if w.req.ProtoMinor == 0 {
		return
	}
	if code == 100 {
		if w.c.s.body.continueSent {
			return
		}
		w.c.s.body.continueSent = true
	}
	s := w.c.s
	s.out = appendStatusLine(s.out, code)
	if code != 100 {
		s.out = w.hdr.appendFields(s.out)
	}
	s.out = append(s.out, "\r\n"...)
	if err := w.c.flush(); err != nil {
		w.err = err
	}
}

// Write implements ResponseWriter.
func (w *response) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if !w.committed {
		if w.noBody {
			if !w.isHead && len(p) > 0 {
				return 0, http.ErrBodyNotAllowed
			}
			w.written += int64(len(p))
			return len(p), nil
		}
		if w.hdr.contentLength < 0 {
			s := w.c.s
			if len(s.bodyBuf)+len(p) <= cap(s.bodyBuf) {
				s.bodyBuf = append(s.bodyBuf, p...)
				w.written += int64(len(p))
				return len(p), nil
			}
		}
		w.commit(false)
	}
	return w.writeBody(p)
}

// WriteBuffers implements BuffersWriter. Buffers worth sending without
// copying (together at least half the output buffer) go out with what
// the output holds in one writev, when the body's length is known (set,
// or declared by the handler) or it will not be (the response is chunked,
// or close-delimited: the buffers are then one chunk, or as they are);
// otherwise, when a Write could still find the body's length, each
// buffer is written as by Write.
func (w *response) WriteBuffers(p [][]byte) (int64, error) {
	var n int64
	for _, b := range p {
		n += int64(len(b))
	}
	s := w.c.s
	if w.err == nil && !w.noBody && n >= int64(cap(s.out)/2) && (w.committed || w.hdr.contentLength >= 0 || int64(len(s.bodyBuf))+n > int64(cap(s.bodyBuf))) {
		if !w.committed {
			w.commit(false)
		}
		if w.err == nil && !w.noBody && (w.declared < 0 || w.written+n <= w.declared) {
			var err error
			if w.chunked {
				err = w.c.writeChunkBuffers(p, n)
			} else {
				err = w.c.writeBuffers(p)
			}
			if err != nil {
				w.err = err
				return 0, err
			}
			w.written += n
			return n, nil
		}
	}
	var written int64
	for _, b := range p {
		m, err := w.Write(b)
		written += int64(m)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// WriteString implements ResponseWriter.
func (w *response) WriteString(s string) (int, error) {
	if !w.committed && w.hdr.contentLength < 0 && !w.noBody && w.err == nil {
		sess := w.c.s
		if len(sess.bodyBuf)+len(s) <= cap(sess.bodyBuf) {
			if w.status == 0 {
				w.status = http.StatusOK
			}
			sess.bodyBuf = append(sess.bodyBuf, s...)
			w.written += int64(len(s))
			return len(s), nil
		}
	}
	return w.Write([]byte(s))
}

// Flush implements ResponseWriter.
func (w *response) Flush() error {
	if w.err != nil {
		return w.err
	}
	if !w.committed {
		if w.status == 0 {
			w.status = http.StatusOK
		}
		w.commit(false)
		if w.err != nil {
			return w.err
		}
	}
	if err := w.c.flush(); err != nil {
		w.err = err
	}
	return w.err
}

// commit composes the status line and header into the output buffer,
// choosing the framing: the declared Content-Length; at the handler's end
// (final), the length of what was buffered; otherwise chunked for HTTP/1.1
// and close-delimited for HTTP/1.0. Buffered body bytes follow.
//
// Whether the connection stays open is settled first, since that may
// drain the rest of the request body, and reading the body flushes the
// output (earlier pipelined responses) before it waits: the head is
// composed only after that, into the output as it then is, with no I/O
// until it is complete. (The response counts as committed throughout, so
// the drain sends no 100 Continue either.)
func (w *response) commit(final bool) {
	w.committed = true
	c, s := w.c, w.c.s
	status := w.status
	if status == 0 {
		status = http.StatusOK
		w.status = status
	}

	cl := w.hdr.contentLength
	length := int64(-1) // the Content-Length field to send, if any
	switch {
	case status < 200 || status == http.StatusNoContent:
		// RFC 9110 §8.6: no Content-Length in 1xx or 204.
	case status < 300 && w.req.IsMethod("CONNECT"):
		// RFC 9110 §8.6, §9.3.6: no Content-Length or Transfer-Encoding
		// in a 2xx to CONNECT. The engine does not tunnel, and the
		// connection ends with this response (serveHead): so does its
		// body. A declared length still bounds what the handler may write.
		w.declared = cl
	case status == http.StatusNotModified:
		// As net/http: a 304 carries neither the Content-Type nor the
		// Content-Length a handler or filter may have set to describe
		// the representation it stands for (RFC 9110 §15.4.5: only the
		// fields that guide a cache's update).
		w.hdr.Del("Content-Type")
	case cl >= 0:
		length, w.declared = cl, cl
	case final && !(w.req.ProtoMinor >= 1 && !w.isHead && w.hdr.announcesTrailers()):
		if !w.isHead || w.written > 0 {
			length, w.declared = w.written, w.written
		}
	case w.isHead:
		// a streamed HEAD response: its GET length is unknown
	case w.req.ProtoMinor >= 1:
		w.chunked = true
	default:
		c.closeAfter = true // HTTP/1.0: the body ends when the connection does
	}

	body := &s.body
	if !body.done && (w.req.expectCont && !body.continueSent || w.req.expectOther) {
		// The client may not send the body until told to (no 100
		// Continue was sent, or its expectation was refused with 417):
		// waiting for it to drain would hold the response back.
		c.closeAfter = true
	}
	if !body.done && !c.closeAfter && (w.hdr.close || w.req.close) {
		// The connection closes after this response anyway: the rest of
		// the body is not waited for.
		c.closeAfter = true
	}
	if !body.done && !c.closeAfter && !body.keepable(final) {
		// The connection will close after this response because the body
		// cannot be drained: say so (RFC 9112 §9.6).
		c.closeAfter = true
	}

	b := appendStatusLine(s.out, status)
	if !w.hdr.hasServer {
		b = append(b, c.srv.set.Load().serverLine...)
	}
	if !w.hdr.hasDate {
		b = appendDate(b, c.srv.tm.Now())
	}
	b = w.hdr.appendFields(b)
	if length >= 0 {
		b = appendContentLength(b, length)
	} else if w.chunked {
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	}
	switch {
	case c.closeAfter || w.req.close || w.hdr.close || c.srv.closing():
		b = append(b, "Connection: close\r\n"...)
		c.closeAfter = true
	case w.req.ProtoMinor == 0:
		b = append(b, "Connection: keep-alive\r\n"...)
	}
	s.out = append(b, "\r\n"...)

	if len(s.bodyBuf) > 0 {
		buffered := s.bodyBuf
		s.bodyBuf = s.bodyBuf[:0]
		w.written -= int64(len(buffered)) // writeBody counts them again
		w.writeBody(buffered)
	}
}

func appendContentLength(b []byte, n int64) []byte {
	b = append(b, "Content-Length: "...)
	b = appendInt(b, n)
	return append(b, "\r\n"...)
}

func appendInt(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }

// errAborted marks a response cut short by a handler panic.
var errAborted = errors.New("engine: handler aborted the response")

// ErrContentLength is returned by Write when a handler writes more bytes
// than the Content-Length it declared.
var ErrContentLength = errors.New("engine: wrote more than the declared Content-Length")

// writeBody sends p as body bytes under the committed framing.
func (w *response) writeBody(p []byte) (int, error) {
	if w.noBody {
		w.written += int64(len(p))
		return len(p), nil
	}
	n := len(p)
	if w.declared >= 0 && w.written+int64(n) > w.declared {
		n = int(w.declared - w.written)
		w.err = ErrContentLength
	}
	if n == 0 {
		return 0, w.err
	}
	w.written += int64(n)
	c := w.c
	var err error
	if w.chunked {
		err = c.writeChunk(p[:n])
	} else {
		err = c.writeOut(p[:n])
	}
	if err != nil {
		w.err = err
		return 0, err
	}
	return n, w.err
}

// finish completes the response after the handler returned.
func (w *response) finish() {
	body := &w.c.s.body
	if !w.committed && body.refusal != nil {
		w.fail(body.refusal)
	}
	if !w.committed {
		w.commit(true) // chunked only when trailers are announced
	}
	if w.chunked && w.err == nil {
		if len(w.hdr.trailers) == 0 {
			w.c.appendOut("0\r\n\r\n")
		} else {
			s := w.c.s
			if len(s.out) > cap(s.out)/2 {
				w.c.flush()
			}
			s.out = w.hdr.appendTrailer(s.out)
		}
	}
	if w.declared >= 0 && w.written < w.declared && !w.noBody {
		w.c.closeAfter = true // short body: the framing cannot be repaired
	}
	if w.err != nil || body.refusal != nil {
		w.c.closeAfter = true
	}
}

// bodySent returns how many body bytes the response sent or queued: none
// for HEAD or a status without content.
func (w *response) bodySent() int64 {
	if w.noBody {
		return 0
	}
	return w.written
}

// fail replaces an uncommitted response with a short plain-text error.
func (w *response) fail(e *ProtocolError) {
	if w.committed {
		w.c.closeAfter = true
		return
	}
	if e.Status != 500 {
		w.c.srv.stats.refused.Add(1)
	}
	w.hdr.reset()
	w.c.s.bodyBuf = w.c.s.bodyBuf[:0]
	w.written = 0
	w.status = e.Status
	w.noBody = w.isHead
	if e.Close {
		w.c.closeAfter = true
	}
	w.hdr.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteString(statusText(e.Status))
	w.WriteString(": ")
	w.WriteString(e.Msg)
	w.WriteString("\n")
}

// Error replies to the request with status and a one-line plain-text body
// "status text: msg". It does not end the handler; return after it.
func Error(w ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.SetContentLength(-1)
	w.WriteHeader(status)
	w.WriteString(statusText(status) + ": " + msg + "\n")
}
