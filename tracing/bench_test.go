package tracing

import (
	"context"
	"net"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

type discard struct{ h engine.Header }

func (d *discard) Header() *engine.Header            { return &d.h }
func (d *discard) WriteHeader(int)                   {}
func (d *discard) Write(p []byte) (int, error)       { return len(p), nil }
func (d *discard) WriteString(s string) (int, error) { return len(s), nil }
func (d *discard) Flush() error                      { return nil }

type nopExporter struct{}

func (nopExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (nopExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkRequest is a request through a pipeline whose source calls the
// proxy's and the cache's hooks: off (no Tracer: the pipeline a config
// without tracing builds), on with sample 0 (traced, nothing recorded),
// and on with sample 1 (every span recorded and queued for export). off
// against a pipeline without the hooks at all is the cost of tracing off.
func BenchmarkRequest(b *testing.B) {
	plain := pipe.Pipe(func(c *pipe.Conn) bool { c.SetStatus(200); return true })
	hooks := pipe.Pipe(func(c *pipe.Conn) bool {
		sp := StartUpstream(c, "proxy", "u")
		StartCache(c).EndCache("MISS")
		sp.End(200, nil)
		c.SetStatus(200)
		return true
	})
	zero := testTracer(b, 0, nopExporter{})
	one := testTracer(b, 1, nopExporter{})
	for _, bb := range []struct {
		name string
		h    engine.Handler
	}{
		{"nohooks", pipe.Handler(plain)},
		{"off", pipe.Handler(hooks)},
		{"sample0", pipe.Handler(pipe.Chain{zero.Stage(), zero.Route("/"), hooks})},
		{"sample1", pipe.Handler(pipe.Chain{one.Stage(), one.Route("/"), hooks})},
	} {
		b.Run(bb.name, func(b *testing.B) {
			req := newReq()
			req.RemoteAddr = &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1}
			fields := make([]engine.Field, 0, 8)
			w := &discard{}
			b.ReportAllocs()
			for b.Loop() {
				req.Fields = append(fields[:0], engine.Field{Name: hostName, Value: hostValue})
				bb.h.Serve(w, req)
			}
		})
	}
}

var hostName, hostValue = []byte("Host"), []byte("a")

func newReq() *engine.Request {
	return &engine.Request{Method: []byte("GET"), Path: []byte("/"), RawPath: []byte("/"), Host: []byte("a"),
		Fields: []engine.Field{{Name: []byte("Host"), Value: []byte("a")}}}
}
