//go:build !race

package pipe

import (
	"testing"

	"github.com/sluice-server/sluice/engine"
)

// A route without captures costs the router no allocation, and one with
// captures one (the path, copied once into a string the values share).
// Run without -race, which allocates.
func TestRouterAllocs(t *testing.T) {
	rt, err := NewRouter(
		Route{Match: []string{"/hello"}, Pipeline: Pipe(func(*Conn) bool { return true })},
		Route{Match: []string{"/article/{id:int}/{slug}"}, Pipeline: Pipe(func(*Conn) bool { return true })},
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
		{"/article/42/title", 1},
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
