//go:build !race

package cache

import (
	"io"
	"strconv"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

// discard is an engine.ResponseWriter that keeps nothing, for counting
// what the cache itself allocates. Its header keeps its capacity from
// one request to the next, as the engine's does.
type discard struct {
	h     engine.Header
	names []string
}

func (d *discard) Header() *engine.Header { return &d.h }

func (d *discard) WriteHeader(int) {
	d.names = d.names[:0]
	d.h.Values(func(name, _ string) bool {
		d.names = append(d.names, name)
		return true
	})
	for _, n := range d.names {
		d.h.Del(n)
	}
}

func (d *discard) Write(p []byte) (int, error)       { return len(p), nil }
func (d *discard) WriteString(s string) (int, error) { return len(s), nil }
func (d *discard) Flush() error                      { return nil }

var body4k = make([]byte, 4096)

// sinkRequest makes a request escape as it does when served.
var sinkRequest *engine.Request

// allocSource answers every request with a 4 KB storable response.
var allocSource = pipe.Source(func(c *pipe.Conn) pipe.Content {
	h := c.Header()
	h.Set("Cache-Control", "max-age=600")
	h.Set("Content-Type", "text/html")
	h.Set("ETag", `"abc"`)
	h.SetContentLength(int64(len(body4k)))
	return func(w pipe.Writer) error { _, err := w.Write(body4k); return err }
})

// allocRequests returns a function making a browser-like GET for path
// and query, reusing its field slices, and its own allocations per call.
func allocRequest(query []byte) *engine.Request {
	return &engine.Request{Method: []byte("GET"), Path: []byte("/a"), Host: []byte("h"), Query: query,
		ProtoMajor: 1, ProtoMinor: 1, Body: io.LimitReader(nil, 0),
		Fields: []engine.Field{
			{Name: []byte("Host"), Value: []byte("h")},
			{Name: []byte("Accept"), Value: []byte("*/*")},
			{Name: []byte("User-Agent"), Value: []byte("Mozilla/5.0")},
			{Name: []byte("Accept-Encoding"), Value: []byte("gzip, br")},
			{Name: []byte("Accept-Language"), Value: []byte("en")},
		}}
}

// cacheAllocs returns the allocations per request of a hit, of the
// source served alone, and of a miss (a new key each time), less what
// making the request costs.
func cacheAllocs(t testing.TB) (hit, alone, miss float64) {
	x, err := New(Options{Size: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	h := pipe.Handler(pipe.Chain{x, allocSource})
	w := &discard{}
	mk := testing.AllocsPerRun(200, func() { sinkRequest = allocRequest(nil) })
	h.Serve(w, allocRequest(nil))
	h.Serve(w, allocRequest(nil))
	hit = testing.AllocsPerRun(500, func() { h.Serve(w, allocRequest(nil)) }) - mk
	src := pipe.Handler(pipe.Chain{allocSource})
	alone = testing.AllocsPerRun(500, func() { src.Serve(w, allocRequest(nil)) }) - mk
	queries := make([][]byte, 1200)
	for i := range queries {
		queries[i] = []byte("q=" + strconv.Itoa(i))
	}
	i := 0
	miss = testing.AllocsPerRun(500, func() {
		h.Serve(w, allocRequest(queries[i]))
		i++
	}) - mk
	return hit, alone, miss
}

// What the cache allocates on a hit and on a miss, over what the
// source alone costs.
func TestCacheAllocs(t *testing.T) {
	hit, alone, miss := cacheAllocs(t)
	t.Logf("hit %v, source alone %v, miss %v allocations per request", hit, alone, miss)
	// A hit: the key's string, and the rest of the pipeline handed to
	// the cache as a Component (pipe.Chain). A miss: the tap and its
	// filter and content, the entry, its meta, fields and body, the
	// store's node, the strings of Date, Age and Cache-Status.
	if hit > alone+2 {
		t.Errorf("a hit allocates %v, want at most %v", hit, alone+2)
	}
	if miss > 15 {
		t.Errorf("a miss allocates %v, want at most 15", miss)
	}
}

func BenchmarkHit(b *testing.B) {
	x, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	h := pipe.Handler(pipe.Chain{x, allocSource})
	w := &discard{}
	h.Serve(w, allocRequest(nil))
	b.ReportAllocs()
	for b.Loop() {
		h.Serve(w, allocRequest(nil))
	}
}

func BenchmarkMiss(b *testing.B) {
	x, err := New(Options{Size: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	h := pipe.Handler(pipe.Chain{x, allocSource})
	w := &discard{}
	queries := make([][]byte, 4096)
	for i := range queries {
		queries[i] = []byte("q=" + strconv.Itoa(i))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h.Serve(w, allocRequest(queries[i%len(queries)]))
		i++
		if i%len(queries) == 0 {
			b.StopTimer()
			x, _ = New(Options{Size: 1 << 30})
			h = pipe.Handler(pipe.Chain{x, allocSource})
			b.StartTimer()
		}
	}
}
