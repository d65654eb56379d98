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

// BenchmarkRouterMatchers is what conditions and regular expressions
// cost where they are used: a route chosen by a header among three of
// one pattern, and a path matched by the second of two expressions (with
// a named group).
func BenchmarkRouterMatchers(b *testing.B) {
	nop := Pipe(func(c *Conn) bool { return false })
	rt, err := NewRouter(
		Route{Match: []string{"/api/"}, When: []Matcher{hasHeader("X-A")}, Pipeline: nop},
		Route{Match: []string{"/api/"}, When: []Matcher{hasHeader("X-B")}, Pipeline: nop},
		Route{Match: []string{"/api/"}, Pipeline: nop},
		Route{Match: []string{`~ \.php$`}, Pipeline: nop},
		Route{Match: []string{`~ ^/user/(?P<id>[0-9]+)$`}, Pipeline: nop},
		Route{Match: []string{"/"}, Pipeline: nop},
	)
	if err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct{ name, path, field string }{
		{"when-second", "/api/x", "X-B"},
		{"when-fallback", "/api/x", ""},
		{"regex-group", "/user/42", ""},
		{"regex-none", "/static/app.js", ""},
	} {
		b.Run(tt.name, func(b *testing.B) {
			req := &engine.Request{Method: []byte("GET"), Path: []byte(tt.path), Host: []byte("h"), Body: io.LimitReader(nil, 0)}
			if tt.field != "" {
				req.Fields = []engine.Field{{Name: []byte(tt.field), Value: []byte("1")}}
			}
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
