package pipe

import (
	"io"
	"testing"

	"github.com/sluice-server/sluice/engine"
)

// discard is a ResponseWriter that drops everything, so the benchmarks
// measure the pipeline alone.
type discard struct{ h engine.Header }

func (d *discard) Header() *engine.Header            { return &d.h }
func (d *discard) WriteHeader(int)                   {}
func (d *discard) Write(p []byte) (int, error)       { return len(p), nil }
func (d *discard) WriteString(s string) (int, error) { return len(s), nil }
func (d *discard) Flush() error                      { return nil }

var body4k = make([]byte, 4096)

func benchComponents() []Component {
	pass := Pipe(func(c *Conn) bool { return true })
	src := Source(func(c *Conn) Content {
		c.Header().SetContentLength(int64(len(body4k)))
		return func(w Writer) error { _, err := w.Write(body4k); return err }
	})
	ident := Filter(func(c *Conn) Wrap { return nil })
	return []Component{pass, pass, src, ident, pass}
}

// The paper's Figure 4 question: what does a process network cost over
// function calls, for the same five-component pipeline?
func BenchmarkPipeline(b *testing.B) {
	req := &engine.Request{Method: []byte("GET"), Path: []byte("/"), Body: io.LimitReader(nil, 0)}
	run := func(b *testing.B, h engine.Handler) {
		w := &discard{}
		b.ReportAllocs()
		for b.Loop() {
			h.Serve(w, req)
		}
	}
	b.Run("Chain", func(b *testing.B) { run(b, Handler(Chain(benchComponents()))) })
	b.Run("ProcNetwork", func(b *testing.B) {
		n := NewProcNetwork(benchComponents()...)
		defer n.Stop()
		run(b, NetworkHandler(n))
	})
}
