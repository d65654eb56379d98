package tracing

import (
	"context"
	"encoding/hex"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluice-server/sluice/clientaddr"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
)

// traceparentLen is the length of a version-00 traceparent value:
// "00-" 32 hex "-" 16 hex "-" 2 hex.
const traceparentLen = 55

var (
	traceparentName = []byte("traceparent")
	tracestateName  = []byte("tracestate")
	w3c             = propagation.TraceContext{}
)

// request is the trace of one request: its server span, and the
// traceparent value the request carries on (rewritten for each upstream
// attempt, so that the attempt's span is the upstream's parent).
type request struct {
	t      *Tracer
	ctx    context.Context // holds span
	span   trace.Span
	method string
	route  string // the route's pattern, set by the Route stage
	tp     [traceparentLen]byte
	conn   *pipe.Conn // while the response is written
	cut    error      // the content failed after it began (Abort)

	pipe.Through // Next: the writer beneath, while the response is written
}

// TraceContext implements pipe.Trace.
func (rq *request) TraceContext() context.Context { return rq.ctx }

// from returns c's trace, nil when c is not traced.
func from(c *pipe.Conn) *request {
	if t := c.Trace(); t != nil {
		rq, _ := t.(*request)
		return rq
	}
	return nil
}

// Stage returns the component that traces each request: it reads the
// caller's traceparent and tracestate, starts the server span (a child of
// the caller's), records it on the Conn (see StartUpstream, StartCache),
// replaces the request's traceparent and tracestate with its own, and
// ends the span with the response's status once the response is written.
// Place it before the router, after the request ID stage if there is one
// (the span then names the ID).
func (t *Tracer) Stage() pipe.Component {
	return pipe.Pipe(t.handle)
}

func (t *Tracer) handle(c *pipe.Conn) bool {
	r := c.Request
	ctx := w3c.Extract(context.Background(), fieldCarrier{r})
	rq := &request{t: t, method: string(r.Method)}
	rq.ctx, rq.span = t.tracer.Start(ctx, rq.method, trace.WithSpanKind(trace.SpanKindServer))
	if rq.span.IsRecording() { // a trace not sampled spends nothing on them
		rq.span.SetAttributes(serverAttrs(c)...)
	}
	sc := rq.span.SpanContext()
	rq.writeParent(sc)
	r.Fields = dropFields(r.Fields)
	r.Fields = append(r.Fields, engine.Field{Name: traceparentName, Value: rq.tp[:]})
	if ts := sc.TraceState().String(); ts != "" {
		r.Fields = append(r.Fields, engine.Field{Name: tracestateName, Value: []byte(ts)})
	}
	c.SetTrace(rq)
	c.AddFilter(rq.filter)
	return true
}

// serverAttrs are the server span's attributes known when the request
// arrives (OpenTelemetry's semantic conventions for HTTP servers).
func serverAttrs(c *pipe.Conn) []attribute.KeyValue {
	r := c.Request
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	version := "1.1"
	switch {
	case r.ProtoMajor >= 2: // HTTP/2, HTTP/3
		version = strconv.Itoa(r.ProtoMajor)
	case r.ProtoMinor == 0:
		version = "1.0"
	}
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", string(r.Method)),
		attribute.String("url.path", string(r.RawPath)),
		attribute.String("url.scheme", scheme),
		attribute.String("server.address", string(r.Host)),
		attribute.String("network.protocol.version", version),
	}
	if a := clientaddr.Peer(r); a.IsValid() {
		attrs = append(attrs, attribute.String("client.address", a.String()))
	}
	if ua := r.Header("User-Agent"); ua != nil {
		attrs = append(attrs, attribute.String("user_agent.original", string(ua)))
	}
	if id := c.RequestID(); id != nil {
		attrs = append(attrs, attribute.String("sluice.request_id", string(id)))
	}
	return attrs
}

// writeParent writes the traceparent of sc into rq.tp, which the
// request's traceparent field shows.
func (rq *request) writeParent(sc trace.SpanContext) {
	tid, sid := sc.TraceID(), sc.SpanID()
	b := rq.tp[:]
	copy(b, "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags())})
}

// dropFields removes the received traceparent and tracestate fields, in
// place.
func dropFields(fields []engine.Field) []engine.Field {
	out := fields[:0]
	for _, f := range fields {
		if !httpgrammar.EqualFold(f.Name, "traceparent") && !httpgrammar.EqualFold(f.Name, "tracestate") {
			out = append(out, f)
		}
	}
	clear(fields[len(out):])
	return out
}

// fieldCarrier reads a request's fields for the W3C propagator.
type fieldCarrier struct{ r *engine.Request }

func (f fieldCarrier) Get(key string) string {
	return string(f.r.HeaderList(key))
}

func (fieldCarrier) Set(string, string) {}

func (f fieldCarrier) Keys() []string {
	keys := make([]string, len(f.r.Fields))
	for i := range f.r.Fields {
		keys[i] = string(f.r.Fields[i].Name)
	}
	return keys
}

func (rq *request) filter(c *pipe.Conn) pipe.Wrap {
	rq.conn = c
	return rq.wrap
}

// wrap puts rq over next; pipe.Through passes the content on, files by
// reference, so that they keep going out so under the stage.
func (rq *request) wrap(next pipe.Writer) pipe.Writer {
	rq.Next = next
	return rq
}

// Abort implements pipe.Aborter: the response was cut short.
func (rq *request) Abort(err error) { rq.cut = err }

// Close ends the server span: the response is complete, its status final.
func (rq *request) Close() error {
	if !rq.span.IsRecording() {
		rq.span.End()
		rq.conn, rq.Next = nil, nil
		return nil
	}
	status := rq.conn.Status()
	attrs := []attribute.KeyValue{attribute.Int("http.response.status_code", status)}
	name := rq.method
	if rq.route != "" {
		attrs = append(attrs, attribute.String("http.route", rq.route))
		name += " " + rq.route
	}
	rq.span.SetName(name)
	rq.span.SetAttributes(attrs...)
	switch {
	case rq.cut != nil:
		rq.span.SetStatus(codes.Error, "response cut short: "+rq.cut.Error())
	case status >= 500:
		rq.span.SetStatus(codes.Error, "")
	}
	rq.span.End()
	rq.conn, rq.Next = nil, nil
	return nil
}

// Route returns the component that names the route for the request's
// span (http.route, and the span's name "GET /api/"): put first in the
// route's pipeline. pattern is the route's match as written. It does
// nothing for a request that is not traced.
func (t *Tracer) Route(pattern string) pipe.Component {
	return pipe.Pipe(func(c *pipe.Conn) bool {
		if rq := from(c); rq != nil {
			rq.route = pattern
		}
		return true
	})
}

// Span is a span a component started under a request's (StartUpstream,
// StartCache). A nil *Span stands for no span: its methods do nothing, so
// a component calls them without checking.
type Span struct {
	rq   *request
	span trace.Span
}

// StartUpstream starts the span of one attempt of component ("proxy",
// "fastcgi") to the upstream named upstream, a child of the request's,
// and makes the request's traceparent name it, so that the upstream's
// spans are its children. It returns nil, at the cost of a nil check,
// when c is not traced. End ends it.
func StartUpstream(c *pipe.Conn, component, upstream string) *Span {
	if c.Trace() == nil {
		return nil // inlined: tracing off costs the caller this check
	}
	return startUpstream(c, component, upstream)
}

func startUpstream(c *pipe.Conn, component, upstream string) *Span {
	rq := from(c)
	if rq == nil {
		return nil
	}
	_, sp := rq.t.tracer.Start(rq.ctx, rq.method, trace.WithSpanKind(trace.SpanKindClient))
	if sp.IsRecording() {
		sp.SetAttributes(attribute.String("http.request.method", rq.method), attribute.String("sluice.component", component))
		if upstream != "" {
			sp.SetAttributes(attribute.String("server.address", upstream))
		}
	}
	rq.writeParent(sp.SpanContext())
	return &Span{rq: rq, span: sp}
}

// End ends an upstream attempt's span with the status the upstream
// answered (0 for none) and the attempt's error, if any; the request's
// traceparent names the request's span again.
func (s *Span) End(status int, err error) {
	if s != nil {
		s.end(status, err)
	}
}

func (s *Span) end(status int, err error) {
	if status > 0 {
		s.span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	switch {
	case err != nil:
		s.span.SetStatus(codes.Error, err.Error())
	case status >= 500:
		s.span.SetStatus(codes.Error, "")
	}
	s.span.End()
	s.rq.writeParent(s.rq.span.SpanContext())
}

// Attempt records on an exchange's span (a FastCGI client's, which spans
// its attempts) that an attempt went to upstream and, if err is not nil,
// failed with err.
func (s *Span) Attempt(upstream string, err error) {
	if s != nil {
		s.attempt(upstream, err)
	}
}

func (s *Span) attempt(upstream string, err error) {
	s.span.SetAttributes(attribute.String("server.address", upstream))
	if err != nil {
		s.span.AddEvent("attempt failed", trace.WithAttributes(
			attribute.String("server.address", upstream), attribute.String("error.message", err.Error())))
	}
}

// StartCache starts the span of a cache's lookup, a child of the
// request's; nil when c is not traced. EndCache ends it.
func StartCache(c *pipe.Conn) *Span {
	if c.Trace() == nil {
		return nil
	}
	return startCache(c)
}

func startCache(c *pipe.Conn) *Span {
	rq := from(c)
	if rq == nil {
		return nil
	}
	_, sp := rq.t.tracer.Start(rq.ctx, "cache", trace.WithSpanKind(trace.SpanKindInternal))
	return &Span{rq: rq, span: sp}
}

// EndCache ends a cache lookup's span with what the cache did (HIT,
// MISS, ...; "" when it did not say).
func (s *Span) EndCache(status string) {
	if s != nil {
		s.endCache(status)
	}
}

func (s *Span) endCache(status string) {
	if status != "" {
		s.span.SetAttributes(attribute.String("sluice.cache.status", status))
	}
	s.span.End()
}
