package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2/hpack"

	"github.com/sluice-server/sluice/coarse"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/tracing"
	"github.com/sluice-server/sluice/upstream"
)

// viaValue2 is this proxy's entry in the Via of a response that came
// over HTTP/2.
const viaValue2 = "2 sluice"

// errGRPCDeadline ends a call whose grpc-timeout passed.
var errGRPCDeadline = errors.New("proxy: the call's grpc-timeout passed")

// serveH2 proxies c's request over HTTP/2 (transports h2c and h2) and
// writes the response to w. Both bodies stream at once (full duplex, as
// gRPC's bidirectional calls need): a request body that has all arrived
// and is small goes with the head, in one write; any other is sent by a
// goroutine of its own while the response comes back.
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
		body = newH2Body(r)
		defer body.stop()
	}
	var last *failure
	a := p.grp.Begin(safe, p.retries)
	for a.Next(r, client, c) {
		up := a.Host()
		span := tracing.StartUpstream(c, "proxy", up.Name)
		um := p.upm.Get(up.Name)
		var hc *h2Conn
		var resp *http.Response
		var err error
		started, left := false, false
		for refusals := 0; ; refusals++ {
			hc = nil
			var c *h2Conn
			if c, err = p.h2.acquire(up, p.connectTO, gone); err != nil {
				break
			}
			hc = c
			if !started {
				if left = !a.Start(); left {
					p.h2.release(up, hc) // up left the set meanwhile
					break
				}
				started = true
			}
			rd, ok := body.rewind()
			if !ok {
				err = errBodyGiven // (never: canRewind was true)
				break
			}
			req := p.h2Request(ctx, r, up, x, rd)
			headTimer := time.AfterFunc(p.headerTO, func() { cancel(errHeaderTimeout) })
			resp, err = hc.cc.roundTrip(ctx, req)
			headTimer.Stop()
			// A stream the upstream refused was not processed (RFC 9113
			// §8.7: REFUSED_STREAM, as one past its
			// SETTINGS_MAX_CONCURRENT_STREAMS before they came is): it
			// is sent again, whatever its method, unless its body began.
			if err == nil || refusals == maxRefusals || !refusedStream(err) || !body.canRewind() || ctx.Err() != nil {
				break
			}
			p.h2.release(up, hc)
		}
		if left || hc == nil && err == errHostGone {
			span.End(0, errLeftSet)
			continue // up left the set: another host
		}
		if hc == nil && (err == upstream.ErrFull || err == upstream.ErrQueueTimeout || err == upstream.ErrClientGone) {
			if started {
				a.Done()
			}
			last = busyFailure(err)
			span.End(0, err)
			break
		}
		if hc == nil {
			if !started && !a.Start() {
				span.End(0, errLeftSet)
				continue // up left the set meanwhile
			}
			f := connectFailure(err)
			if isTimeout(err) {
				f = &failure{status: http.StatusGatewayTimeout, msg: "upstream did not accept the connection in time", err: err, retry: true, fault: true}
			}
			p.log.Warn("proxy: upstream failed", "upstream", up.Name, "method", string(r.Method), "path", string(r.Path), "err", err, c.RequestIDAttr())
			um.Failed()
			a.Failed(f.fault, f.retry)
			p.logDown(&a)
			last = f
			span.End(0, err)
			continue
		}
		if err != nil {
			p.h2.release(up, hc)
			f := h2Failure(ctx, err, safe)
			if f.fault {
				um.Failed()
			}
			if f.err == errClientGone {
				p.log.Info("proxy: client went away while the upstream was answering", "upstream", up.Name, "method", string(r.Method), "path", string(r.Path), c.RequestIDAttr())
			} else {
				p.log.Warn("proxy: upstream failed", "upstream", up.Name, "method", string(r.Method), "path", string(r.Path), "err", f.err, c.RequestIDAttr())
			}
			a.Failed(f.fault, f.retry)
			p.logDown(&a)
			last = f
			span.End(0, f.traceErr())
			if context.Cause(ctx) != nil {
				break // the call is over: nothing more to try
			}
			continue
		}
		um.Head(resp.StatusCode, upstream.Now().Sub(a.Now()))
		if slices.Contains(p.failStatus, resp.StatusCode) {
			again := a.Rejected(false)
			p.logDown(&a)
			if again {
				resp.Body.Close()
				p.h2.release(up, hc)
				a.Done()
				p.log.Warn("proxy: upstream answered a fail_status", "upstream", up.Name, "method", string(r.Method), "path", string(r.Path), "status", resp.StatusCode, c.RequestIDAttr())
				last = &failure{status: resp.StatusCode, msg: "upstream answered " + strconv.Itoa(resp.StatusCode), retry: true}
				span.End(resp.StatusCode, nil)
				continue
			}
		}
		err = p.respondH2(ctx, c, w, x, up, resp, body, grpc)
		resp.Body.Close()
		p.h2.release(up, hc)
		a.Done()
		span.End(resp.StatusCode, err)
		um.Done(upstream.Now().Sub(a.Now()))
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
	// The timer is a coarse one: stopped when the answer comes, as it
	// nearly always is, it leaves the runtime no wake-up behind.
	w := &lateWatch{}
	w.timer.Start(goneAfter, func() {
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
		go func() {
			select {
			case <-gone:
				cancel(errClientGone)
			case <-ctx.Done():
			}
		}()
	})
	return nil, w.stop
}

// lateWatch is watchGone's delayed watch of an HTTP/1.x client.
type lateWatch struct {
	mu      sync.Mutex
	stopped bool
	timer   coarse.Timer
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

// refusedStream reports whether err is a stream the upstream did not
// process: REFUSED_STREAM, or above the last stream id of its GOAWAY.
func refusedStream(err error) bool {
	return errors.Is(err, errH2Refused)
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

// appendGRPCTimeout appends d as a grpc-timeout value: at most 8 digits
// and the finest unit that holds it, rounded up (a deadline passed on
// must not be earlier than the one received, whose rest it is); "0n"
// when d is not positive (the call's time is up).
func appendGRPCTimeout(dst []byte, d time.Duration) []byte {
	if d <= 0 {
		return append(dst, "0n"...)
	}
	const maxValue = 1e8 - 1
	for _, u := range []struct {
		unit time.Duration
		c    byte
	}{{time.Nanosecond, 'n'}, {time.Microsecond, 'u'}, {time.Millisecond, 'm'}, {time.Second, 'S'}, {time.Minute, 'M'}} {
		if n := ceilDiv(d, u.unit); n <= maxValue {
			return append(strconv.AppendInt(dst, n, 10), u.c)
		}
	}
	return append(strconv.AppendInt(dst, min(ceilDiv(d, time.Hour), maxValue), 10), 'H')
}

// ceilDiv returns d/unit rounded up, for d positive.
func ceilDiv(d, unit time.Duration) int64 {
	n := int64(d / unit)
	if d%unit != 0 {
		n++
	}
	return n
}

// h2Request builds the request sent upstream for r over HTTP/2: the head
// the HTTP/1.1 client would send (appendRequestHead: Host, the
// end-to-end fields, the forwarding fields, Via), as HTTP/2 fields: the
// request line and Host become the pseudo-header fields, names go
// lower-case, and the connection-specific fields HTTP/2 forbids are left
// out, but "te: trailers".
func (p *Proxy) h2Request(ctx context.Context, r *engine.Request, up *host, x *exchange, body *h2BodyReader) *h2Request {
	x.reqHead = p.appendRequestHead(x.reqHead[:0], r, up, false, nil, &x.peer)
	head := x.reqHead
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	method, line, _ := bytes.Cut(line, []byte(" "))
	target, _, _ := bytes.Cut(line, []byte(" "))
	req := &h2Request{
		method:    string(method),
		scheme:    "http",
		authority: up.Authority,
		path:      string(target),
		fields:    make([]hpack.HeaderField, 0, len(r.Fields)+4),
		body:      body,
	}
	if up.TLS {
		req.scheme = "https"
	}
	if bytes.HasPrefix(target, []byte("//")) {
		req.path = "/" // never reached: canonical paths have no empty segment
	}
	// A call bounded by its grpc-timeout (the context's deadline) passes
	// on what is left of it, as a gRPC proxy should: the time spent here
	// (a queue, an attempt that failed) is the upstream's no more.
	deadline, bounded := ctx.Deadline()
	var lower [64]byte
	for len(rest) > 2 {
		var fl []byte
		fl, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, _ := bytes.Cut(fl, []byte(": "))
		switch {
		case bounded && httpgrammar.EqualFold(name, "grpc-timeout"):
			req.fields = append(req.fields, hpack.HeaderField{Name: "grpc-timeout", Value: string(appendGRPCTimeout(nil, time.Until(deadline)))})
			continue
		case httpgrammar.EqualFold(name, "host"):
			req.authority = string(value)
			continue
		case httpgrammar.EqualFold(name, "te"):
			req.fields = append(req.fields, hpack.HeaderField{Name: "te", Value: "trailers"})
			continue
		case httpgrammar.IsHopByHop(name), httpgrammar.EqualFold(name, "content-length"):
			continue
		}
		req.fields = append(req.fields, hpack.HeaderField{Name: lowerName(lower[:0], name), Value: string(value)})
	}
	if body != nil && r.ContentLength >= 0 {
		req.fields = append(req.fields, hpack.HeaderField{Name: "content-length", Value: strconv.FormatInt(r.ContentLength, 10)})
	}
	return req
}

// lowerName returns name in lower case (HTTP/2 field names are), using
// buf when it has room.
func lowerName(buf []byte, name []byte) string {
	for _, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf = append(buf, c)
	}
	return string(buf)
}

// h2Body is a request body as the HTTP/2 client sends it, through one
// h2BodyReader per attempt (rewind). What was read is kept while it is
// at most h2SmallBody bytes (from an HTTP/2 client), so that a stream
// the upstream did not process is sent again, from the start, whether
// the body went with its head (read whole by the request's goroutine,
// when it had all arrived) or was streaming; past that size, or from an
// HTTP/1.x client (whose body is sent whole before its response is
// read), what was read is gone and the body cannot be sent again. An
// attempt's reader fails once another attempt began, so that a stream
// given up reads nothing more; a read it had in progress in the
// client's body when the next began (a stale read) returns nothing to
// it, and what it read is kept for the attempt that began, whatever the
// protocol and the size. At its end, its trailer fields are in
// trailer. stop, when the exchange ends, waits for a read in progress
// and fails those after, so that nothing reads the engine's request
// once its handler returns.
type h2Body struct {
	r       *engine.Request
	trailer []hpack.HeaderField // filled at the end
	mu      sync.Mutex
	cond    sync.Cond // on mu: a read ended
	reading bool
	eof     bool
	stopped bool
	keep    bool          // what is read may be kept (an HTTP/2 client's)
	kept    []byte        // what was read, while keep and at most h2SmallBody, and what a stale read brought
	total   int           // bytes read
	lost    bool          // read and not kept: no rewind
	epoch   int           // the attempt reading
	done    chan struct{} // closed at the end of the body, when it failed, or when the attempt's sending ended
	once    sync.Once
}

// newH2Body returns r's body to send.
func newH2Body(r *engine.Request) *h2Body {
	b := &h2Body{r: r, done: make(chan struct{}), keep: r.ProtoMajor >= 2}
	b.cond.L = &b.mu
	return b
}

// h2BodyReader is one attempt's reading of an h2Body.
type h2BodyReader struct {
	b     *h2Body
	epoch int
	pos   int
}

// errBodyGiven is a read by an attempt given up for another.
var errBodyGiven = errors.New("proxy: the request body is another attempt's")

func (b *h2Body) finish() { b.once.Do(func() { close(b.done) }) }

// rewind starts an attempt at sending b from its start and returns its
// reader (nil for a nil b), or nil and false when b cannot be sent again.
func (b *h2Body) rewind() (*h2BodyReader, bool) {
	if b == nil {
		return nil, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lost {
		return nil, false
	}
	b.epoch++
	return &h2BodyReader{b: b, epoch: b.epoch}, true
}

// canRewind reports whether b may be sent again (b may be nil: no
// body).
func (b *h2Body) canRewind() bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.lost
}

// takeWhole returns the body read whole, and true, when it has all
// arrived (or was read before) and is at most h2SmallBody bytes; else
// nil and false, and it is left to stream. rd must not have been read.
func (rd *h2BodyReader) takeWhole() ([]byte, bool, error) {
	b := rd.b
	b.mu.Lock()
	if b.reading || b.lost || !b.keep {
		b.mu.Unlock()
		return nil, false, nil
	}
	if !b.eof {
		rb, ok := b.r.Body.(interface{ Buffered() (int, bool) })
		if !ok {
			b.mu.Unlock()
			return nil, false, nil
		}
		n, whole := rb.Buffered()
		if !whole || len(b.kept)+n > h2SmallBody {
			b.mu.Unlock()
			return nil, false, nil
		}
		// Read into kept's own room (Read appends what it read to kept,
		// onto itself): no buffer besides.
		b.kept = append(make([]byte, 0, len(b.kept)+n+1), b.kept...)
	}
	b.mu.Unlock()
	for {
		b.mu.Lock()
		room := b.kept[len(b.kept):cap(b.kept)]
		b.mu.Unlock()
		if len(room) == 0 {
			room = make([]byte, 512) // (never: it had all arrived)
		}
		_, err := rd.Read(room)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lost {
		return nil, false, errors.New("proxy: the request body grew") // never: it had all arrived
	}
	return b.kept, true, nil
}

// Read implements io.Reader: what was kept, then the client's body.
func (rd *h2BodyReader) Read(p []byte) (int, error) {
	b := rd.b
	b.mu.Lock()
	for {
		switch {
		case b.stopped:
			b.mu.Unlock()
			return 0, errClientBody
		case rd.epoch != b.epoch:
			b.mu.Unlock()
			return 0, errBodyGiven
		case rd.pos < b.total && b.lost:
			b.mu.Unlock()
			return 0, errBodyGiven // (never: no rewind once lost)
		case rd.pos < b.total:
			n := copy(p, b.kept[rd.pos:])
			rd.pos += n
			b.mu.Unlock()
			return n, nil
		case b.eof:
			b.mu.Unlock()
			return 0, io.EOF
		case b.reading:
			b.cond.Wait() // a read of an attempt given up
			continue
		}
		break
	}
	b.reading = true
	b.mu.Unlock()
	n, err := b.r.Body.Read(p)
	var trailer []hpack.HeaderField
	if err == io.EOF {
		for _, f := range b.r.Trailer {
			if !httpgrammar.IsHopByHop(f.Name) && !isFramingField(f.Name) {
				var lower [64]byte
				trailer = append(trailer, hpack.HeaderField{Name: lowerName(lower[:0], f.Name), Value: string(f.Value)})
			}
		}
	} else if err != nil {
		err = fmt.Errorf("%w: %w", errClientBody, err)
	}
	b.mu.Lock()
	b.reading = false
	// A stale read (another attempt began while it was in the client's
	// body) read bytes that attempt has not: they are kept for it
	// whatever the client's protocol and whatever b's size, or they
	// would be lost to the attempt that rewind let begin. (One read's
	// worth: the attempt now reading reads them first, and its own next
	// read drops what is kept if need be.)
	stale := rd.epoch != b.epoch
	if n > 0 {
		if !b.lost && (stale || b.keep && b.total+n <= h2SmallBody) {
			b.kept = append(b.kept, p[:n]...)
		} else {
			b.lost, b.kept = true, nil
		}
		b.total += n
	}
	if err == io.EOF {
		b.eof, b.trailer = true, trailer
	}
	b.cond.Broadcast()
	if !stale {
		rd.pos = b.total
	}
	b.mu.Unlock()
	if err != nil {
		b.finish()
	}
	if stale {
		return 0, errBodyGiven // what it read is kept for the attempt now
	}
	return n, err
}

// current reports whether rd is the attempt now reading.
func (rd *h2BodyReader) current() bool {
	rd.b.mu.Lock()
	defer rd.b.mu.Unlock()
	return rd.epoch == rd.b.epoch
}

// stop waits for a Read in progress and makes later ones fail.
func (b *h2Body) stop() {
	b.mu.Lock()
	b.stopped = true
	for b.reading {
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
	// A flush passes on at once what came; none is needed while more has
	// come already (the rest of a unary gRPC call's answer: its message
	// and trailer fields go with its head, in one write to the client).
	more := func() bool { return false }
	if b, ok := resp.Body.(h2RespBody); ok {
		more = b.more
	}
	if resp.ContentLength < 0 && !more() {
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
			p.log.Warn("proxy: upstream response body failed", "upstream", up.Name, "path", string(r.Path), "err", err, c.RequestIDAttr())
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
		if more() {
			continue
		}
		if werr := w.Flush(); werr != nil {
			return werr
		}
	}
}
