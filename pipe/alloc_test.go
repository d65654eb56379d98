//go:build !race

package pipe

import (
	"html/template"
	"io"
	"testing"

	"github.com/sluice-server/sluice/engine"
)

// Error pages cost nothing to a request they do not answer: a 200, and an
// error whose status has no page.
func TestErrorPagesAllocateNothingUnused(t *testing.T) {
	ep, err := NewErrorPages(map[string]*template.Template{
		"5xx": template.Must(template.New("5xx").Parse("<h1>{{.Status}}</h1>")),
	})
	if err != nil {
		t.Fatal(err)
	}
	req := &engine.Request{Method: []byte("GET"), Path: []byte("/"), Host: []byte("a"), Body: io.LimitReader(nil, 0)}
	for _, status := range []int{200, 404} {
		src := Source(func(c *Conn) Content {
			c.SetStatus(status)
			c.Header().SetContentLength(int64(len(body4k)))
			return func(w Writer) error { _, err := w.Write(body4k); return err }
		})
		h := Handler(Chain{ep, src})
		w := &discard{}
		h.Serve(w, req) // warm the pools
		if allocs := testing.AllocsPerRun(500, func() { h.Serve(w, req) }); allocs != 0 {
			t.Errorf("status %d with error pages that have no page for it: %v allocations per request, want 0", status, allocs)
		}
	}
}
