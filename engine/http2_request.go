package engine

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/sluice-server/sluice/httpgrammar"
)

// An HTTP/2 stream's request: the engine Request built from a decoded
// header block, the request body as the handler reads it, and the
// trailer section.

// errH2Malformed marks a malformed request (RFC 9113 §8.1.1): its stream
// is reset with PROTOCOL_ERROR.
var errH2Malformed = errors.New("http2: malformed request")

// request builds st's Request from the header block b: it returns the
// refusal to answer with (a limit, a target the engine refuses), or
// errH2Malformed for a request to reset (RFC 9113 §8.1.1).
func (st *h2Stream) request(b *h2Block) (*ProtocolError, error) {
	h := st.h
	switch {
	case b.tooBig:
		return errHeaderTooLarge, nil
	case b.malformed:
		return nil, errH2Malformed
	}
	st.arena, b.arena = b.arena, st.arena[:0]
	a := st.arena
	r := &st.req
	r.ProtoMajor, r.ProtoMinor = 2, 1
	r.RemoteAddr, r.LocalAddr = h.c.nc.RemoteAddr(), h.c.nc.LocalAddr()
	r.TLS = h.c.tlsState
	r.Body = (*h2Body)(st)
	method := sub(a, b.method)
	r.Method = method
	isConnect := string(method) == "CONNECT"
	if b.pseudo&h2Method == 0 || !httpgrammar.IsToken(method) {
		return nil, errH2Malformed
	}
	if isConnect {
		// §8.5: :authority only. (Extended CONNECT, RFC 8441, is not
		// offered, so :protocol never comes.)
		if b.pseudo != h2Method|h2Authority {
			return nil, errH2Malformed
		}
	} else if b.pseudo&(h2Scheme|h2Path) != h2Scheme|h2Path || b.path[0] == b.path[1] {
		return nil, errH2Malformed
	}
	authority := sub(a, b.authority)
	if b.host >= 0 {
		hv := sub(a, b.fields[b.host].value)
		if b.pseudo&h2Authority == 0 {
			authority = hv
		} else if string(hv) != string(authority) {
			return nil, errH2Malformed // §8.3.1: they must agree
		}
	}
	if b.cookies > 1 {
		// §8.2.3: a client may split Cookie into several fields; they are
		// one again, joined by "; ", for code that reads one field.
		a = joinCookies(b, a)
		st.arena = a
	}
	for _, f := range b.fields {
		if f.name[0] < 0 {
			continue
		}
		r.AddField(sub(a, f.name), sub(a, f.value))
	}
	if b.host < 0 && b.pseudo&h2Authority != 0 {
		// As HTTP/1.1's Host field, for code that reads the fields (CGI's
		// HTTP_HOST, a proxy).
		r.AddField(h2HostName, authority)
	}
	switch {
	case b.endStream && b.clSeen && b.cl != 0:
		return nil, errH2Malformed // §8.1.1: Content-Length disagrees with the DATA (none)
	case b.endStream:
		r.ContentLength = 0
	case b.clSeen:
		r.ContentLength = b.cl
	default:
		r.ContentLength = -1
	}
	r.expectCont = b.expectCont
	if b.tooMany {
		return errTooManyFields, nil
	}
	var target []byte
	if isConnect {
		target = authority
	} else {
		target = sub(a, b.path)
		if len(target) > h.srv.limits().MaxTargetBytes {
			return errTargetTooLong, nil
		}
		if target[0] != '/' && string(target) != "*" {
			return errTarget, nil // §8.3.1: origin-form or asterisk-form
		}
	}
	r.Target = target
	if err := parseTarget(target, r, &st.pathBuf); err != nil {
		var pe *ProtocolError
		if errors.As(err, &pe) {
			return pe, nil
		}
		return errTarget, nil
	}
	if r.Host == nil && len(authority) > 0 {
		if !validHost(authority) {
			return errBadHost, nil
		}
		r.Host = authority
	}
	lim := h.srv.limits()
	st.maxBody = lim.MaxBodyBytes
	st.pace.start(lim)
	if st.pace.window > 0 {
		st.sendPace = st.pace // off, with the rate
	}
	switch {
	case !h.srv.knownMethod(r.Method):
		return errUnknownMethod, nil
	case lim.MaxBodyBytes >= 0 && r.ContentLength > lim.MaxBodyBytes:
		return errBodyTooLarge, nil
	case b.expectOther:
		return errExpectation, nil
	}
	return nil, nil
}

var h2HostName = []byte("Host")

// joinCookies appends the values of b's cookie fields to arena joined
// by "; ", makes the first cookie field's value the result, and marks
// the others dropped (a name start of -1).
func joinCookies(b *h2Block, arena []byte) []byte {
	start, first := len(arena), -1
	for i, f := range b.fields {
		if string(arena[f.name[0]:f.name[1]]) != "Cookie" {
			continue
		}
		if first < 0 {
			first = i
		} else {
			arena = append(arena, "; "...)
			b.fields[i].name[0] = -1
		}
		arena = append(arena, arena[f.value[0]:f.value[1]]...)
	}
	b.fields[first].value = [2]int{start, len(arena)}
	return arena
}

// sub returns the bytes of arena at offsets r.
func sub(arena []byte, r [2]int) []byte { return arena[r[0]:r[1]:r[1]] }

// trailerLocked takes a header block on an open stream, under h.mu: the
// request's trailer section, which must end the stream (RFC 9113 §8.1).
func (h *h2Conn) trailerLocked(st *h2Stream) error {
	b := &h.blk
	switch {
	case st.remoteDone && st.localDone:
		// Closed, its handler not yet gone (§5.1: closed).
		return h2ConnError(h2StreamClosed)
	case st.remoteDone:
		h.resetStreamLocked(st.id, st, h2StreamClosed) // §5.1: half-closed (remote)
		return nil
	case !b.endStream || b.pseudo != 0 || b.malformed:
		h.resetStreamLocked(st.id, st, h2ProtocolError)
		return nil
	}
	if st.req.ContentLength >= 0 && st.received != st.req.ContentLength {
		h.resetStreamLocked(st.id, st, h2ProtocolError)
		return nil
	}
	if !b.tooBig {
		tr := make([]Field, len(b.fields))
		arena := append([]byte(nil), b.arena...)
		for i, f := range b.fields {
			tr[i] = Field{Name: arena[f.name[0]:f.name[1]:f.name[1]], Value: arena[f.value[0]:f.value[1]:f.value[1]]}
		}
		st.trailer = tr
	}
	h.endRemoteLocked(st)
	st.cond.Broadcast()
	return nil
}

// h2Body is a stream's request body.
type h2Body h2Stream

// Read implements io.Reader: the body's bytes as they arrive; io.EOF at
// the end of the stream, with the trailer then in Request.Trailer.
func (b *h2Body) Read(p []byte) (int, error) {
	st := (*h2Stream)(b)
	if len(p) == 0 {
		return 0, nil
	}
	h := st.h
	if st.req.expectCont && !st.continueSent && !st.committed {
		st.interim(100, nil)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for st.bodyOff == len(st.body) {
		switch {
		case st.err != nil:
			return 0, st.err
		case st.remoteDone:
			if st.trailer != nil {
				st.req.Trailer, st.trailer = st.trailer, nil
			}
			return 0, io.EOF
		case st.bodyRefusal != nil:
			return 0, os.ErrDeadlineExceeded
		}
		if err := st.waitBodyLocked(); err != nil {
			return 0, err
		}
	}
	n := copy(p, st.body[st.bodyOff:])
	st.bodyOff += n
	if st.bodyOff == len(st.body) {
		st.body, st.bodyOff = st.body[:0], 0
	}
	st.consumed += int64(n)
	if limit := st.maxBody; limit >= 0 && st.consumed > limit {
		st.bodyRefusal = errBodyTooLarge
		return 0, &http.MaxBytesError{Limit: limit}
	}
	before := len(h.wbuf)
	h.creditStreamLocked(st, int64(n))
	if len(h.wbuf) > before {
		h.flushLocked()
	}
	return n, nil
}

// Buffered reports how many body bytes have arrived and are unread, and
// whether they are all the rest of the body (the stream's end came, with
// no error): a proxy may then read it whole without waiting. It is safe
// to call from the handler's goroutine, as Read is.
func (b *h2Body) Buffered() (n int, whole bool) {
	st := (*h2Stream)(b)
	st.h.mu.Lock()
	defer st.h.mu.Unlock()
	return len(st.body) - st.bodyOff, st.remoteDone && st.err == nil && st.bodyRefusal == nil
}

// waitBodyLocked waits for body bytes under Limits.BodyTimeout and
// MinBodyRate, as an HTTP/1.x body is (see bodyPace): only time spent
// waiting counts. A body that falls behind fails with
// os.ErrDeadlineExceeded, and the stream is answered 408 unless the
// handler answered.
func (st *h2Stream) waitBodyLocked() error {
	h := st.h
	now := h.srv.tm.Now()
	deadline := st.pace.wait(now)
	if deadline <= now {
		st.bodyRefusal = errBodyTimeout
		return os.ErrDeadlineExceeded
	}
	had := len(st.body) - st.bodyOff
	t := time.AfterFunc(time.Duration(deadline-now), func() {
		h.mu.Lock()
		st.cond.Broadcast()
		h.mu.Unlock()
	})
	st.cond.Wait()
	t.Stop()
	st.pace.got(h.srv.tm.Now(), len(st.body)-st.bodyOff-had)
	return nil
}

// appendBodyLocked adds received body bytes.
func (st *h2Stream) appendBodyLocked(data []byte) {
	if st.bodyOff > 0 && len(st.body)+len(data) > cap(st.body) {
		n := copy(st.body, st.body[st.bodyOff:])
		st.body, st.bodyOff = st.body[:n], 0
	}
	st.body = append(st.body, data...)
}
