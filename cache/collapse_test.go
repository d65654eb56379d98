package cache

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/sluicetest/stacks"
)

// 1,000 concurrent clients for one cold key make exactly one request to
// the origin, and every one gets the whole body: 1,000 HTTP/1.1
// connections from this process, whose first requests are all in the
// cache before the origin answers (it holds its answer until 999 wait on
// the fetch); each then asks again on its keep-alive connection and gets
// a hit.
func TestCollapsing(t *testing.T) {
	const conns, perConn = 1000, 2
	var o *origin
	release := make(chan struct{})
	h := newHarness(t, Options{}, nil)
	// Released at the latest as the test ends (before the origin's
	// cleanup, which waits for its handlers), even when it fails first.
	var releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	o = h.o
	body := strings.Repeat("collapsed body ", 5000) // 75 KB: several writes
	o.set(func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Header().Set("Cache-Control", "max-age=600")
		// Stream in pieces with flushes, so that waiters read a growing body.
		for i := 0; i < len(body); i += 10000 {
			io.WriteString(w, body[i:min(i+10000, len(body))])
			w.(http.Flusher).Flush()
		}
	})
	addr := strings.TrimPrefix(h.url, "http://")
	// Where the process's goroutines wait when a client first finds its
	// answer missing or short, taken then (the client's going may undo
	// it) and logged below.
	var snapOnce sync.Once
	var snap string
	stuck := func() { snapOnce.Do(func() { snap = stacks.Summary() }) }
	var wg sync.WaitGroup
	errs := make(chan error, conns*perConn)
	started := make(chan struct{}, conns)
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer nc.Close()
			// A bound on a hang: a request unanswered by then fails the
			// test with the goroutines' stacks (stuck), not after the
			// server's idle timeout.
			nc.SetDeadline(time.Now().Add(30 * time.Second))
			br := bufio.NewReader(nc)
			for i := range perConn {
				if _, err := fmt.Fprintf(nc, "GET /hot HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
					errs <- err
					return
				}
				if i == 0 {
					started <- struct{}{}
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					stuck()
					errs <- fmt.Errorf("request %d: %v", i, err)
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(got) != body {
					stuck()
					errs <- fmt.Errorf("request %d: %d bytes, %v", i, len(got), err)
					return
				}
			}
		}()
	}
	for range conns {
		<-started
	}
	// Every connection's first request is sent; let the ones the cache has
	// not yet taken in arrive before the origin answers.
	sluicetest.WaitFor(t, "the collapsed requests to wait", func() bool { return h.x.waiting("G\x00http://"+addr+"/hot") >= conns-1 })
	letGo()
	wg.Wait()
	close(errs)
	failed := false
	for err := range errs {
		t.Error(err)
		failed = true
	}
	if failed {
		st := h.x.Stats()
		t.Logf("cache: %d hits, %d collapsed, %d misses; goroutines when the first client failed:\n%s", st.Hits, st.Collapsed, st.Misses, snap)
	}
	if got := o.n.Load(); got != 1 {
		t.Errorf("origin saw %d requests for one key, want 1", got)
	}
	st := h.x.Stats()
	if st.Collapsed != conns-1 {
		t.Errorf("%d requests collapsed, want %d", st.Collapsed, conns-1)
	}
	if st.Hits != conns*perConn-conns {
		t.Errorf("%d hits, want %d", st.Hits, conns*perConn-conns)
	}
}

// A response that cannot be stored releases the collapsed requests to
// fetch on their own, and leaves a hit-for-pass mark so later requests do
// not wait.
func TestCollapseReleasedWhenUncacheable(t *testing.T) {
	var o *origin
	release := make(chan struct{})
	h := newHarness(t, Options{}, nil)
	o = h.o
	o.set(func(w http.ResponseWriter, r *http.Request) {
		if o.n.Load() == 1 {
			<-release
		}
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "private "+r.Header.Get("X-N"))
	})
	const n = 5
	var wg sync.WaitGroup
	bodies := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, b, err := h.try("GET", "/p", fmt.Sprintf("X-N: %d", i))
			if err != nil {
				b = err.Error()
			}
			bodies <- b
		}()
		if i == 0 {
			sluicetest.WaitFor(t, "the first request at the origin", func() bool { return o.n.Load() == 1 })
		}
	}
	sluicetest.WaitFor(t, "the others to wait", func() bool { return h.x.waiting("G\x00"+strings.Replace(h.url, "http://", "http://", 1)+"/p") >= n-1 })
	close(release)
	wg.Wait()
	close(bodies)
	seen := map[string]bool{}
	for b := range bodies {
		seen[b] = true
	}
	if len(seen) != n || o.n.Load() != n {
		t.Errorf("bodies %v, origin %d: each request must get its own answer", seen, o.n.Load())
	}
	resp, _ := h.get(t, "/p")
	if cs := resp.Header.Get("Cache-Status"); !strings.HasPrefix(cs, "Sluice; fwd=miss") {
		t.Errorf("after the pass mark: %q", cs)
	}
}

// A request waiting for another's fetch stops waiting when its client
// goes: it no longer counts as a reader, which keeps a fetch going.
func TestCollapsedClientGone(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h := newHarness(t, Options{LockTimeout: time.Minute}, func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Header().Set("Cache-Control", "max-age=60")
	})
	go h.try("GET", "/g")
	sluicetest.WaitFor(t, "the leader at the origin", func() bool { return h.o.n.Load() == 1 })
	conn := sluicetest.Dial(t, strings.TrimPrefix(h.url, "http://"))
	if _, err := conn.Write([]byte("GET /g HTTP/1.1\r\nHost: " + strings.TrimPrefix(h.url, "http://") + "\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, "the request to join the leader", func() bool { return h.x.joined() == 1 })
	conn.Close()
	sluicetest.WaitFor(t, "the request to leave once its client went", func() bool { return h.x.joined() == 0 })
}

// A windowed body (too long to store, read by collapsed clients) keeps
// its start while a reader that joined has not written its first byte,
// and one that comes once the start is gone is told to go on its own.
func TestWindowPinnedStart(t *testing.T) {
	b := new(body).init(-1, nil)
	chunk := make([]byte, chunkSize)
	b.append(chunk)
	if !b.pinStart() {
		t.Fatal("pinStart refused a body whose start is there")
	}
	b.bound(2 * chunkSize)
	for range 2 {
		b.append(chunk)
	}
	if p, _, _, err := b.next(0); err != nil || len(p) == 0 {
		t.Fatalf("the pinned start was let go: next(0) = %d bytes, %v", len(p), err)
	}
	b.unpin()
	if _, _, _, err := b.next(0); err != errBodyFailed {
		t.Fatalf("the start stayed once unpinned: next(0) error %v", err)
	}
	if b.pinStart() {
		t.Fatal("pinStart took a body whose start is gone")
	}
}

// A pin holds a windowed body's start only until the body holds twice
// its window: a collapsed reader whose first write never returns (its
// client reads nothing) cannot make a body too long to store grow
// without bound. The reader is then cut off like any reader behind.
func TestWindowPinBounded(t *testing.T) {
	const window = 2 * chunkSize
	b := new(body).init(-1, nil)
	chunk := make([]byte, chunkSize)
	b.append(chunk)
	if !b.pinStart() {
		t.Fatal("pinStart refused a body whose start is there")
	}
	b.bound(window)
	for i := range 64 {
		b.append(chunk)
		b.mu.Lock()
		held := b.n - b.base
		b.mu.Unlock()
		if held > 2*window {
			t.Fatalf("after %d chunks a pinned body holds %d bytes, over twice its window (%d)", i+2, held, 2*window)
		}
	}
	if _, _, _, err := b.next(0); err != errBodyFailed {
		t.Fatalf("the start was kept past twice the window: next(0) error %v", err)
	}
	b.unpin()
}
