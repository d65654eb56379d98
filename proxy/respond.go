package proxy

import (
	"io"
	"net/http"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/upstream"
)

// respond passes the upstream response in x on to the client through w:
// the status, the end-to-end header fields, Via, and the body, flushed
// whenever no more of it is at hand. The first piece of the body is read
// before anything is written, so that a body malformed from its start
// (a bad first chunk line) is still answered 502; one malformed later is
// cut off, and the client sees it incomplete.
func (p *Proxy) respond(c *pipe.Conn, w pipe.Writer, x *exchange, uc *upConn, r *engine.Request) error {
	h := &x.head
	var optBuf [maxConnectionOptions][]byte
	conn := responseOptions(optBuf[:0], h.fields)
	// The fields are views into the connection's buffer, which reading
	// the body reuses: they are made strings first. One the same as the
	// field at its place in the exchange's previous response keeps that
	// response's string (an upstream's responses mostly repeat their
	// fields; Date changes once a second), so that a response like the
	// one before costs no allocation; the others are copied into one new
	// string, cut into names and values.
	prev := x.fields
	x.text, x.ends = x.text[:0], x.ends[:0]
	for _, f := range h.fields {
		if isHopByHop(f.name, conn) {
			continue
		}
		if x.body.mode == bodyNone && len(f.name) == 14 && httpgrammar.EqualFold(f.name, "content-length") && !r.IsMethod("HEAD") {
			continue
		}
		for _, b := range [2][]byte{f.name, f.value} {
			if i := len(x.ends); i < len(prev) && prev[i] == string(b) {
				x.ends = append(x.ends, -1) // prev[i] is kept
				continue
			}
			x.text = append(x.text, b...)
			x.ends = append(x.ends, len(x.text))
		}
	}
	var text string
	if len(x.text) > 0 {
		text = string(x.text)
	}
	x.fields = x.fields[:0]
	start := 0
	for i, end := range x.ends {
		if end < 0 {
			x.fields = append(x.fields, prev[i]) // its own place: i < len(prev)
			continue
		}
		x.fields = append(x.fields, text[start:end])
		start = end
	}
	status, reusable := h.status, !h.close
	hdr := c.Header()
	var err error
	var watch *upstream.GoneWatch
	buf := x.scratch
	for first := true; ; first = false {
		if !first && watch == nil {
			// The body is still coming: a client that goes away now must
			// not leave this request waiting on a silent upstream (an
			// event stream), so its going ends the wait.
			watch = upstream.WatchGone(c.Gone(), uc.nc)
		}
		// Read what is at hand, up to a buffer's worth. A whole body
		// that came with the head is written from the connection's
		// buffer, not copied.
		var body []byte
		rerr := error(nil)
		if first {
			body = x.body.whole()
		}
		if body != nil {
			rerr = io.EOF
		} else {
			n := 0
			for n < len(buf) {
				m, err := x.body.Read(buf[n:])
				n += m
				if err != nil {
					rerr = err
					break
				}
				if !x.body.ready() {
					break
				}
			}
			body = buf[:n]
		}
		if rerr != nil && rerr != io.EOF {
			p.log.Warn("proxy: upstream response body failed", "upstream", uc.up.Name, "path", string(r.Path), "err", rerr, c.RequestIDAttr())
			if first {
				uc.discard()
				return writeError(c, w, http.StatusBadGateway, "upstream sent a malformed response")
			}
			err, reusable = rerr, false
			break
		}
		if first {
			c.SetStatus(status)
			for i := 0; i < len(x.fields); i += 2 {
				hdr.Add(x.fields[i], x.fields[i+1])
			}
			hdr.Add("Via", viaValue)
		}
		if len(body) > 0 {
			if _, werr := w.Write(body); werr != nil {
				err, reusable = werr, false
				break
			}
		}
		if rerr == io.EOF {
			for _, f := range x.body.trailer {
				if !httpgrammar.IsHopByHop(f.name) && !isFramingField(f.name) {
					hdr.AddTrailer(string(f.name), string(f.value))
				}
			}
			break
		}
		if werr := w.Flush(); werr != nil {
			err, reusable = werr, false
			break
		}
	}
	if watch.Stop() {
		reusable = false
	}
	// Nothing refers to the read buffer any more (the fields and trailer
	// are copied): the exchange keeps it for its next request.
	if x.readBuf == nil && len(uc.buf) == readBufSize && cap(uc.buf) == readBufSize {
		x.readBuf, uc.buf = uc.buf, nil
	}
	if extra := uc.w - uc.r; extra > 0 && reusable && x.body.done {
		// More came than the response's framing holds: RFC 9112 §6.3
		// lets a client drop it, never take it for a response. The
		// connection goes; what it carries cannot be trusted.
		p.log.Warn("proxy: upstream sent more than its response", "upstream", uc.up.Name, "bytes", extra, c.RequestIDAttr())
		reusable = false
	}
	if reusable && x.body.mode != bodyClose && x.body.done {
		uc.put()
	} else {
		uc.discard()
	}
	return err
}

// passInterim passes the interim (1xx) response head in x on to the
// client with its end-to-end fields (RFC 9110 §15.2: a proxy forwards
// the 1xx responses it did not ask for).
func passInterim(c *pipe.Conn, x *exchange) {
	x.interim = true
	h := &x.head
	var optBuf [maxConnectionOptions][]byte
	conn := responseOptions(optBuf[:0], h.fields)
	x.fields = x.fields[:0]
	for _, f := range h.fields {
		if !isHopByHop(f.name, conn) {
			x.fields = append(x.fields, string(f.name), string(f.value))
		}
	}
	c.WriteInterim(h.status, x.fields...)
}

// isFramingField reports whether a trailer field is one a sender must not
// put in a trailer section (RFC 9110 §6.5.1): framing, routing, and the
// fields read before the body.
func isFramingField(name []byte) bool {
	for _, n := range [...]string{"Content-Length", "Host", "Content-Type", "Content-Encoding", "Content-Range", "Trailer", "Authorization", "Set-Cookie", "Cache-Control", "Expect", "Max-Forwards", "TE"} {
		if httpgrammar.EqualFold(name, n) {
			return true
		}
	}
	return false
}

// writeError answers the client with status and a short message, before
// anything of a response was written.
func writeError(c *pipe.Conn, w pipe.Writer, status int, msg string) error {
	c.SetStatus(status)
	h := c.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.SetContentLength(-1)
	_, err := io.WriteString(w, c.ErrorText(status, msg))
	return err
}
