package metrics

import (
	"io"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

// BenchmarkObserve is the cost of counting one response: two atomic
// additions for the histogram and one for the class.
func BenchmarkObserve(b *testing.B) {
	var g Registry
	r := g.Route("r")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Observe(200, 3*time.Millisecond)
		}
	})
}

// BenchmarkRouteComponent is a small request through a pipeline with and
// without the route's counting pipe: the difference is the cost per
// request (two clock reads, a pooled record, a filter, the atomics).
func BenchmarkRouteComponent(b *testing.B) {
	var g Registry
	body := []byte("hello, world\n")
	src := pipe.Source(func(c *pipe.Conn) pipe.Content {
		c.Header().SetContentLength(int64(len(body)))
		return func(w pipe.Writer) error { _, err := w.Write(body); return err }
	})
	for _, bc := range []struct {
		name string
		h    engine.Handler
	}{
		{"plain", pipe.Handler(pipe.Chain{src})},
		{"counted", pipe.Handler(pipe.Chain{g.Route("r").Component(), src})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := &engine.Request{Method: []byte("GET"), Path: []byte("/"), Host: []byte("a"), Body: io.LimitReader(nil, 0)}
			w := &discard{}
			b.ReportAllocs()
			for b.Loop() {
				bc.h.Serve(w, req)
			}
		})
	}
}

// BenchmarkUpstream is a transport's hook on one attempt: the host's
// counters looked up by name, the head and the end observed.
func BenchmarkUpstream(b *testing.B) {
	us := &Upstreams{Registry: new(Registry)}
	us.Get("http://127.0.0.1:9000")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			u := us.Get("http://127.0.0.1:9000")
			u.Head(200, time.Millisecond)
			u.Done(3 * time.Millisecond)
		}
	})
}
