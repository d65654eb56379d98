package cache

import (
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/sluicetest/stacks"
)

// purgeFailing makes purgeSource fail some revalidations.
var purgeFailing atomic.Bool

// purgeMaxObject is purgeStress's MaxObjectSize: its largest bodies pass
// through unstored, read by collapsed requests from a window.
const purgeMaxObject = 200000

// purgeSource is stressSource with tags, stale-while-revalidate and
// stale-if-error, and revalidations that fail (503, while purgeFailing),
// are answered unstorable, or bring a whole new 200 with the same bytes.
var purgeSource = pipe.Source(func(c *pipe.Conn) pipe.Content {
	k, _ := strconv.Atoi(string(c.Request.Query[2:]))
	size := stressSizes[k%len(stressSizes)]
	etag := `"` + strconv.Itoa(k) + `"`
	h := c.Header()
	cond := string(c.Request.HeaderList("If-None-Match")) == etag
	if cond && k%4 == 2 && purgeFailing.Load() && rand.IntN(2) == 0 {
		c.SetStatus(http.StatusServiceUnavailable)
		h.Set("Cache-Control", "no-store")
		return func(w pipe.Writer) error { _, err := w.Write([]byte(strings.Repeat("x", 9000))); return err }
	}
	switch k % 4 {
	case 3:
		if cond && rand.IntN(2) == 0 {
			h.Set("Cache-Control", "no-store")
		} else {
			h.Set("Cache-Control", "max-age=1")
		}
	case 1:
		h.Set("Cache-Control", "max-age=1, stale-while-revalidate=2")
	case 2:
		h.Set("Cache-Control", "max-age=1, stale-if-error=30")
	default:
		h.Set("Cache-Control", "max-age=1")
	}
	h.Set("Cache-Tag", "t"+strconv.Itoa(k%5))
	h.Set("ETag", etag)
	if cond && k%4 != 3 && rand.IntN(3) != 0 {
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

// slowWriter writes through to next in pieces of 1 KiB, letting others
// run (or sleeping) in between: a client that reads slowly.
type slowWriter struct{ next pipe.Writer }

func (s slowWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), 1024)
		m, err := s.next.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		p = p[k:]
		if rand.IntN(4) == 0 {
			time.Sleep(100 * time.Microsecond)
		} else {
			runtime.Gosched()
		}
	}
	return n, nil
}
func (s slowWriter) Flush() error { return s.next.Flush() }
func (s slowWriter) Close() error { return nil }

// slowFilter makes the responses to requests with X-Slow slowWriters.
var slowFilter = pipe.Filter(func(c *pipe.Conn) pipe.Wrap {
	if c.Request.Header("X-Slow") == nil {
		return nil
	}
	return func(next pipe.Writer) pipe.Writer { return slowWriter{next} }
})

// TestRecycleWhileReading's clients, with more going on: HEAD and
// multipart ranges, clients that leave mid-body, slow writes, tag purges,
// bans, failing and unstorable revalidations, bodies over MaxObjectSize;
// every chunk given back is filled with a poison byte, so that a byte a
// client receives from a chunk given back too early shows.
func TestRecycleUnderPurges(t *testing.T) {
	for _, heap := range []bool{false, true} {
		t.Run(fmt.Sprintf("heap=%v", heap), func(t *testing.T) {
			old := arenaHeap
			arenaHeap = heap
			arenaPoison = true
			defer func() { arenaHeap = old; arenaPoison = false }()
			purgeStress(t)
		})
	}
}

func purgeStress(t *testing.T) {
	if *everyOnDisk {
		t.Skip("bodies in memory")
	}
	x, err := New(Options{Size: 1 << 20, MaxObjectSize: purgeMaxObject})
	if err != nil {
		t.Fatal(err)
	}
	cl := &clock{t: time.Now()}
	x.now = cl.now
	srv := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{slowFilter, x, purgeSource}))
	host := strings.TrimPrefix(srv.URL, "http://")
	const clients, requests, keys = 16, 150, 70
	var bad, poisoned atomic.Int64
	stop := make(chan struct{})
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		r := rand.New(rand.NewPCG(99, 1))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(2+r.IntN(6)) * time.Millisecond):
			}
			switch i % 7 {
			case 0:
				x.PurgeTag("t" + strconv.Itoa(r.IntN(5)))
			case 1, 2, 3:
				x.PurgeURL(host, "/k?n="+strconv.Itoa(r.IntN(keys)))
			case 4:
				cl.advance(700 * time.Millisecond)
			case 5:
				purgeFailing.Store(r.IntN(2) == 0)
			case 6:
				if i%70 == 6 {
					x.BanPrefix(host, "/")
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 11))
			for range requests {
				k := r.IntN(keys)
				if err := purgeGet(srv.URL, k, r); err != nil {
					if strings.Contains(err.Error(), "poison") {
						poisoned.Add(1)
					}
					if bad.Add(1) <= 8 {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	pwg.Wait()
	x.BanPrefix(host, "/")
	x.fetches.Wait()
	defer func() {
		if t.Failed() {
			// What a rare failure here left: how much the arena has
			// out, what the cache holds, and where its goroutines wait.
			_, free, reused, out := x.arena.stats()
			st := x.Stats()
			t.Logf("arena: %d bytes out, %d free, %d chunks reused; cache: %d objects, %d collapsed, %d purged; goroutines:\n%s",
				out, free, reused, st.Objects, st.Collapsed, st.Purged, stacks.Summary())
		}
	}()
	sluicetest.WaitFor(t, "every chunk back in the arena", func() bool {
		_, _, _, out := x.arena.stats()
		return out == 0
	})
	_, _, reused, _ := x.arena.stats()
	st := x.Stats()
	t.Logf("%d hits, %d misses, %d stale, %d revalidated, %d collapsed, %d evicted, %d purged, %d chunks reused, %d bad (%d poisoned)",
		st.Hits, st.Misses, st.Stale, st.Revalidated, st.Collapsed, st.Evictions, st.Purged, reused, bad.Load(), poisoned.Load())
	if st.Evictions == 0 || reused == 0 || st.Hits == 0 || st.Collapsed == 0 || st.Purged == 0 {
		t.Errorf("the test did not evict, reuse, hit, collapse or purge")
	}
}

// purgeCheck compares got, bytes from offset from of key k's body, with
// what the source sent.
func purgeCheck(k, from int, got []byte, status string) error {
	for i, c := range got {
		if want := stressByte(k, from+i); c != want {
			what := "wrong byte"
			if c == 0xEE {
				what = "poison byte"
			}
			return fmt.Errorf("key %d (%s): %s at %d: %d, want %d", k, status, what, from+i, c, want)
		}
	}
	return nil
}

// purgeGet requests key k as purgeStress's clients do (HEAD, a Range,
// several, slowly, leaving mid-body) and checks what comes.
func purgeGet(url string, k int, r *rand.Rand) error {
	size := stressSizes[k%len(stressSizes)]
	oversize := size > purgeMaxObject
	method := "GET"
	if r.IntN(10) == 0 {
		method = "HEAD"
	}
	req, _ := http.NewRequest(method, url+"/k?n="+strconv.Itoa(k), nil)
	from, to := 0, size-1
	mode := r.IntN(20)
	ranged := mode < 3 && size > 10
	multi := mode == 3 && size > 100
	if r.IntN(2) == 0 {
		req.Header.Set("X-Slow", "1")
	}
	if ranged {
		from = r.IntN(size / 2)
		to = from + r.IntN(size-from)
		req.Header.Set("Range", "bytes="+strconv.Itoa(from)+"-"+strconv.Itoa(to))
	}
	if multi {
		req.Header.Set("Range", "bytes=0-10,50-"+strconv.Itoa(size/2))
	}
	resp, err := sluicetest.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	cs := resp.Header.Get("Cache-Status")
	if method == "HEAD" {
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 && resp.StatusCode != 206 {
			return fmt.Errorf("HEAD key %d: %d", k, resp.StatusCode)
		}
		return nil
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		from, to = 0, size-1
	case resp.StatusCode == http.StatusPartialContent && ranged:
	case resp.StatusCode == http.StatusPartialContent && multi && resp.Header.Get("Content-Range") != "":
		var n int
		fmt.Sscanf(resp.Header.Get("Content-Range"), "bytes %d-%d/%d", &from, &to, &n)
	case resp.StatusCode == http.StatusPartialContent && multi:
		_, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		mr := multipart.NewReader(resp.Body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return fmt.Errorf("key %d multipart: %v %q %q", k, err, resp.Header, cs)
			}
			var a, b, n int
			fmt.Sscanf(p.Header.Get("Content-Range"), "bytes %d-%d/%d", &a, &b, &n)
			got, err := io.ReadAll(p)
			if err != nil {
				return err
			}
			if len(got) != b-a+1 {
				return fmt.Errorf("key %d part: %d bytes want %d", k, len(got), b-a+1)
			}
			if err := purgeCheck(k, a, got, cs); err != nil {
				return err
			}
		}
	case resp.StatusCode == http.StatusInternalServerError && oversize:
		// A collapsed reader of a body too long to store reads it from
		// a window of the last MaxObjectSize bytes, and one that falls
		// further behind is cut off (body.window): a client whose first
		// bytes had not reached the wire then gets the engine's 500, as
		// the design allows (bounded memory over slow readers; its start
		// is kept for it only until its first write, and only while the
		// body holds less than twice the window, body.trim). A slow
		// writer (X-Slow) makes it happen, and so does a loaded machine
		// to any reader: under the race detector with other tests
		// beside it, 3 runs in 42 saw it for a client without X-Slow.
		return nil
	default:
		return fmt.Errorf("key %d: status %d (%s)", k, resp.StatusCode, cs)
	}
	var got []byte
	switch m := r.IntN(10); {
	case m < 2:
		// Client goes away mid-body.
		buf := make([]byte, 1+r.IntN(9000))
		n, _ := io.ReadFull(resp.Body, buf)
		return purgeCheck(k, from, buf[:n], cs)
	case m < 4:
		buf := make([]byte, 512)
		for {
			n, err := resp.Body.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				if oversize {
					return purgeCheck(k, from, got, cs)
				}
				return fmt.Errorf("key %d: %v after %d bytes", k, err, len(got))
			}
			if r.IntN(8) == 0 {
				time.Sleep(time.Millisecond)
			}
			runtime.Gosched()
		}
	default:
		got, err = io.ReadAll(resp.Body)
		if err != nil {
			if oversize {
				return purgeCheck(k, from, got, cs)
			}
			return fmt.Errorf("key %d: %v after %d bytes", k, err, len(got))
		}
	}
	if err := purgeCheck(k, from, got, cs); err != nil {
		return err
	}
	if len(got) != to-from+1 {
		return fmt.Errorf("key %d (%s): %d bytes, want %d", k, cs, len(got), to-from+1)
	}
	return nil
}
