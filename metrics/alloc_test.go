//go:build !race

package metrics

import (
	"io"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

// Counting a route's request allocates nothing: the counters are atomic
// and the per-request record is pooled. Run without -race, which
// allocates.
func TestRouteComponentAllocs(t *testing.T) {
	var g Registry
	r := g.Route("r")
	body := []byte("hello, world\n")
	src := pipe.Source(func(c *pipe.Conn) pipe.Content {
		c.Header().SetContentLength(int64(len(body)))
		return func(w pipe.Writer) error { _, err := w.Write(body); return err }
	})
	req := &engine.Request{Method: []byte("GET"), Path: []byte("/"), Host: []byte("a"), Body: io.LimitReader(nil, 0)}
	w := &discard{}
	plain := pipe.Handler(pipe.Chain{src})
	counted := pipe.Handler(pipe.Chain{r.Component(), src})
	plain.Serve(w, req) // warm the pools
	counted.Serve(w, req)
	base := testing.AllocsPerRun(500, func() { plain.Serve(w, req) })
	got := testing.AllocsPerRun(500, func() { counted.Serve(w, req) })
	if got != base {
		t.Errorf("a counted request: %v allocations, the same uncounted %v: counting must add none", got, base)
	}
	if n := r.Snapshot().Duration.Count(); n < 500 {
		t.Errorf("%d requests counted, want at least 500", n)
	}
}
