//go:build !race

package pipe

import (
	"html/template"
	"io"
	"strings"
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

// A route without captures costs the router no allocation, and one with
// captures one (the path, copied once into a string the values share),
// whatever the arrangement of its captures, the depth of a prefix, and
// for a path of up to 512 bytes. Run without -race, which allocates.
func TestRouterAllocs(t *testing.T) {
	rt, err := NewRouter(
		Route{Match: []string{"/hello"}, Pipeline: Pipe(func(*Conn) bool { return true })},
		Route{Match: []string{"/article/{id:int}/{slug}"}, Pipeline: Pipe(func(*Conn) bool { return true })},
		Route{Match: []string{"/{lang}/docs/{page}"}, Pipeline: Pipe(func(*Conn) bool { return true })},
		Route{Match: []string{"/a/b/c/"}, Pipeline: Pipe(func(*Conn) bool { return true })},
		Route{Match: []string{"/"}, Pipeline: Pipe(func(*Conn) bool { return true })},
	)
	if err != nil {
		t.Fatal(err)
	}
	c := acquireConn(&discard{}, nil)
	defer releaseConn(c)
	for _, tt := range []struct {
		path   string
		allocs float64
	}{
		{"/hello", 0},
		{"/a/b/c", 0},
		{"/en/docs/intro", 1},
		{"/en/docs/" + strings.Repeat("x", 480), 1},
		{"/a/b/c/d/e/f/g/h", 0},
		{"/a/b/" + strings.Repeat("x/", 300), 0},
		{"/article/42/title", 1}, // last: its params are checked below
	} {
		c.Request = &engine.Request{Method: []byte("GET"), Path: []byte(tt.path)}
		if got := testing.AllocsPerRun(100, func() { rt.Handle(c) }); got > tt.allocs {
			t.Errorf("%s: %v allocations, want %v", tt.path, got, tt.allocs)
		}
	}
	if c.Param("id") != "42" || c.Param("slug") != "title" || c.Param("none") != "" {
		t.Errorf("params %v", c.params)
	}
	c.Request = &engine.Request{Method: []byte("GET"), Path: []byte("/article/x/title")}
	if rt.Handle(c) || c.Status() != 400 || c.Param("slug") != "" {
		t.Errorf("bad int: status %d, params %v", c.Status(), c.params)
	}
}
