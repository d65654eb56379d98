package cache

import (
	"flag"
	"fmt"
	"html/template"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// onHeap makes New's arenas take chunks from the Go heap, to measure
// that against the mapping.
var (
	onHeap     = flag.Bool("cache.arena-heap", false, "take the memory stores' body chunks from the Go heap")
	smallPages = flag.Bool("cache.arena-small-pages", false, "ask for no huge pages for the memory stores' arenas")
)

// stressSizes are the bodies' sizes, by key: every chunk class, exact
// pieces, and bodies of several chunks.
var stressSizes = []int{100, 3000, 3500, 4096, 5000, 9000, 17000, 32768, 40000, 100000, 250000}

// stressByte is byte i of key k's body: no two keys' bodies agree for
// long, so bytes of a recycled chunk show.
func stressByte(k, i int) byte { return byte(k*131 + i*7 + i>>9 + i>>13) }

// stressSource answers /k?n=K with key K's body, of known length or
// chunked (K divisible by 3), written in uneven pieces with flushes so
// that collapsed requests read it as it grows; a matching If-None-Match
// gets a 304.
var stressSource = pipe.Source(func(c *pipe.Conn) pipe.Content {
	k, _ := strconv.Atoi(string(c.Request.Query[2:]))
	size := stressSizes[k%len(stressSizes)]
	etag := `"` + strconv.Itoa(k) + `"`
	h := c.Header()
	h.Set("Cache-Control", "max-age=1")
	h.Set("ETag", etag)
	if string(c.Request.HeaderList("If-None-Match")) == etag {
		c.SetStatus(http.StatusNotModified)
		return nil
	}
	if k%3 != 0 {
		h.SetContentLength(int64(size))
	}
	return func(w pipe.Writer) error {
		p := make([]byte, 7001)
		for off := 0; off < size; {
			n := min(size-off, 1000+(off*13)%6000)
			for i := range n {
				p[i] = stressByte(k, off+i)
			}
			if _, err := w.Write(p[:n]); err != nil {
				return err
			}
			off += n
			if off%3 == 0 {
				if err := w.Flush(); err != nil {
					return err
				}
			}
			runtime.Gosched()
		}
		return nil
	}
})

// Bodies' memory is recycled while clients read them: many clients
// request keys of a store far too small for them (so that entries are
// evicted while hits and collapsed requests read them), some reading
// slowly, some a Range, while a purger removes keys and the clock runs
// out their freshness (so that revalidations replace them). Every byte
// every client receives is checked, with chunks from the mapping and
// from the Go heap (which the race detector sees).
func TestRecycleWhileReading(t *testing.T) {
	for _, heap := range []bool{false, true} {
		t.Run(fmt.Sprintf("heap=%v", heap), func(t *testing.T) {
			old := arenaHeap
			arenaHeap = heap
			defer func() { arenaHeap = old }()
			stressRecycle(t)
		})
	}
}

func stressRecycle(t *testing.T) {
	if *everyOnDisk {
		t.Skip("bodies in memory")
	}
	x, err := New(Options{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	cl := &clock{t: time.Now()}
	x.now = cl.now
	srv := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{x, stressSource}))
	const clients, requests, keys = 16, 120, 32
	var bad, done atomic.Int64
	host := strings.TrimPrefix(srv.URL, "http://")
	var wg sync.WaitGroup
	for g := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for range requests {
				k := r.IntN(keys)
				if err := stressGet(srv.URL, k, r); err != nil {
					if bad.Add(1) <= 5 {
						t.Error(err)
					}
				}
				switch n := done.Add(1); {
				case n%50 == 0:
					// Stale, to be revalidated (and replaced, or freshened).
					cl.advance(700 * time.Millisecond)
				case n%13 == 0:
					x.PurgeURL(host, "/k?n="+strconv.Itoa(r.IntN(keys)))
				}
			}
		}()
	}
	wg.Wait()
	// Once everything is removed and every answer is done, every chunk
	// is back: no hold was left behind.
	x.BanPrefix(host, "/")
	x.fetches.Wait()
	var out int64
	sluicetest.WaitFor(t, "every chunk back in the arena", func() bool {
		_, _, _, out = x.arena.stats()
		return out == 0
	})
	_, _, reused, _ := x.arena.stats()
	st := x.Stats()
	t.Logf("%d hits, %d misses, %d collapsed, %d evicted, %d purged, %d chunks reused", st.Hits, st.Misses, st.Collapsed, st.Evictions, st.Purged, reused)
	if st.Evictions == 0 || reused == 0 || st.Hits == 0 {
		t.Errorf("the test did not evict (%d), reuse chunks (%d) or hit (%d)", st.Evictions, reused, st.Hits)
	}
}

// stressGet requests key k, maybe a Range of it, maybe reading slowly,
// and checks what comes.
func stressGet(url string, k int, r *rand.Rand) error {
	size := stressSizes[k%len(stressSizes)]
	req, _ := http.NewRequest("GET", url+"/k?n="+strconv.Itoa(k), nil)
	from, to := 0, size-1
	ranged := r.IntN(6) == 0 && size > 10
	if ranged {
		from = r.IntN(size / 2)
		to = from + r.IntN(size-from)
		req.Header.Set("Range", "bytes="+strconv.Itoa(from)+"-"+strconv.Itoa(to))
	}
	resp, err := sluicetest.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		from, to = 0, size-1
	case resp.StatusCode == http.StatusPartialContent && ranged:
	default:
		return fmt.Errorf("key %d: status %d", k, resp.StatusCode)
	}
	var got []byte
	if r.IntN(4) == 0 {
		// A slow reader: small reads, with others running in between.
		buf := make([]byte, 512)
		for {
			n, err := resp.Body.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("key %d: %v after %d bytes", k, err, len(got))
			}
			runtime.Gosched()
		}
	} else if got, err = io.ReadAll(resp.Body); err != nil {
		return fmt.Errorf("key %d: %v after %d bytes", k, err, len(got))
	}
	if len(got) != to-from+1 {
		return fmt.Errorf("key %d (%s): %d bytes, want %d", k, resp.Header.Get("Cache-Status"), len(got), to-from+1)
	}
	for i, c := range got {
		if want := stressByte(k, from+i); c != want {
			return fmt.Errorf("key %d (%s): byte %d is %d, want %d", k, resp.Header.Get("Cache-Status"), from+i, c, want)
		}
	}
	return nil
}

// An error page in front of the cache replaces the answers to stored
// error responses, whose content then never runs to let go of its hold
// on the body: such bodies keep no memory of the arena.
func TestErrorPageKeepsNoChunks(t *testing.T) {
	if *everyOnDisk {
		t.Skip("bodies in memory")
	}
	x, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A page of 8 KB: what is stored is the page (it passes the cache's
	// filter), in chunks of the arena but for this.
	page := strings.Repeat("gone ", 1640)
	pages, err := pipe.NewErrorPages(map[string]*template.Template{"404": template.Must(template.New("404").Parse(page))})
	if err != nil {
		t.Fatal(err)
	}
	missing := pipe.Source(func(c *pipe.Conn) pipe.Content {
		c.Header().Set("Cache-Control", "max-age=600")
		c.Header().SetContentLength(8192)
		c.SetStatus(http.StatusNotFound)
		return func(w pipe.Writer) error { _, err := w.Write(make([]byte, 8192)); return err }
	})
	srv := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{pages, x, missing}))
	for range 5 {
		resp, body := sluicetest.Get(t, srv.URL+"/missing")
		if resp.StatusCode != http.StatusNotFound || body != page {
			t.Fatalf("got %d and %d bytes, want the error page", resp.StatusCode, len(body))
		}
	}
	if st := x.Stats(); st.Hits != 4 {
		t.Fatalf("%d hits, want 4", st.Hits)
	}
	x.BanPrefix(strings.TrimPrefix(srv.URL, "http://"), "/")
	if _, _, _, out := x.arena.stats(); out != 0 {
		t.Errorf("%d bytes of the arena held after the stored 404 was removed", out)
	}
}

// Small bodies, then large ones, in a store that holds only a part of
// each: the memory the small bodies let go of as they are evicted must
// serve the large ones, not sit cut into 4 KiB pieces while the large
// ones go to the Go heap.
func TestArenaSizeMixShifts(t *testing.T) {
	if *everyOnDisk {
		t.Skip("bodies in memory")
	}
	x, err := New(Options{Size: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if x.arena.region == nil {
		t.Skip("no mapping here")
	}
	src := pipe.Source(func(c *pipe.Conn) pipe.Content {
		n, _ := strconv.Atoi(string(c.Request.Query[2:]))
		c.Header().Set("Cache-Control", "max-age=600")
		c.Header().SetContentLength(int64(n))
		return func(w pipe.Writer) error { _, err := w.Write(make([]byte, n)); return err }
	})
	srv := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{x, src}))
	for i := range 2000 {
		sluicetest.Get(t, srv.URL+"/s"+strconv.Itoa(i)+"?n=4096")
	}
	if st := x.Stats(); st.Evictions == 0 {
		t.Fatalf("no evictions in the 4 KB phase: the test means to fill the store")
	}
	for i := range 300 {
		sluicetest.Get(t, srv.URL+"/l"+strconv.Itoa(i)+"?n=131072")
	}
	mapped, free, _, out := x.arena.stats()
	x.arena.mu.Lock()
	spilled := x.arena.spilled
	x.arena.mu.Unlock()
	t.Logf("carved %d of %d, free %d, out %d, %d chunks from the Go heap", mapped, len(x.arena.region), free, out, spilled)
	if spilled != 0 {
		t.Errorf("%d chunks taken from the Go heap, want none: the mapping holds the store", spilled)
	}
}

// The mapping's units are split and merged back: a model of which
// chunks are out checks every get and put of a random sequence, and
// every chunk is distinct, of its class's size, and inside the mapping.
func FuzzArenaUnits(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0x80, 0x81, 0x82, 0x83})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0x80, 0x80, 0x80, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		a := newArena(6 * maxClass) // 7 units
		if a.region == nil {
			t.Skip("no mapping here")
		}
		var held [][]byte
		var out int64
		for _, op := range ops {
			if op&0x80 != 0 && len(held) > 0 {
				i := int(op&0x7f) % len(held)
				c := held[i]
				held[i] = held[len(held)-1]
				held = held[:len(held)-1]
				out -= int64(cap(c))
				a.put(c)
				continue
			}
			k := int(op) % numClasses
			c := a.get(k)
			if cap(c) != 1<<(minClassShift+k) || len(c) != 0 {
				t.Fatalf("get(%d): len %d cap %d", k, len(c), cap(c))
			}
			out += int64(cap(c))
			if a.owns(c) {
				p := uintptr(unsafe.Pointer(unsafe.SliceData(c[:1])))
				for _, h := range held {
					if !a.owns(h) {
						continue
					}
					q := uintptr(unsafe.Pointer(unsafe.SliceData(h[:1])))
					if p < q+uintptr(cap(h)) && q < p+uintptr(cap(c)) {
						t.Fatalf("get(%d) overlaps a chunk out", k)
					}
				}
			}
			held = append(held, c)
		}
		mapped, free, _, gotOut := a.stats()
		if gotOut != out {
			t.Fatalf("out %d, want %d", gotOut, out)
		}
		var outMapped int64
		for _, c := range held {
			if a.owns(c) {
				outMapped += int64(cap(c))
			}
		}
		if free+outMapped != mapped {
			t.Fatalf("free %d + out of the mapping %d != carved %d", free, outMapped, mapped)
		}
		for _, c := range held {
			a.put(c)
		}
		if mapped, free, _, out := a.stats(); out != 0 || free != mapped || len(a.wholes) != a.carved {
			t.Fatalf("all back: out %d, free %d of %d carved, %d whole units of %d", out, free, mapped, len(a.wholes), a.carved)
		}
	})
}

// Taking chunks of every class from the mapping and giving them back,
// which splits units and merges them, allocates nothing.
func TestArenaGetPutAllocs(t *testing.T) {
	a := newArena(64 * maxClass)
	if a.region == nil {
		t.Skip("no mapping here")
	}
	var held [4 * numClasses][]byte
	n := testing.AllocsPerRun(100, func() {
		for i := range held {
			held[i] = a.get(i % numClasses)
		}
		for i := range held {
			a.put(held[len(held)-1-i])
			held[len(held)-1-i] = nil
		}
	})
	if n != 0 {
		t.Errorf("%v allocations per round of gets and puts, want 0", n)
	}
	if _, _, _, out := a.stats(); out != 0 {
		t.Errorf("%d bytes out after every chunk came back", out)
	}
}
