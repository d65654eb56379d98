package requestid

import (
	"io"
	"net"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

type discard struct{ h engine.Header }

func (d *discard) Header() *engine.Header            { return &d.h }
func (d *discard) WriteHeader(int)                   {}
func (d *discard) Write(p []byte) (int, error)       { return len(p), nil }
func (d *discard) WriteString(s string) (int, error) { return len(s), nil }
func (d *discard) Flush() error                      { return nil }

// BenchmarkAppend is the cost of making an ID.
func BenchmarkAppend(b *testing.B) {
	var buf [Len]byte
	b.ReportAllocs()
	for b.Loop() {
		Append(buf[:0])
	}
}

// BenchmarkStage compares a pipeline without the stage and with it, an
// ID made for each request: the stage's whole cost per request.
func BenchmarkStage(b *testing.B) {
	s, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	nop := pipe.Pipe(func(*pipe.Conn) bool { return true })
	for _, bb := range []struct {
		name string
		h    engine.Handler
	}{
		{"without", pipe.Handler(pipe.Chain{nop})},
		{"with", pipe.Handler(pipe.Chain{s, nop})},
	} {
		b.Run(bb.name, func(b *testing.B) {
			fields := make([]engine.Field, 0, 16)
			req := &engine.Request{Method: []byte("GET"), Path: []byte("/"), Host: []byte("a"), Body: io.LimitReader(nil, 0),
				RemoteAddr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1}}
			sent := []engine.Field{
				{Name: []byte("Host"), Value: []byte("a")},
				{Name: []byte("User-Agent"), Value: []byte("Mozilla/5.0 (X11; Linux x86_64)")},
				{Name: []byte("Accept"), Value: []byte("text/html,application/xhtml+xml")},
				{Name: []byte("Accept-Encoding"), Value: []byte("gzip, deflate, br")},
				{Name: []byte("Accept-Language"), Value: []byte("en-GB,en;q=0.9")},
			}
			w := &discard{}
			b.ReportAllocs()
			for b.Loop() {
				req.Fields = append(fields[:0], sent...)
				bb.h.Serve(w, req)
			}
		})
	}
}
