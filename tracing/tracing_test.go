package tracing

import (
	"context"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// memExporter keeps the spans exported to it.
type memExporter struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (m *memExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.spans = append(m.spans, spans...)
	return nil
}

func (m *memExporter) Shutdown(context.Context) error { return nil }

// testTracer returns a Tracer recording the fraction sample of traces
// (a remote parent's flag ignored) and sending them to exp, as
// tracing/otlp's does.
func testTracer(t testing.TB, sample float64, exp sdktrace.SpanExporter) *Tracer {
	o := Options{Endpoint: "http://127.0.0.1:1", Sample: &sample}
	if _, err := o.Check(); err != nil {
		t.Fatal(err)
	}
	root := sdktrace.TraceIDRatioBased(sample)
	provider := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.ParentBased(root, sdktrace.WithRemoteParentSampled(root), sdktrace.WithRemoteParentNotSampled(root))),
		sdktrace.WithBatcher(exp))
	tr := NewTracer(provider.Tracer("test"), o, provider.Shutdown)
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	return tr
}

// The stage replaces the caller's traceparent with its span's, ends the
// span with the status, marks a 5xx an error, and names the route.
func TestStage(t *testing.T) {
	exp := &memExporter{}
	tr := testTracer(t, 1, exp)
	var seen []string
	app := pipe.Pipe(func(c *pipe.Conn) bool {
		seen = append(seen, string(c.Request.HeaderList("traceparent")))
		if c.Request.Header("X-Fail") != nil {
			return c.Error(503, "down")
		}
		return c.Error(404, "none")
	})
	srv := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{tr.Stage(), tr.Route("/r/"), app}))
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	sluicetest.RoundTrip(t, srv.Addr, "GET /r/x HTTP/1.1\r\nHost: a\r\ntraceparent: "+parent+"\r\ntraceparent: "+parent+"\r\n\r\n")
	sluicetest.RoundTrip(t, srv.Addr, "GET /r/y HTTP/1.1\r\nHost: a\r\ntraceparent: junk\r\nX-Fail: 1\r\n\r\n")
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(exp.spans) != 2 || len(seen) != 2 {
		t.Fatalf("%d spans, %d requests", len(exp.spans), len(seen))
	}
	for i, s := range exp.spans {
		if s.SpanKind() != trace.SpanKindServer || s.Name() != "GET /r/" {
			t.Errorf("span %d: %v %q", i, s.SpanKind(), s.Name())
		}
		want := "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
		if seen[i] != want {
			t.Errorf("request %d carried %q, want %q", i, seen[i], want)
		}
	}
	// A traceparent sent twice is no parent (W3C: refused as invalid);
	// junk neither.
	if exp.spans[0].Parent().IsValid() || exp.spans[1].Parent().IsValid() {
		t.Errorf("parents %v %v, want none", exp.spans[0].Parent(), exp.spans[1].Parent())
	}
	if st := exp.spans[1].Status(); st.Code.String() != "Error" {
		t.Errorf("503's span status %v, want Error", st)
	}
	if st := exp.spans[0].Status(); st.Code.String() == "Error" {
		t.Errorf("404's span status %v, want no error", st)
	}
}

// One valid traceparent is the server span's parent.
func TestStageParent(t *testing.T) {
	exp := &memExporter{}
	tr := testTracer(t, 1, exp)
	srv := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{tr.Stage(), pipe.Pipe(func(c *pipe.Conn) bool { return c.Error(404, "none") })}))
	sluicetest.RoundTrip(t, srv.Addr, "GET / HTTP/1.1\r\nHost: a\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n\r\n")
	srv.Close()
	tr.Shutdown(context.Background())
	if len(exp.spans) != 1 || exp.spans[0].Parent().SpanID().String() != "b7ad6b7169203331" ||
		exp.spans[0].SpanContext().TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || !exp.spans[0].Parent().IsRemote() {
		t.Fatalf("spans %v", exp.spans)
	}
}

func TestCheckOptions(t *testing.T) {
	for _, tt := range []struct{ endpoint, want string }{
		{"http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"},
		{"https://otel.example:4318/", "https://otel.example:4318/v1/traces"},
		{"http://c:4318/custom/traces", "http://c:4318/custom/traces"},
	} {
		o := Options{Endpoint: tt.endpoint}
		got, err := o.Check()
		if err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.endpoint, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "ftp://a", "http://", "http://u:p@a", "http://a?x=1", "grpc://a:4317"} {
		o := Options{Endpoint: bad}
		if _, err := o.Check(); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// network.protocol.version names the protocol a request came by: 1.0,
// 1.1, and the major version alone from HTTP/2 on.
func TestProtocolVersion(t *testing.T) {
	for _, tt := range []struct {
		major, minor int
		want         string
	}{{1, 0, "1.0"}, {1, 1, "1.1"}, {0, 1, "1.1"}, {2, 1, "2"}, {3, 1, "3"}} {
		exp := &memExporter{}
		tr := testTracer(t, 1, exp)
		h := pipe.Handler(pipe.Chain{tr.Stage(), pipe.Pipe(func(*pipe.Conn) bool { return true })})
		req := newReq()
		req.ProtoMajor, req.ProtoMinor = tt.major, tt.minor
		h.Serve(&discard{}, req)
		tr.Shutdown(context.Background())
		got := ""
		for _, kv := range exp.spans[0].Attributes() {
			if kv.Key == "network.protocol.version" {
				got = kv.Value.AsString()
			}
		}
		if got != tt.want {
			t.Errorf("HTTP/%d.%d: %q, want %q", tt.major, tt.minor, got, tt.want)
		}
	}
}
