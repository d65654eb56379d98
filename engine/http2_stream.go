package engine

import (
	"errors"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2/hpack"

	"github.com/sluice-server/sluice/httpgrammar"
)

// h2Stream is one HTTP/2 stream: its request, its request body as it
// arrives, and the ResponseWriter its handler answers through. Fields
// under "guarded by h.mu" are shared with the connection's reader; the
// rest belong to the handler's goroutine.
type h2Stream struct {
	h  *h2Conn
	id uint32

	req     Request
	arena   []byte // the request's field bytes
	pathBuf []byte
	refusal *ProtocolError // answered by the engine, not the handler

	// The response, composed by the handler's goroutine.
	hdr          Header
	status       int
	committed    bool
	isHead       bool
	noBody       bool
	continueSent bool
	declared     int64  // Content-Length sent, or -1
	written      int64  // body bytes the handler wrote
	out          []byte // body bytes not yet framed
	werr         error  // sticky write error
	consumed     int64  // request body bytes read
	maxBody      int64  // Limits.MaxBodyBytes as the request began
	pace         bodyPace
	bodyRefusal  *ProtocolError // the body was cut off (too slow, too large): answered unless the handler did

	// Guarded by h.mu.
	cond        sync.Cond // signalled when body bytes arrive or the stream ends
	body        []byte    // request body received and not yet read, from bodyOff
	bodyOff     int
	trailer     []Field
	received    int64 // request body bytes received
	sendWin     int64
	recvWin     int64
	unacked     int64 // body bytes read and not yet returned to the window
	remoteDone  bool  // the client's END_STREAM came (or the stream was reset)
	localDone   bool  // the server's END_STREAM went (or the stream was reset)
	handlerDone bool
	queued      bool
	err         error // why the stream ended early: reset, or the connection failed
	gone        chan struct{}
	goneClosed  bool
}

var (
	_ ResponseWriter = (*h2Stream)(nil)
	_ FileSender     = (*h2Stream)(nil)
	_ GoneNotifier   = (*h2Stream)(nil)
	_ InterimWriter  = (*h2Stream)(nil)
)

var errH2StreamReset = errors.New("http2: stream reset")

const h2OutBufSize = 4 << 10

var h2StreamPool = sync.Pool{New: func() any {
	st := &h2Stream{out: make([]byte, 0, h2OutBufSize)}
	st.req.Fields = make([]Field, 0, 16)
	return st
}}

func newH2Stream(h *h2Conn, id uint32) *h2Stream {
	st := h2StreamPool.Get().(*h2Stream)
	st.h, st.id = h, id
	st.cond.L = &h.mu
	st.sendWin = h.peerWinLoad()
	st.recvWin = h2StreamWindow
	st.declared = -1
	st.hdr.reset()
	return st
}

func (h *h2Conn) peerWinLoad() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.peerWin
}

// releaseH2Stream returns st to the pool once nothing refers to it.
func releaseH2Stream(st *h2Stream) {
	fields, arena, out, body, pathBuf := st.req.Fields[:0], st.arena[:0], st.out[:0], st.body[:0], st.pathBuf[:0]
	clear(st.req.Fields[:cap(st.req.Fields)])
	st.hdr.reset()
	hdr := st.hdr
	if cap(out) > 4*h2OutBufSize {
		out = make([]byte, 0, h2OutBufSize)
	}
	if cap(body) > h2StreamWindow {
		body = nil
	}
	*st = h2Stream{arena: arena, out: out, body: body, pathBuf: pathBuf, hdr: hdr}
	st.req.Fields = fields
	h2StreamPool.Put(st)
}

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
		r.Fields = append(r.Fields, Field{Name: sub(a, f.name), Value: sub(a, f.value)})
	}
	if b.host < 0 && b.pseudo&h2Authority != 0 {
		// As HTTP/1.1's Host field, for code that reads the fields (CGI's
		// HTTP_HOST, a proxy).
		r.Fields = append(r.Fields, Field{Name: h2HostName, Value: authority})
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

// run serves the stream on its own goroutine: the handler, or the
// engine's refusal; then it finishes the response.
func (st *h2Stream) run() {
	h := st.h
	defer func() {
		if v := recover(); v != nil {
			st.recovered(v)
		}
		st.finish()
		h.mu.Lock()
		st.handlerDone = true
		switch {
		case st.err != nil:
			h.closeStreamLocked(st)
		case !st.localDone:
			// The response could not be completed (a file shorter than
			// said): the client must not wait for the rest.
			h.resetStreamLocked(st.id, st, h2InternalError)
		case !st.remoteDone:
			// §8.1: the response is complete while the client still
			// sends: it is asked to stop, without error.
			h.resetStreamLocked(st.id, st, h2NoError)
		default:
			h.closeStreamLocked(st)
		}
		h.handlerDoneLocked()
		h.flushSoonLocked()
		release := h.streams[st.id] != st
		h.mu.Unlock()
		if release {
			releaseH2Stream(st)
		}
	}()
	st.isHead = st.req.IsMethod("HEAD")
	st.noBody = st.isHead
	if v := h.srv.set.Load().serverValue; v == "" {
		st.hdr.hasServer = true // none at all
	}
	if st.refusal != nil {
		st.fail(st.refusal)
		return
	}
	h.h.Serve(st, &st.req)
	if st.bodyRefusal != nil && !st.committed {
		st.hdr.reset()
		st.out = st.out[:0]
		st.written, st.status, st.noBody = 0, 0, st.isHead
		st.fail(st.bodyRefusal)
	}
}

// recovered turns a handler panic into a 500, or, once the response has
// begun, into a reset stream, counting and logging it as the engine does
// for HTTP/1.x.
func (st *h2Stream) recovered(v any) {
	h := st.h
	h.srv.stats.panics.Add(1)
	if v != errAbortHandler {
		h.srv.logger().Error("handler panic", "remote", h.c.nc.RemoteAddr().String(),
			"target", string(st.req.Target), "panic", v, "stack", string(debug.Stack()))
	}
	if st.committed {
		h.mu.Lock()
		h.resetStreamLocked(st.id, st, h2InternalError)
		h.mu.Unlock()
		return
	}
	st.hdr.reset()
	st.out = st.out[:0]
	st.written, st.status, st.noBody = 0, 0, st.isHead
	Error(st, http.StatusInternalServerError, "internal server error")
}

// fail answers with the refusal e, and hands it to the server's
// OnRefused hook with a request line made of the method and :path.
func (st *h2Stream) fail(e *ProtocolError) {
	srv := st.h.srv
	if e.Status != 500 {
		srv.stats.refused.Add(1)
	}
	Error(st, e.Status, e.Msg)
	if hook := srv.OnRefused; hook != nil {
		r := &st.req
		line := make([]byte, 0, len(r.Method)+len(r.Target)+10)
		line = append(append(append(line, r.Method...), ' '), r.Target...)
		line = append(line, " HTTP/2.0"...)
		body := st.written
		if st.noBody {
			body = 0
		}
		hook(&Refusal{Status: e.Status, Reason: e.Msg, Line: line, Request: r, BodyBytes: body})
	}
}

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
	if err := st.errLocked(); err != nil {
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

// Gone implements GoneNotifier: the channel closes when the client
// resets the stream or the connection ends.
func (st *h2Stream) Gone() <-chan struct{} {
	h := st.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if st.gone == nil {
		st.gone = make(chan struct{})
		if st.err != nil && !st.handlerDone {
			close(st.gone)
			st.goneClosed = true
		}
	}
	return st.gone
}

// abortLocked ends the stream early with err: its reads and writes fail
// and its Gone channel closes.
func (st *h2Stream) abortLocked(err error) {
	if st.err == nil {
		st.err = err
	}
	if st.gone != nil && !st.goneClosed && !st.handlerDone {
		close(st.gone)
		st.goneClosed = true
	}
	st.cond.Broadcast()
	st.h.cond.Broadcast()
}

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
		st.commitLocked(false)
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

// dataLocked appends p as DATA frames, as the windows allow. A client
// that keeps a window shut for WriteTimeout takes none of the response,
// as a client that stops reading does on HTTP/1.x: the stream is reset.
func (st *h2Stream) dataLocked(p []byte, end bool) error {
	h := st.h
	var stalled *time.Timer // set while waiting for a window
	defer func() {
		if stalled != nil {
			stalled.Stop()
		}
	}()
	var stallEnd time.Time
	for {
		if err := st.errLocked(); err != nil {
			return err
		}
		if len(h.wbuf) >= h2MaxBuffered {
			if !h.writing {
				h.flushLocked()
			} else {
				h.cond.Wait()
			}
			continue
		}
		n := int64(min(len(p), h.peerMax))
		n = min(n, st.sendWin, h.sendWin)
		if n <= 0 && len(p) > 0 {
			if !h.writing && len(h.wbuf) > 0 {
				h.flushLocked()
				continue
			}
			wt := h.srv.limits().WriteTimeout
			switch {
			case stalled == nil:
				stallEnd = time.Now().Add(wt)
				stalled = time.AfterFunc(wt, func() {
					h.mu.Lock()
					h.cond.Broadcast()
					h.mu.Unlock()
				})
			case !time.Now().Before(stallEnd):
				h.resetStreamLocked(st.id, st, h2Cancel)
				return os.ErrDeadlineExceeded
			}
			h.cond.Wait()
			continue
		}
		if stalled != nil {
			stalled.Stop()
			stalled = nil
		}
		last := end && int(n) == len(p)
		h.wbuf = appendData(h.wbuf, st.id, p[:n], last)
		st.sendWin -= n
		h.sendWin -= n
		p = p[n:]
		if len(p) == 0 {
			if last {
				st.localDone = true
			}
			return nil
		}
	}
}

// commitLocked appends the response's HEADERS, ending the stream with
// end (a response without body bytes), choosing the Content-Length: the
// declared one, or, at the handler's end (final), the length of what was
// written.
func (st *h2Stream) commitLocked(final bool) {
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
		st.localDone = true
	}
	if st.noBody {
		st.out = st.out[:0]
	}
}

// writeField encodes a handler's field: its name lowercased, and
// skipped if it is connection-specific (RFC 9113 §8.2.2) or not a token;
// CR, LF and NUL in its value replaced by spaces.
func (h *h2Conn) writeField(name, value string) {
	name = h2Lower(name)
	switch name {
	case "connection", "proxy-connection", "keep-alive", "te", "transfer-encoding", "upgrade":
		return
	}
	if !h2ValidName(name) {
		return
	}
	value = httpgrammar.TrimOWS(value)
	if lineBreakAt(value) >= 0 {
		value = string(appendReplaced(nil, value))
	}
	// Cookies never enter the dynamic table, where a compression oracle
	// could guess them (RFC 7541 §7.1.3).
	h.enc.WriteField(hpack.HeaderField{Name: name, Value: value, Sensitive: name == "set-cookie"})
}

// itoa formats a Content-Length, reusing the last one's string.
func (h *h2Conn) itoa(n int64) string {
	if n != h.lastLen || h.lastLenText == "" {
		h.lastLen, h.lastLenText = n, strconv.FormatInt(n, 10)
	}
	return h.lastLenText
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
		st.commitLocked(true)
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
		h.encBuf.b = h.encBuf.b[:0]
		for _, f := range st.hdr.trailers {
			h.writeField(f.name, f.value)
		}
		h.wbuf = appendHeaderBlock(h.wbuf, st.id, h.encBuf.b, true, h.peerMax)
		st.localDone = true
	}
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

// h2StatusTexts are the :status values.
var h2StatusTexts [1000]string

func h2StatusText(code int) string {
	if code >= 0 && code < len(h2StatusTexts) {
		if s := h2StatusTexts[code]; s != "" {
			return s
		}
	}
	return strconv.Itoa(code)
}

func init() {
	for c := 100; c < 600; c++ {
		h2StatusTexts[c] = strconv.Itoa(c)
	}
	for _, n := range []string{
		"Accept-Ranges", "Access-Control-Allow-Origin", "Age", "Allow", "Alt-Svc",
		"Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language",
		"Content-Location", "Content-Range", "Content-Security-Policy", "Content-Type",
		"Cross-Origin-Opener-Policy", "Date", "ETag", "Expires", "Last-Modified", "Link",
		"Location", "Referrer-Policy", "Retry-After", "Server", "Set-Cookie",
		"Strict-Transport-Security", "Trailer", "Vary", "Via", "WWW-Authenticate",
		"X-Content-Type-Options", "X-Frame-Options", "X-Request-Id", "X-Xss-Protection",
	} {
		h2LowerNames[n] = strings.ToLower(n)
	}
}

// h2LowerNames maps common field names to their lowercase forms, so
// lowercasing them does not allocate.
var h2LowerNames = map[string]string{}

// h2Lower returns name in lowercase, as HTTP/2 sends field names.
func h2Lower(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= 'A' && c <= 'Z' {
			if l, ok := h2LowerNames[name]; ok {
				return l
			}
			return strings.ToLower(name)
		}
	}
	return name
}
