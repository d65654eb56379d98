package pipe

import (
	"io"
	"strconv"
	"testing"

	"github.com/sluice-server/sluice/engine"
)

// BenchmarkRouterPaths routes requests through a router of exact,
// prefix, capture and host routes, none with matchers: what every
// request pays to find its pipeline (the pipeline itself does nothing).
func BenchmarkRouterPaths(b *testing.B) {
	nop := Pipe(func(c *Conn) bool { return false })
	var routes []Route
	for i := range 20 {
		n := strconv.Itoa(i)
		routes = append(routes,
			Route{Match: []string{"/page" + n}, Pipeline: nop},
			Route{Match: []string{"/dir" + n + "/"}, Pipeline: nop},
			Route{Match: []string{"/item" + n + "/{id:int}"}, Pipeline: nop},
			Route{Match: []string{"/page" + n}, Host: "h" + n + ".example.com", Pipeline: nop},
		)
	}
	routes = append(routes, Route{Match: []string{"/"}, Pipeline: nop})
	rt, err := NewRouter(routes...)
	if err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct{ name, path, host string }{
		{"exact", "/page7", "example.com"},
		{"exact-host", "/page7", "h7.example.com"},
		{"prefix", "/dir7/a/b.css", "example.com"},
		{"capture", "/item7/42", "example.com"},
		{"fallback", "/none/of/these", "example.com"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			req := &engine.Request{Method: []byte("GET"), Path: []byte(tt.path), Host: []byte(tt.host), Body: io.LimitReader(nil, 0)}
			w := &discard{}
			b.ReportAllocs()
			for b.Loop() {
				c := acquireConn(w, req)
				rt.Handle(c)
				releaseConn(c)
			}
		})
	}
}
