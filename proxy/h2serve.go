package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/upstream"
)

// viaValue2 is this proxy's entry in the Via of a response that came
// over HTTP/2.
const viaValue2 = "2 sluice"

// errGRPCDeadline ends a call whose grpc-timeout passed.
var errGRPCDeadline = errors.New("proxy: the call's grpc-timeout passed")

// serveH2 proxies c's request over HTTP/2 (transports h2c and h2) and
// writes the response to w. Both bodies stream at once: the request
// body is sent by the HTTP/2 client's own goroutine while the response
// comes back (full duplex, as gRPC's bidirectional calls need).
func (p *Proxy) serveH2(c *pipe.Conn, w pipe.Writer, x *exchange) error {
	r := c.Request
	hasBody := r.ContentLength != 0
	safe := idempotent(r) && !hasBody
	var client []byte
	var clientBuf [48]byte
	if p.bal.Policy() == IPHash {
		if a := p.resolver.Addr(r); a.IsValid() {
			client = a.AppendTo(clientBuf[:0])
		}
	}
	grpc := isGRPC(r)

	// The call's context: the client's going ends it, and so does its
	// grpc-timeout, which bounds the whole call, as it bounds the
	// upstream's handling of it.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	if d, ok := grpcTimeout(r); ok && grpc {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, d, errGRPCDeadline)
		defer stop()
	}
	gone, stopWatch := p.watchGone(ctx, cancel, c)
	defer stopWatch()

	var body *h2Body
	if hasBody {
		body = &h2Body{r: r, done: make(chan struct{})}
		defer body.stop()
	}
	var last *failure
	a := p.grp.Begin(safe, p.retries)
	for a.Next(r, client, c) {
		up := a.Host()
		var hc *h2Conn
		var resp *http.Response
		var err error
		started := false
		for refusals := 0; ; refusals++ {
			hc = nil
			var c *h2Conn
			if c, err = p.h2.acquire(up, p.connectTO, gone); err != nil {
				break
			}
			hc = c
			if !started {
				a.Start()
				started = true
			}
			req := p.h2Request(ctx, r, up, x, body)
			headTimer := time.AfterFunc(p.headerTO, func() { cancel(errHeaderTimeout) })
			resp, err = hc.cc.RoundTrip(req)
			headTimer.Stop()
			// A stream the upstream refused was not processed (RFC 9113
			// §8.7: REFUSED_STREAM, as one past its
			// SETTINGS_MAX_CONCURRENT_STREAMS before they came is): it
			// is sent again, whatever its method, unless its body began.
			if err == nil || refusals == maxRefusals || !refusedStream(err) || body.began() || ctx.Err() != nil {
				break
			}
			p.h2.release(up, hc)
		}
		if hc == nil && (err == upstream.ErrFull || err == upstream.ErrQueueTimeout || err == upstream.ErrClientGone) {
			if started {
				a.Done()
			}
			last = busyFailure(err)
			break
		}
		if hc == nil {
			if !started {
				a.Start()
			}
			f := connectFailure(err)
			if isTimeout(err) {
				f = &failure{status: http.StatusGatewayTimeout, msg: "upstream did not accept the connection in time", err: err, retry: true, fault: true}
			}
			p.log.Warn("proxy: upstream failed", "upstream", up.Name, "method", string(r.Method), "path", string(r.Path), "err", err)
			a.Failed(f.fault, f.retry)
			p.logDown(&a)
			last = f
			continue
		}
		if err != nil {
			p.h2.release(up, hc)
			f := h2Failure(ctx, err, safe)
			if f.err == errClientGone {
				p.log.Info("proxy: client went away while the upstream was answering", "upstream", up.Name, "method", string(r.Method), "path", string(r.Path))
			} else {
				p.log.Warn("proxy: upstream failed", "upstream", up.Name, "method", string(r.Method), "path", string(r.Path), "err", f.err)
			}
			a.Failed(f.fault, f.retry)
			p.logDown(&a)
			last = f
			if context.Cause(ctx) != nil {
				break // the call is over: nothing more to try
			}
			continue
		}
		if slices.Contains(p.failStatus, resp.StatusCode) {
			again := a.Rejected(false)
			p.logDown(&a)
			if again {
				resp.Body.Close()
				p.h2.release(up, hc)
				a.Done()
				p.log.Warn("proxy: upstream answered a fail_status", "upstream", up.Name, "method", string(r.Method), "path", string(r.Path), "status", resp.StatusCode)
				last = &failure{status: resp.StatusCode, msg: "upstream answered " + strconv.Itoa(resp.StatusCode), retry: true}
				continue
			}
		}
		err = p.respondH2(ctx, c, w, x, up, resp, body, grpc)
		resp.Body.Close()
		p.h2.release(up, hc)
		a.Done()
		return err
	}
	if last == nil {
		return p.answerFailure(c, w, a.Err(), last)
	}
	if grpc && last.status != http.StatusBadRequest {
		return grpcError(c, w, last)
	}
	return p.answerFailure(c, w, nil, last)
}

// watchGone ends ctx, with cause errClientGone, when c's client goes
// (closes its connection, resets its HTTP/2 stream), which resets the
// upstream's stream. For an HTTP/2 client the watch starts at once (a
// gRPC call cancelled is its stream reset) and its channel is returned;
// for an HTTP/1.x client it starts, as the HTTP/1.1 client's does,
// once the exchange has lasted goneAfter, and nil is returned. The
// exchange calls stop as it ends, after which c is not asked.
func (p *Proxy) watchGone(ctx context.Context, cancel context.CancelCauseFunc, c *pipe.Conn) (<-chan struct{}, func()) {
	if c.Request.ProtoMajor == 2 {
		gone := c.Gone()
		if gone != nil {
			go func() {
				select {
				case <-gone:
					cancel(errClientGone)
				case <-ctx.Done():
				}
			}()
		}
		return gone, func() {}
	}
	// The watch asks c for its channel only while the exchange goes on:
	// stop, taken by the exchange's end, keeps it from asking after.
	w := &lateWatch{}
	w.timer = time.AfterFunc(goneAfter, func() {
		w.mu.Lock()
		if w.stopped {
			w.mu.Unlock()
			return
		}
		gone := c.Gone()
		w.mu.Unlock()
		if gone == nil {
			return
		}
		select {
		case <-gone:
			cancel(errClientGone)
		case <-ctx.Done():
		}
	})
	return nil, w.stop
}

// lateWatch is watchGone's delayed watch of an HTTP/1.x client.
type lateWatch struct {
	mu      sync.Mutex
	stopped bool
	timer   *time.Timer
}

func (w *lateWatch) stop() {
	w.timer.Stop()
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}

// maxRefusals bounds how many times one request's stream is refused
// (REFUSED_STREAM) and sent again.
const maxRefusals = 3

// refusedStream reports whether err is the upstream's REFUSED_STREAM
// (net/http's HTTP/2 client has no exported type for it).
func refusedStream(err error) bool {
	return strings.Contains(err.Error(), "REFUSED_STREAM")
}

// h2Failure is the failure of a stream that ended in err before its
// response head came.
func h2Failure(ctx context.Context, err error, safe bool) *failure {
	switch cause := context.Cause(ctx); {
	case cause == errClientGone:
		return &failure{status: statusClientClosed, msg: "the client closed the request", err: errClientGone}
	case cause == errHeaderTimeout:
		return &failure{status: http.StatusGatewayTimeout, msg: "upstream timed out", err: cause, fault: true}
	case cause == errGRPCDeadline:
		return &failure{status: http.StatusGatewayTimeout, msg: "the call's deadline passed", err: cause}
	case errors.Is(err, errClientBody):
		return &failure{status: http.StatusBadRequest, msg: "request body incomplete", err: err}
	}
	return &failure{status: http.StatusBadGateway, msg: "upstream reset the stream or closed the connection", err: err, retry: safe, fault: true}
}

// grpcError answers a gRPC call that no upstream answered as gRPC does,
// trailers-only: grpc-status UNAVAILABLE (14), or DEADLINE_EXCEEDED (4)
// for a timeout, with the proxy's message. (gRPC clients map a bare
// 502, 503 or 504 to UNAVAILABLE too, but lose the message.)
func grpcError(c *pipe.Conn, w pipe.Writer, f *failure) error {
	code := "14"
	if f.status == http.StatusGatewayTimeout {
		code = "4"
	}
	c.SetStatus(http.StatusOK)
	h := c.Header()
	h.Set("Content-Type", "application/grpc")
	h.Set("Grpc-Status", code)
	h.Set("Grpc-Message", grpcMessage("sluice: "+f.msg))
	h.SetContentLength(0)
	return nil
}

// grpcMessage percent-encodes s as grpc-message wants (bytes outside
// printable ASCII, and '%').
func grpcMessage(s string) string {
	var b []byte
	for i := range len(s) {
		c := s[i]
		if c < ' ' || c > '~' || c == '%' {
			b = fmt.Appendf(b, "%%%02X", c)
			continue
		}
		b = append(b, c)
	}
	return string(b)
}

// isGRPC reports whether r is a gRPC call: its Content-Type is
// application/grpc, alone or with a subtype (+proto).
func isGRPC(r *engine.Request) bool {
	ct := r.Header("Content-Type")
	return bytes.HasPrefix(ct, []byte("application/grpc")) && (len(ct) == 16 || ct[16] == '+' || ct[16] == ';')
}

// grpcTimeout reads r's grpc-timeout: 1 to 8 digits and a unit, H, M, S,
// m (milliseconds), u (microseconds) or n (nanoseconds).
func grpcTimeout(r *engine.Request) (time.Duration, bool) {
	v := r.Header("Grpc-Timeout")
	if len(v) < 2 || len(v) > 9 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(v[:len(v)-1]), 10, 64)
	if err != nil {
		return 0, false
	}
	var unit time.Duration
	switch v[len(v)-1] {
	case 'H':
		unit = time.Hour
	case 'M':
		unit = time.Minute
	case 'S':
		unit = time.Second
	case 'm':
		unit = time.Millisecond
	case 'u':
		unit = time.Microsecond
	case 'n':
		unit = time.Nanosecond
	default:
		return 0, false
	}
	if n > uint64(math.MaxInt64/unit) {
		return 0, false // longer than a Duration: no bound worth keeping
	}
	return time.Duration(n) * unit, true
}

// h2Request builds the request sent upstream for r over HTTP/2: the head
// the HTTP/1.1 client would send (appendRequestHead: Host, the
// end-to-end fields, the forwarding fields, Via), as an http.Request
// for net/http's HTTP/2 client, which frames it; the connection-specific fields
// HTTP/2 forbids are left out, but "TE: trailers".
func (p *Proxy) h2Request(ctx context.Context, r *engine.Request, up *host, x *exchange, body *h2Body) *http.Request {
	x.reqHead = p.appendRequestHead(x.reqHead[:0], r, up, false, nil, &x.peer)
	head := x.reqHead
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	method, line, _ := bytes.Cut(line, []byte(" "))
	target, _, _ := bytes.Cut(line, []byte(" "))
	scheme := "http"
	if up.TLS {
		scheme = "https"
	}
	u := &url.URL{Scheme: scheme, Host: up.Authority}
	path, query, hasQuery := bytes.Cut(target, []byte("?"))
	if bytes.HasPrefix(path, []byte("//")) {
		u.Path = "/" // never reached: canonical paths have no empty segment
	} else {
		u.Opaque = string(path)
	}
	u.RawQuery, u.ForceQuery = string(query), hasQuery && len(query) == 0
	req := &http.Request{
		Method:     string(method),
		URL:        u,
		Proto:      "HTTP/2.0",
		ProtoMajor: 2,
		Header:     make(http.Header, len(r.Fields)+4),
	}
	hasUA := false
	for len(rest) > 2 {
		var fl []byte
		fl, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, _ := bytes.Cut(fl, []byte(": "))
		switch {
		case httpgrammar.EqualFold(name, "host"):
			req.Host = string(value)
			continue
		case httpgrammar.EqualFold(name, "te"):
			req.Header["Te"] = []string{"trailers"}
			continue
		case httpgrammar.EqualFold(name, "connection"), httpgrammar.EqualFold(name, "transfer-encoding"), httpgrammar.EqualFold(name, "content-length"):
			continue
		case httpgrammar.EqualFold(name, "user-agent"):
			hasUA = true
		}
		k := http.CanonicalHeaderKey(string(name))
		req.Header[k] = append(req.Header[k], string(value))
	}
	if !hasUA {
		req.Header["User-Agent"] = nil // net/http would add its own
	}
	if body != nil {
		req.Body = body
		req.ContentLength = r.ContentLength
		req.Trailer = http.Header{}
		body.trailer = req.Trailer
	}
	return req.WithContext(ctx)
}

// h2Body is a request body as net/http's HTTP/2 client reads it, on its own
// goroutine: the client's body, with its trailer fields copied into the
// upstream request's Trailer at its end. stop, when the exchange ends,
// waits for a read in progress and fails those after, so that nothing
// reads the engine's request once its handler returns.
type h2Body struct {
	r       *engine.Request
	trailer http.Header // the upstream request's, filled at the end
	mu      sync.Mutex
	cond    *sync.Cond
	reading bool
	read    bool // a Read began
	stopped bool
	done    chan struct{} // closed at the end of the body, or when it failed or was closed
	once    sync.Once
}

func (b *h2Body) finish() { b.once.Do(func() { close(b.done) }) }

// Read implements io.Reader.
func (b *h2Body) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return 0, errClientBody
	}
	b.reading, b.read = true, true
	b.mu.Unlock()
	n, err := b.r.Body.Read(p)
	if err == io.EOF {
		for _, f := range b.r.Trailer {
			if !httpgrammar.IsHopByHop(f.Name) && !isFramingField(f.Name) {
				k := http.CanonicalHeaderKey(string(f.Name))
				b.trailer[k] = append(b.trailer[k], string(f.Value))
			}
		}
	} else if err != nil {
		err = fmt.Errorf("%w: %w", errClientBody, err)
	}
	b.mu.Lock()
	b.reading = false
	if b.cond != nil {
		b.cond.Broadcast()
	}
	b.mu.Unlock()
	if err != nil {
		b.finish()
	}
	return n, err
}

// began reports whether the body began to be read (b may be nil: no
// body).
func (b *h2Body) began() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.read
}

// Close implements io.Closer: net/http's client closes the body once it
// sent it, or gave up on it.
func (b *h2Body) Close() error {
	b.finish()
	return nil
}

// stop waits for a Read in progress and makes later ones fail.
func (b *h2Body) stop() {
	b.mu.Lock()
	b.stopped = true
	for b.reading {
		if b.cond == nil {
			b.cond = sync.NewCond(&b.mu)
		}
		b.cond.Wait()
	}
	b.mu.Unlock()
	b.finish()
}

// respondH2 passes the upstream's HTTP/2 response on to the client: the
// status, the end-to-end fields, Via, the body as it comes, flushed at
// every read, and the trailer fields. A body that fails part way (the
// upstream reset the stream or went) ends a gRPC call with grpc-status
// UNAVAILABLE (14), or DEADLINE_EXCEEDED (4) past its grpc-timeout, in
// trailers; any other response is cut (its client sees it incomplete).
func (p *Proxy) respondH2(ctx context.Context, c *pipe.Conn, w pipe.Writer, x *exchange, up *host, resp *http.Response, body *h2Body, grpc bool) error {
	r := c.Request
	if body != nil && r.ProtoMajor < 2 {
		// An HTTP/1.x client's connection is read and written by one
		// goroutine at a time: its body is sent whole first, as the
		// HTTP/1.1 client sends it.
		select {
		case <-body.done:
		case <-ctx.Done():
		}
	}
	hdr := c.Header()
	c.SetStatus(resp.StatusCode)
	for name, values := range resp.Header {
		if httpgrammar.IsHopByHop([]byte(name)) || len(resp.Trailer) > 0 && name == "Content-Length" {
			// (A response with trailers goes with its length unknown:
			// chunked to an HTTP/1.1 client, which then gets them.)
			continue
		}
		for _, v := range values {
			hdr.Add(name, v)
		}
	}
	hdr.Add("Via", viaValue2)
	if len(resp.Trailer) > 0 {
		// The trailer fields the upstream announced: an HTTP/1.1 client
		// gets them only when announced (the response goes chunked).
		names := make([]string, 0, len(resp.Trailer))
		for name := range resp.Trailer {
			if !httpgrammar.IsHopByHop([]byte(name)) && !isFramingField([]byte(name)) {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		hdr.Set("Trailer", strings.Join(names, ", "))
	}
	if resp.ContentLength < 0 {
		// A stream of unknown length (gRPC, events): the head goes at
		// once, as the upstream sent it.
		if err := w.Flush(); err != nil {
			return err
		}
	}
	buf := x.scratch
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			for name, values := range resp.Trailer {
				if httpgrammar.IsHopByHop([]byte(name)) || isFramingField([]byte(name)) {
					continue
				}
				for _, v := range values {
					hdr.AddTrailer(name, v)
				}
			}
			return nil
		}
		if err != nil {
			cause := context.Cause(ctx)
			if cause == errClientGone {
				return err
			}
			p.log.Warn("proxy: upstream response body failed", "upstream", up.Name, "path", string(r.Path), "err", err)
			if grpc && r.ProtoMajor == 2 {
				f := &failure{status: http.StatusBadGateway, msg: "upstream failed during the call"}
				if cause == errGRPCDeadline {
					f = &failure{status: http.StatusGatewayTimeout, msg: "the call's deadline passed"}
				}
				code := "14"
				if f.status == http.StatusGatewayTimeout {
					code = "4"
				}
				hdr.AddTrailer("Grpc-Status", code)
				hdr.AddTrailer("Grpc-Message", grpcMessage("sluice: "+f.msg))
				return nil
			}
			return err
		}
		if werr := w.Flush(); werr != nil {
			return werr
		}
	}
}
