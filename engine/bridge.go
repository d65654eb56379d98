package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/sluice-server/sluice/httpgrammar"
)

// FromHTTP adapts a net/http handler to the engine, so any http.Handler
// (and any middleware stack) can be served by a Server. Each request costs
// the allocations of building an *http.Request and its header map; native
// Handlers avoid them.
//
// The *http.Request's context is cancelled when the handler returns, and
// when the client goes, with cause ErrClientGone (see GoneContext).
// Flush (http.Flusher) and io.ReaderFrom (sendfile for *os.File sources,
// as http.ServeContent uses) are supported; hijacking is not.
func FromHTTP(h http.Handler) Handler {
	return HandlerFunc(func(w ResponseWriter, r *Request) {
		hr, err := NewHTTPRequest(r)
		if err != nil {
			Error(w, http.StatusBadRequest, "invalid request-target")
			return
		}
		ctx, cancel := GoneContext(context.Background(), w)
		defer cancel()
		hr = hr.WithContext(ctx)
		if b, ok := hr.Body.(*httpBody); ok {
			b.req = hr // the trailer goes to the request the handler sees
		}
		hw, finish := NewHTTPResponseWriter(w)
		h.ServeHTTP(hw, hr)
		finish()
	})
}

// NewHTTPRequest builds the net/http view of r, for code that bridges to
// net/http. Its strings are copies, so it may outlive the handler; its
// Body may not.
//
// URL.Path is r.Path, the canonical path, so a net/http handler sees the
// path the router routed on; URL.RawPath is kept only where it is an
// encoding of that path (a router such as chi that prefers RawPath must
// not see another spelling). RequestURI is the target as received.
func NewHTTPRequest(r *Request) (*http.Request, error) {
	target := string(r.Target)
	var u *url.URL
	var err error
	if string(r.Method) == "CONNECT" {
		u = &url.URL{Host: target}
	} else {
		u, err = url.ParseRequestURI(target)
		if err != nil {
			return nil, err
		}
		if u.Path != string(r.Path) {
			u.Path = string(r.Path)
			if u.RawPath != "" && u.EscapedPath() != u.RawPath {
				u.RawPath = "" // another spelling: no longer a hint
			}
		}
	}
	hdr := make(http.Header, len(r.Fields))
	for _, f := range r.Fields {
		name := http.CanonicalHeaderKey(string(f.Name))
		if name == "Host" {
			continue // net/http keeps it in Request.Host
		}
		hdr[name] = append(hdr[name], string(f.Value))
	}
	hr := &http.Request{
		Method:        string(r.Method),
		URL:           u,
		Proto:         "HTTP/1." + strconv.Itoa(r.ProtoMinor),
		ProtoMajor:    1,
		ProtoMinor:    r.ProtoMinor,
		Header:        hdr,
		Host:          string(r.Host),
		RequestURI:    target,
		ContentLength: r.ContentLength,
		Close:         r.close,
		Body:          http.NoBody,
		Trailer:       nil,
		TLS:           r.TLS,
	}
	if r.RemoteAddr != nil {
		hr.RemoteAddr = r.RemoteAddr.String()
	}
	if r.ContentLength < 0 {
		hr.TransferEncoding = []string{"chunked"}
		hr.ContentLength = -1
	}
	if r.ContentLength != 0 {
		hr.Body = &httpBody{r: r, req: hr}
	}
	return hr, nil
}

// httpBody is the *http.Request Body: it reads the engine body and, at its
// end, copies the trailer into Request.Trailer.
type httpBody struct {
	r   *Request
	req *http.Request
}

func (b *httpBody) Read(p []byte) (int, error) {
	n, err := b.r.Body.Read(p)
	if err == io.EOF && len(b.r.Trailer) > 0 && b.req.Trailer == nil {
		b.req.Trailer = make(http.Header, len(b.r.Trailer))
		for _, f := range b.r.Trailer {
			b.req.Trailer.Add(string(f.Name), string(f.Value))
		}
	}
	return n, err
}

func (b *httpBody) Close() error { return nil }

// NewHTTPResponseWriter returns an http.ResponseWriter (with Flusher and
// io.ReaderFrom) that writes through w, and the function to call when the
// net/http code is done: it sends the header if nothing was written.
// The header map starts with the fields w's header already holds.
func NewHTTPResponseWriter(w ResponseWriter) (http.ResponseWriter, func()) {
	hw := &httpWriter{w: w, h: make(http.Header)}
	eh := w.Header()
	eh.Values(func(name, value string) bool {
		hw.h.Add(name, value)
		return true
	})
	if n := eh.ContentLength(); n >= 0 {
		hw.h.Set("Content-Length", strconv.FormatInt(n, 10))
	}
	if eh.close {
		hw.h.Set("Connection", "close")
	}
	return hw, func() { hw.commit(http.StatusOK) }
}

// NewResponseWriter returns an engine ResponseWriter (with FileSender)
// that writes through a net/http one, and the function to call when the
// engine handler is done: it sends the header if nothing was written,
// and passes on the trailer fields the handler added (Header.AddTrailer)
// as net/http's trailers, which the net/http server sends if the
// response announced them in a Trailer field (as HTTP/1.1 needs).
func NewResponseWriter(w http.ResponseWriter) (ResponseWriter, func()) {
	nw := &nativeWriter{w: w}
	nw.hdr.contentLength = -1
	return nw, nw.finish
}

// httpWriter is the http.ResponseWriter over an engine ResponseWriter.
type httpWriter struct {
	w         ResponseWriter
	h         http.Header
	committed bool
}

var (
	_ http.ResponseWriter = (*httpWriter)(nil)
	_ http.Flusher        = (*httpWriter)(nil)
	_ io.ReaderFrom       = (*httpWriter)(nil)
)

func (hw *httpWriter) Header() http.Header { return hw.h }

func (hw *httpWriter) WriteHeader(code int) {
	if hw.committed {
		return
	}
	if code >= 100 && code < 200 && code != 101 {
		hw.copyHeader()
		hw.w.WriteHeader(code)
		return
	}
	hw.commit(code)
}

// commit copies the header map into the engine's header and sets the status.
func (hw *httpWriter) commit(code int) {
	if hw.committed {
		return
	}
	hw.committed = true
	hw.copyHeader()
	hw.w.WriteHeader(code)
}

func (hw *httpWriter) copyHeader() {
	eh := hw.w.Header()
	eh.reset()
	keys := make([]string, 0, len(hw.h))
	for k := range hw.h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			continue
		}
		for _, v := range hw.h[k] {
			eh.Add(k, v)
		}
	}
}

func (hw *httpWriter) Write(p []byte) (int, error) {
	hw.commit(http.StatusOK)
	return hw.w.Write(p)
}

func (hw *httpWriter) WriteString(s string) (int, error) {
	hw.commit(http.StatusOK)
	return hw.w.WriteString(s)
}

func (hw *httpWriter) Flush() {
	hw.commit(http.StatusOK)
	hw.w.Flush()
}

// ReadFrom sends an *os.File (or an io.LimitedReader over one, as io.CopyN
// makes) with SendFile from its current offset, and copies anything else.
func (hw *httpWriter) ReadFrom(src io.Reader) (int64, error) {
	hw.commit(http.StatusOK)
	lr, limited := src.(*io.LimitedReader)
	f, isFile := src.(*os.File)
	if limited {
		f, isFile = lr.R.(*os.File)
	}
	fs, canSend := hw.w.(FileSender)
	if !isFile || !canSend {
		return io.Copy(writerOnly{hw.w}, src)
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	n := fi.Size() - off
	if limited {
		n = min(n, lr.N)
	}
	if n <= 0 {
		return 0, nil
	}
	if err := fs.SendFile(f, off, n); err != nil {
		return 0, err
	}
	if limited {
		lr.N -= n
	}
	_, err = f.Seek(off+n, io.SeekStart)
	return n, err
}

type writerOnly struct{ io.Writer }

// ToHTTP adapts a native Handler to net/http, so it can run inside an
// http.Server (for TLS or HTTP/2, say). The Request it sees is built from
// the *http.Request by NewRequest: its slices are copies, its Fields
// sorted by name, its Path the canonical path. A request whose path
// NewRequest refuses is answered 400 without calling h. Its
// ResponseWriter's Gone channel (GoneNotifier) is the request context's
// Done channel.
func ToHTTP(h Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		serveBridged(nil, h, w, hr)
	})
}

// Bridge returns h as a net/http handler served under s, for a net/http
// server whose connections s does not accept itself (quic-go's HTTP/3
// server, say): as ToHTTP, and with s's limits (target length, field
// count, body size), extra methods, Server field and panic accounting
// applied as to the engine's own requests; each request counts in s's
// Stats (Requests, and Refused for those the limits refuse). The
// handler is safe for concurrent use; s's settings of the moment apply
// (SetLimits and the like take effect for the requests that follow).
//
// Each request is served on one of s's task runners (as HTTP/2 streams
// are, see http2_runners.go), a goroutine whose stack an earlier request
// grew, while the caller's goroutine waits for it: the net/http server's
// goroutine is new for each request (quic-go's HTTP/3 server starts one
// per stream), and the engine's handlers on it grew its stack, copying it
// frame by frame, every time (12% of the CPU of an HTTP/3 load of small
// GETs). A panic of the handler reaches the caller as it would have.
func (s *Server) Bridge(h Handler) http.Handler {
	s.init()
	return http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		s.stats.requests.Add(1)
		t, _ := bridgeTasks.Get().(*bridgeTask)
		if t == nil {
			t = &bridgeTask{done: make(chan any, 1)}
			t.run = t.serve
		}
		t.s, t.h, t.w, t.hr = s, h, w, hr
		s.runTask(t.run)
		p := <-t.done
		*t = bridgeTask{run: t.run, done: t.done}
		bridgeTasks.Put(t)
		if p != nil {
			panic(p)
		}
	})
}

// bridgeTask is a request Bridge hands to a task runner, kept in
// bridgeTasks for the next, so that the hand-over allocates nothing.
type bridgeTask struct {
	s    *Server
	h    Handler
	w    http.ResponseWriter
	hr   *http.Request
	run  func()   // serve, bound once
	done chan any // capacity 1: the handler's panic, or nil, when it has returned
}

var bridgeTasks sync.Pool

// serve serves t's request, then sends on done what the handler panicked
// with (nil if it returned, or ended its goroutine with runtime.Goexit).
func (t *bridgeTask) serve() {
	returned := false
	defer func() {
		var p any
		if !returned {
			p = recover()
		}
		t.done <- p
	}()
	serveBridged(t.s, t.h, t.w, t.hr)
	returned = true
}

// serveBridged serves a net/http request with h, as ToHTTP does; with a
// Server (Bridge) it applies the server's limits, methods, Server field
// and panic accounting too.
func serveBridged(srv *Server, h Handler, w http.ResponseWriter, hr *http.Request) {
	nw := getNativeWriter(w)
	nw.ctx = hr.Context()
	nw.http2 = hr.ProtoMajor >= 2
	defer putNativeWriter(nw) // after finish: deferred calls run last first
	defer nw.finish()
	ew := ResponseWriter(nw)
	if srv != nil {
		if v := srv.set.Load().serverValue; v != "" {
			nw.hdr.Set("Server", v)
		}
		defer srv.recoverBridged(nw, hr) // before finish: a panic's 500 replaces the 200
	}
	r, err := NewRequest(hr)
	if err == nil && srv != nil {
		err = srv.checkBridged(r, w, hr)
	}
	if err != nil {
		status, msg := http.StatusBadRequest, "invalid request"
		var pe *ProtocolError
		if errors.As(err, &pe) {
			status, msg = pe.Status, pe.Msg
		}
		if srv != nil {
			srv.stats.refused.Add(1)
		}
		Error(ew, status, msg)
		return
	}
	h.Serve(ew, r)
}

// checkBridged applies the server's limits to a request the bridge
// serves (those an HTTP/2 connection's SETTINGS do not): it returns the
// refusal to answer, or nil, having bounded the body by MaxBodyBytes.
func (s *Server) checkBridged(r *Request, w http.ResponseWriter, hr *http.Request) error {
	lim := s.limits()
	maxBody := lim.MaxBodyBytes
	switch {
	case len(r.Target) > lim.MaxTargetBytes:
		return errTargetTooLong
	case len(r.Fields) > lim.MaxHeaderCount:
		return errTooManyFields
	case !s.knownMethod(r.Method):
		return errUnknownMethod
	case maxBody >= 0 && r.ContentLength > maxBody:
		return errBodyTooLarge
	}
	if maxBody >= 0 && r.ContentLength != 0 {
		body := http.MaxBytesReader(w, hr.Body, maxBody)
		if b, ok := r.Body.(*trailerBody); ok {
			b.body = body
		} else {
			r.Body = body
		}
	}
	return nil
}

// recoverBridged turns a handler panic into a 500, or, once the response
// has begun, into a reset stream (http.ErrAbortHandler), counting and
// logging it as the engine does for HTTP/1.x.
func (s *Server) recoverBridged(nw *nativeWriter, hr *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	s.stats.panics.Add(1)
	if v != errAbortHandler && v != http.ErrAbortHandler {
		s.logger().Error("handler panic", "remote", hr.RemoteAddr, "target", hr.RequestURI,
			"panic", v, "stack", string(debug.Stack()))
	}
	if nw.committed {
		panic(http.ErrAbortHandler)
	}
	nw.hdr.reset()
	nw.status = 0
	Error(nw, http.StatusInternalServerError, "internal server error")
	nw.commit()
}

// NewRequest builds the engine view of a net/http request: its slices are
// copies, its Fields sorted by name. Path is the canonical form of
// hr.URL's path, as the engine's parser makes it (see Request.Path);
// RawPath is hr.URL.EscapedPath(). It refuses, with a 400 *ProtocolError,
// a path the parser refuses: an encoded '/', a NUL, a ".." above the
// root, and a path that does not start with '/' (other than "*" for
// OPTIONS, or CONNECT's empty one). LocalAddr is the value of hr's
// context under http.LocalAddrContextKey, when it has one (net/http's
// servers and HTTP/3's set it).
func NewRequest(hr *http.Request) (*Request, error) {
	raw := hr.URL.EscapedPath()
	target := hr.RequestURI
	if target == "" {
		target = hr.URL.RequestURI()
	}
	// One buffer holds every byte the Request's slices name (one
	// allocation rather than one a slice); each slice's capacity ends
	// with it, so an append to one never runs into the next.
	size, nfields := len(hr.Method)+len(target)+2*len(raw)+1+len(hr.URL.RawQuery)+2*len(hr.Host)+len("Host"), 1
	for k, vs := range hr.Header {
		for _, v := range vs {
			size += len(k) + len(v)
			nfields++
		}
	}
	buf := make([]byte, 0, size)
	put := func(s string) []byte {
		i := len(buf)
		buf = append(buf, s...)
		return buf[i:len(buf):len(buf)]
	}
	var path []byte
	switch {
	case hr.Method == "CONNECT" && raw == "":
	case raw == "*" && hr.Method == "OPTIONS":
		path = put(raw)
	case raw == "":
		path = []byte("/") // an absolute URL without a path (RFC 9110 §4.2.3)
	case raw[0] != '/':
		return nil, errTarget
	default:
		path = put(raw)
		if needsCanonical(path) {
			i := len(buf)
			var err error
			if buf, err = canonicalPath(buf, path); err != nil {
				return nil, err
			}
			path = buf[i:len(buf):len(buf)]
		}
	}
	r := &Request{
		Method:        put(hr.Method),
		Target:        put(target),
		RawPath:       put(raw),
		Path:          path,
		Query:         put(hr.URL.RawQuery),
		Host:          put(hr.Host),
		ProtoMajor:    1,
		ProtoMinor:    hr.ProtoMinor,
		ContentLength: hr.ContentLength,
		Body:          hr.Body,
		TLS:           hr.TLS,
		close:         hr.Close,
	}
	if hr.ProtoMajor > 1 {
		r.ProtoMajor, r.ProtoMinor = hr.ProtoMajor, 1 // as before ProtoMajor: code testing ProtoMinor sees 1.1's features
	}
	if r.Body == nil {
		r.Body = http.NoBody
	} else if hr.Trailer != nil {
		r.Body = &trailerBody{body: hr.Body, hr: hr, r: r}
	}
	// The fields sorted by name (a stable sort keeps each name's values
	// in their order), then Host.
	r.Fields = make([]Field, 0, nfields+addedFields)
	for k, vs := range hr.Header {
		for _, v := range vs {
			r.AddField(put(k), put(v))
		}
	}
	slices.SortStableFunc(r.Fields, func(a, b Field) int { return bytes.Compare(a.Name, b.Name) })
	if hr.Host != "" {
		r.AddField(put("Host"), r.Host)
	}
	if la, ok := hr.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		r.LocalAddr = la // the server's side: HTTP/3's UDP address, or a TCP one
	}
	if ap, err := netip.ParseAddrPort(hr.RemoteAddr); err == nil {
		r.RemoteAddr = net.TCPAddrFromAddrPort(ap)
	} else if addr, err := net.ResolveTCPAddr("tcp", hr.RemoteAddr); err == nil {
		r.RemoteAddr = addr
	}
	return r, nil
}

// addedFields is the room NewRequest leaves after a request's fields for
// those a pipeline adds (a request ID, a forwarding field), so that
// adding one does not copy them all into a larger slice.
const addedFields = 2

// trailerBody is the engine Request's Body over a net/http one that
// announced a trailer: at its end it copies Request.Trailer's fields,
// sorted by name, into the engine Request's Trailer.
type trailerBody struct {
	body io.Reader
	hr   *http.Request
	r    *Request
}

func (b *trailerBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if err == io.EOF && b.r.Trailer == nil {
		keys := make([]string, 0, len(b.hr.Trailer))
		for k := range b.hr.Trailer {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.r.Trailer = []Field{}
		for _, k := range keys {
			for _, v := range b.hr.Trailer[k] {
				b.r.Trailer = append(b.r.Trailer, Field{Name: []byte(k), Value: []byte(v)})
			}
		}
	}
	return n, err
}

// nativeWriters keeps the bridge's nativeWriters, with the room their
// header has grown, for the requests that follow: a ResponseWriter is
// used only until its handler returns (see ResponseWriter), so the
// bridge takes one for each request and puts it back once the handler
// has returned and the response is finished.
var nativeWriters sync.Pool

// nativeFields is the room a new pooled nativeWriter's header starts
// with: enough for a typical response's fields (a file's has six), so
// that Set and Add do not grow it field by field.
const nativeFields = 8

// getNativeWriter returns a nativeWriter over w, from nativeWriters
// where one is there.
func getNativeWriter(w http.ResponseWriter) *nativeWriter {
	nw, _ := nativeWriters.Get().(*nativeWriter)
	if nw == nil {
		nw = &nativeWriter{hdr: Header{fields: make([]headerField, 0, nativeFields)}}
	}
	nw.w = w
	nw.hdr.contentLength = -1
	return nw
}

// putNativeWriter puts nw back into nativeWriters, keeping nothing of its
// response but its header's room.
func putNativeWriter(nw *nativeWriter) {
	nw.hdr.reset()
	*nw = nativeWriter{hdr: nw.hdr}
	nativeWriters.Put(nw)
}

// nativeWriter is the engine ResponseWriter over an http.ResponseWriter.
type nativeWriter struct {
	w         http.ResponseWriter
	http2     bool            // the request is HTTP/2: no connection-specific fields
	ctx       context.Context // the request's, whose Done is Gone's (see ToHTTP); nil for none
	hdr       Header
	status    int
	committed bool
}

var (
	_ ResponseWriter = (*nativeWriter)(nil)
	_ FileSender     = (*nativeWriter)(nil)
	_ GoneNotifier   = (*nativeWriter)(nil)
)

// Gone implements GoneNotifier: the net/http request's Done channel under
// ToHTTP, nil (never ready) otherwise. It is asked for only when a
// handler calls Gone: a context makes its channel on the first call.
func (nw *nativeWriter) Gone() <-chan struct{} {
	if nw.ctx == nil {
		return nil
	}
	return nw.ctx.Done()
}

func (nw *nativeWriter) Header() *Header { return &nw.hdr }

func (nw *nativeWriter) WriteHeader(code int) {
	if nw.committed || nw.status != 0 {
		return
	}
	if code >= 100 && code < 200 && code != 101 {
		nw.copyHeader()
		nw.w.WriteHeader(code)
		return
	}
	nw.status = code
}

func (nw *nativeWriter) copyHeader() {
	h := nw.w.Header()
	// The fields' values share one new slice (one allocation rather
	// than one a field), each field's part capped at its one element,
	// so that a second field of its name, appended, moves its own
	// values elsewhere instead of writing over the next field's. It is
	// not kept for the next request: the net/http side may read the map
	// after the handler has returned (quic-go's HTTP/3 reads declared
	// trailers there).
	values := make([]string, 0, len(nw.hdr.fields)+1) // and Content-Length's
	for _, f := range nw.hdr.fields {
		// HTTP/2 has no connection-specific fields (RFC 9113 §8.2.2):
		// a client treats a response with one as malformed. (Header keeps
		// no Connection field, only whether it said close.)
		if nw.http2 && httpgrammar.IsHopByHop(f.name) {
			continue
		}
		key := textproto.CanonicalMIMEHeaderKey(f.name)
		if _, ok := h[key]; ok {
			h[key] = append(h[key], f.value)
			continue
		}
		i := len(values)
		values = append(values, f.value)
		h[key] = values[i : i+1 : i+1]
	}
	if nw.hdr.contentLength >= 0 {
		i := len(values)
		values = append(values, strconv.FormatInt(nw.hdr.contentLength, 10))
		h["Content-Length"] = values[i : i+1 : i+1]
	}
	if nw.hdr.close && !nw.http2 {
		h.Set("Connection", "close")
	}
	if _, ok := h["Content-Type"]; !ok {
		// As the engine, send no type rather than one net/http (or
		// quic-go's HTTP/3) would guess from the body: a guess can make
		// text a browser runs as HTML.
		h["Content-Type"] = nil
	}
}

// finish commits the response and sets its trailer fields.
func (nw *nativeWriter) finish() {
	nw.commit()
	if len(nw.hdr.trailers) == 0 {
		return
	}
	h := nw.w.Header()
	for _, f := range nw.hdr.trailers {
		h.Add(f.name, f.value)
	}
}

func (nw *nativeWriter) commit() {
	if nw.committed {
		return
	}
	nw.committed = true
	if nw.status == 0 {
		nw.status = http.StatusOK
	}
	nw.copyHeader()
	nw.w.WriteHeader(nw.status)
}

func (nw *nativeWriter) Write(p []byte) (int, error) {
	nw.commit()
	return nw.w.Write(p)
}

func (nw *nativeWriter) WriteString(s string) (int, error) {
	nw.commit()
	return io.WriteString(nw.w, s)
}

func (nw *nativeWriter) Flush() error {
	nw.commit()
	return http.NewResponseController(nw.w).Flush()
}

func (nw *nativeWriter) SendFile(f *os.File, offset, n int64) error {
	if nw.hdr.contentLength < 0 && !nw.committed {
		nw.hdr.contentLength = n
	}
	nw.commit()
	_, err := io.Copy(nw.w, io.NewSectionReader(f, offset, n))
	return err
}
