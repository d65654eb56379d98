//go:build !race

package cache

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/proxy"
	"github.com/sluice-server/sluice/sluicetest"
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
	// the cache as a Component (pipe.Chain). A miss: the entry (its body
	// inside), the meta (its fields inside), the store's node (none once
	// the store is full and evicts: see package evict), the key's
	// string, and the rest as a Component. The tap, with its filter,
	// content and writer, is reused; the Date and Cache-Status strings
	// are shared by the misses that say the same; the entry's ready
	// channel is made only when a request waits for it.
	if hit > alone+2 {
		t.Errorf("a hit allocates %v, want at most %v", hit, alone+2)
	}
	if miss > 5 {
		t.Errorf("a miss allocates %v, want at most 5", miss)
	}
}

// sizedSource answers every request with a storable body of n bytes.
func sizedSource(n int) pipe.Component {
	payload := make([]byte, n)
	return pipe.Source(func(c *pipe.Conn) pipe.Content {
		h := c.Header()
		h.Set("Cache-Control", "max-age=600")
		h.Set("Content-Type", "text/html")
		h.Set("ETag", `"abc"`)
		h.SetContentLength(int64(n))
		return func(w pipe.Writer) error { _, err := w.Write(payload); return err }
	})
}

// originSource is sizedSource with setOriginFields' fields and the
// origin's Connection (hop-by-hop: not stored). The body is written in
// pieces of 32 KiB, as the proxy reads it.
func originSource(n int) pipe.Component {
	payload := make([]byte, n)
	return pipe.Source(func(c *pipe.Conn) pipe.Content {
		h := c.Header()
		setOriginFields(h, int64(n))
		h.Set("Connection", "keep-alive")
		return func(w pipe.Writer) error {
			for p := payload; len(p) > 0; {
				k := min(len(p), 32<<10)
				if _, err := w.Write(p[:k]); err != nil {
					return err
				}
				p = p[k:]
			}
			return nil
		}
	})
}

func benchHit(b *testing.B, n int) {
	arenaHeap, arenaSmallPages = *onHeap, *smallPages
	x, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	h := pipe.Handler(pipe.Chain{x, sizedSource(n)})
	w := &discard{}
	h.Serve(w, allocRequest(nil))
	b.ReportAllocs()
	b.SetBytes(int64(n))
	cpu := cpuTime()
	for b.Loop() {
		h.Serve(w, allocRequest(nil))
	}
	reportCPU(b, cpu)
}

// reportCPU reports the process's CPU time per operation since cpu (the
// collector's included), which a machine shared with other work
// disturbs less than the time that passed.
func reportCPU(b *testing.B, cpu time.Duration) {
	if d := cpuTime() - cpu; d > 0 {
		b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func BenchmarkHit4K(b *testing.B)   { benchHit(b, 4096) }
func BenchmarkHit100K(b *testing.B) { benchHit(b, 100<<10) }

// benchMiss measures misses at the steady state of a full 16 MB store:
// every request a new key, stored, and an older one evicted for it.
func benchMiss(b *testing.B, n int) { benchMissIn(b, n, 16<<20) }

// benchMissIn is benchMiss with a store of size bytes.
func benchMissIn(b *testing.B, n int, size int) { benchMissFrom(b, n, size, sizedSource(n)) }

// benchMissFrom is benchMissIn with the responses of src.
func benchMissFrom(b *testing.B, n int, size int, src pipe.Component) {
	arenaHeap, arenaSmallPages = *onHeap, *smallPages
	x, err := New(Options{Size: int64(size)})
	if err != nil {
		b.Fatal(err)
	}
	h := pipe.Handler(pipe.Chain{x, src})
	w := &discard{}
	var q []byte
	i := 0
	miss := func() {
		q = strconv.AppendInt(append(q[:0], "q="...), int64(i), 10)
		h.Serve(w, allocRequest(q))
		i++
	}
	for range 2 * size / n {
		miss() // fill the store
	}
	b.ReportAllocs()
	b.SetBytes(int64(n))
	cpu := cpuTime()
	for b.Loop() {
		miss()
	}
	reportCPU(b, cpu)
}

func BenchmarkMiss4K(b *testing.B)   { benchMiss(b, 4096) }
func BenchmarkMiss100K(b *testing.B) { benchMiss(b, 100<<10) }

// 4 KB misses whose responses have an nginx origin's fields.
func BenchmarkMiss4KOrigin(b *testing.B) { benchMissFrom(b, 4096, 16<<20, originSource(4096)) }

// 100 KB misses whose responses have an nginx origin's fields, their
// bodies written in 32 KiB pieces.
func BenchmarkMiss100KOrigin(b *testing.B) { benchMissFrom(b, 100<<10, 16<<20, originSource(100<<10)) }

// 4 KB misses into a full 256 MB store (filling it takes 131,072
// misses first), where the entries' bookkeeping is sixteen times
// BenchmarkMiss4K's.
func BenchmarkMiss4KBigStore(b *testing.B) { benchMissIn(b, 4096, 256<<20) }

// 4 KB misses with an nginx origin's fields into a full 256 MB store:
// the bench harness's cache scenario, where the collector marks 65,536
// stored metas each cycle.
func BenchmarkMiss4KOriginBigStore(b *testing.B) {
	benchMissFrom(b, 4096, 256<<20, originSource(4096))
}

// missOverProxy returns the allocations per request, in the whole
// process (client, Sluice, origin), of misses through [cache, proxy]
// and of the same requests through the proxy alone, over real sockets.
func missOverProxy(t *testing.T, size int) (cached, alone float64) {
	payload := make([]byte, size)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Write(payload)
	}))
	t.Cleanup(origin.Close)
	p, err := proxy.New(proxy.Options{Upstreams: []string{origin.URL}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	x, err := New(Options{Size: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	withCache := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{x, p}))
	proxyOnly := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{p}))
	i := 0
	get := func(base string) {
		i++
		resp, err := sluicetest.Client.Get(base + "/a?k=" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for range 200 { // connections made, the store full
		get(withCache.URL)
		get(proxyOnly.URL)
	}
	cached = testing.AllocsPerRun(300, func() { get(withCache.URL) })
	alone = testing.AllocsPerRun(300, func() { get(proxyOnly.URL) })
	return cached, alone
}

// What a miss through the cache allocates over the proxy alone, counted
// over real requests.
func TestMissAllocsOverProxy(t *testing.T) {
	for _, size := range []int{4 << 10, 100 << 10} {
		cached, alone := missOverProxy(t, size)
		t.Logf("%d-byte misses: %v allocations per request through the cache and the proxy, %v through the proxy alone: %v more",
			size, cached, alone, cached-alone)
		if cached-alone > 8 {
			t.Errorf("%d-byte misses: the cache adds %v allocations per request, want at most 8", size, cached-alone)
		}
	}
}
