package cache

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// With the origin killed, a stale response is served where
// stale-if-error (the response's or the request's) or the configured
// grace allows it, and the error passed on where it does not.
func TestStaleIfErrorOriginKilled(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		resp    []string
		req     []string
		advance time.Duration
		stale   bool
	}{
		{name: "response stale-if-error", resp: []string{"Cache-Control: max-age=10, stale-if-error=60"}, advance: 30 * time.Second, stale: true},
		{name: "response stale-if-error with validator", resp: []string{"Cache-Control: max-age=10, stale-if-error=60", `ETag: "v"`}, advance: 30 * time.Second, stale: true},
		{name: "response stale-if-error over", resp: []string{"Cache-Control: max-age=10, stale-if-error=60"}, advance: 100 * time.Second},
		{name: "request stale-if-error", resp: []string{"Cache-Control: max-age=10"}, req: []string{"Cache-Control: stale-if-error=60"}, advance: 30 * time.Second, stale: true},
		{name: "nothing allows", resp: []string{"Cache-Control: max-age=10"}, advance: 30 * time.Second},
		{name: "grace", opts: Options{StaleIfError: time.Minute}, resp: []string{"Cache-Control: max-age=10"}, advance: 30 * time.Second, stale: true},
		{name: "grace over", opts: Options{StaleIfError: time.Minute}, resp: []string{"Cache-Control: max-age=10"}, advance: 90 * time.Second},
		{name: "grace and must-revalidate", opts: Options{StaleIfError: time.Minute}, resp: []string{"Cache-Control: max-age=10, must-revalidate"}, advance: 30 * time.Second},
		{name: "grace and s-maxage", opts: Options{StaleIfError: time.Minute}, resp: []string{"Cache-Control: s-maxage=10"}, advance: 30 * time.Second},
		{name: "grace and no-cache", opts: Options{StaleIfError: time.Hour}, resp: []string{"Cache-Control: max-age=600, no-cache", `ETag: "1"`}, advance: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o *origin
			h := newHarness(t, tt.opts, nil)
			o = h.o
			o.set(respond(&o, 200, "kept", tt.resp...))
			_, stored := h.get(t, "/s")
			o.srv.Close() // the origin is gone: the proxy gets no connection
			h.clock.advance(tt.advance)
			resp, body := h.get(t, "/s", tt.req...)
			cs := resp.Header.Get("Cache-Status")
			if tt.stale {
				if resp.StatusCode != 200 || body != stored || !strings.Contains(cs, "detail=stale-if-error") || resp.Header.Get("Age") == "" {
					t.Errorf("got %d %q (%s), want the stale %q", resp.StatusCode, body, cs, stored)
				}
				return
			}
			if resp.StatusCode != http.StatusBadGateway || !strings.Contains(cs, "fwd-status=502") {
				t.Errorf("got %d %q (%s), want the 502", resp.StatusCode, body, cs)
			}
		})
	}
}

// A 5xx from a live origin on revalidation is handled the same way.
func TestStaleIfErrorStatus(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	o.set(respond(&o, 200, "good", "Cache-Control: max-age=10, stale-if-error=60"))
	_, stored := h.get(t, "/e")
	o.set(respond(&o, 503, "down", "Cache-Control: no-store"))
	h.clock.advance(20 * time.Second)
	resp, body := h.get(t, "/e")
	if resp.StatusCode != 200 || body != stored || !strings.Contains(resp.Header.Get("Cache-Status"), "fwd-status=503") {
		t.Errorf("got %d %q %q", resp.StatusCode, body, resp.Header.Get("Cache-Status"))
	}
	// The stale response is kept: a later success replaces it.
	o.set(respond(&o, 200, "new", "Cache-Control: max-age=60"))
	if _, body := h.get(t, "/e"); body != "new3" {
		t.Errorf("after recovery: %q", body)
	}
	if _, body := h.get(t, "/e"); body != "new3" {
		t.Errorf("the recovered response was not stored: %q", body)
	}
}

// stale-while-revalidate answers at once from the store and revalidates
// in the background, once for many requests; the next request gets the
// new response.
func TestStaleWhileRevalidate(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	release := make(chan struct{})
	o.set(respond(&o, 200, "v", "Cache-Control: max-age=10, stale-while-revalidate=60"))
	_, first := h.get(t, "/w")
	slow := respond(&o, 200, "v", "Cache-Control: max-age=10, stale-while-revalidate=60")
	o.set(func(w http.ResponseWriter, r *http.Request) {
		<-release
		slow(w, r)
	})
	h.clock.advance(20 * time.Second)
	for range 5 {
		resp, body := h.get(t, "/w")
		if body != first || !strings.Contains(resp.Header.Get("Cache-Status"), "detail=stale-while-revalidate") {
			t.Errorf("stale answer %q %q", body, resp.Header.Get("Cache-Status"))
		}
	}
	close(release)
	sluicetest.WaitFor(t, "the revalidation to be stored", func() bool {
		_, b := h.get(t, "/w", "Cache-Control: only-if-cached")
		return b == "v2"
	})
	if got := o.n.Load(); got != 2 {
		t.Errorf("origin saw %d requests, want 2 (one background revalidation)", got)
	}
}

// Concurrent requests for one stale response share one revalidation.
func TestRevalidationCollapsed(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	o.set(respond(&o, 200, "v", "Cache-Control: max-age=10", `ETag: "1"`))
	h.get(t, "/rc")
	release := make(chan struct{})
	var releaseOnce sync.Once
	// Released on every way out, a failed wait included: the origin's
	// server, closed by the test's cleanup, waits for its handlers.
	defer releaseOnce.Do(func() { close(release) })
	inner := respond(&o, 200, "v", "Cache-Control: max-age=10", `ETag: "1"`)
	o.set(func(w http.ResponseWriter, r *http.Request) {
		<-release
		inner(w, r)
	})
	h.clock.advance(time.Minute)
	done := make(chan string, 10)
	for range 10 {
		go func() {
			resp, body, err := h.try("GET", "/rc")
			if err != nil {
				done <- err.Error()
				return
			}
			done <- body + " " + resp.Header.Get("Cache-Status")
		}()
	}
	sluicetest.WaitFor(t, "the revalidation at the origin", func() bool { return o.n.Load() == 2 })
	releaseOnce.Do(func() { close(release) })
	for range 10 {
		if got := <-done; !strings.HasPrefix(got, "v1 Sluice; fwd=stale; fwd-status=304") && !strings.HasPrefix(got, "v1 Sluice; hit") {
			t.Errorf("answer %q", got)
		}
	}
	if got := o.n.Load(); got != 2 {
		t.Errorf("origin saw %d requests, want 2", got)
	}
}

// An error answer to a revalidation is for the requests that shared it
// then: one that comes once it was decided asks the origin anew, even
// while the error's body is still coming in.
func TestStaleIfErrorNotSharedAfterward(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	o.set(respond(&o, 200, "good", "Cache-Control: max-age=10, stale-if-error=60"))
	_, stored := h.get(t, "/e")
	release := make(chan struct{})
	defer close(release)
	o.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "down")
		w.(http.Flusher).Flush()
		<-release
	})
	h.clock.advance(20 * time.Second)
	if resp, body := h.get(t, "/e"); resp.StatusCode != 200 || body != stored {
		t.Fatalf("during the error: %d %q", resp.StatusCode, body)
	}
	o.set(respond(&o, 200, "new", "Cache-Control: max-age=60"))
	if resp, body := h.get(t, "/e"); body != "new3" {
		t.Errorf("after recovery: %q (%s)", body, resp.Header.Get("Cache-Status"))
	}
}

// A 5xx that could be stored (it has max-age) does not replace a stale
// response that answered it under stale-if-error: the next request gets
// the stale response again, not the error as a hit.
func TestStaleIfErrorKeepsStaleOver5xx(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		resp string
		req  []string
	}{
		{name: "response stale-if-error", resp: "max-age=10, stale-if-error=3600"},
		{name: "request stale-if-error", resp: "max-age=10", req: []string{"Cache-Control: stale-if-error=3600"}},
		{name: "grace", opts: Options{StaleIfError: time.Hour}, resp: "max-age=10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o *origin
			h := newHarness(t, tt.opts, nil)
			o = h.o
			o.set(respond(&o, 200, "good", "Cache-Control: "+tt.resp))
			_, stored := h.get(t, "/e")
			o.set(respond(&o, 500, "error page", "Cache-Control: max-age=60"))
			h.clock.advance(20 * time.Second)
			for i := range 2 {
				resp, body := h.get(t, "/e", tt.req...)
				if resp.StatusCode != 200 || body != stored {
					t.Errorf("request %d: %d %q (%s)", i, resp.StatusCode, body, resp.Header.Get("Cache-Status"))
				}
			}
		})
	}
}

// A request that judged a stored response stale just before another
// request's revalidation freshened it with a 304, and reaches the
// revalidation step just after, starts no second revalidation: the
// freshened response answers it.
func TestFreshenedEntryNotRevalidatedAgain(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	o.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=10")
		w.Header().Set("ETag", `"1"`)
		if r.Header.Get("If-None-Match") == `"1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		io.WriteString(w, "v")
	})
	h.get(t, "/f")
	h.clock.advance(20 * time.Second)
	// The raced request's lookup and judgement: stale.
	r := &engine.Request{Method: []byte("GET"), Path: []byte("/f"), Host: []byte(strings.TrimPrefix(h.url, "http://"))}
	pk := h.x.primaryKey(r)
	old, _, _ := h.x.lookup(pk, r)
	if old == nil {
		t.Fatal("the stale response is not stored")
	}
	judged := old.meta.Load()
	// Another request revalidates it meanwhile.
	if resp, body := h.get(t, "/f"); body != "v" || !strings.Contains(resp.Header.Get("Cache-Status"), "fwd-status=304") {
		t.Fatalf("revalidation answered %q (%s), want v after a 304", body, resp.Header.Get("Cache-Status"))
	}
	h.x.fetches.Wait()
	if old.meta.Load() == judged {
		t.Fatal("the 304 did not freshen the entry the raced request holds")
	}
	if old.pending.Load() != nil {
		t.Fatal("the finished revalidation is still pending")
	}
	if f, started := h.x.revalidation(nil, nil, nil, pk, old, judged, true); f != nil || started {
		t.Fatalf("revalidation of the freshened response: %v, started %v; want none", f, started)
	}
	if got := o.n.Load(); got != 2 {
		t.Errorf("origin saw %d requests, want 2", got)
	}
	// Judged again, the stored response is fresh.
	if resp, body := h.get(t, "/f"); body != "v" || !strings.HasPrefix(resp.Header.Get("Cache-Status"), "Sluice; hit") {
		t.Errorf("after: %q (%s), want a hit", body, resp.Header.Get("Cache-Status"))
	}
}

// A request that looked up a stale response just before a revalidation
// replaced it, and reaches the revalidation step just after, joins the
// finished revalidation (and gets its new response) rather than
// starting another for a response no longer stored.
func TestReplacedEntryJoinsFinishedRevalidation(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	o.set(respond(&o, 200, "v", "Cache-Control: max-age=10"))
	h.get(t, "/r")
	h.clock.advance(20 * time.Second)
	// The raced request's lookup: the stale response, before the store changes.
	r := &engine.Request{Method: []byte("GET"), Path: []byte("/r"), Host: []byte(strings.TrimPrefix(h.url, "http://"))}
	old, _, _ := h.x.lookup(h.x.primaryKey(r), r)
	if old == nil {
		t.Fatal("the stale response is not stored")
	}
	if _, body := h.get(t, "/r"); body != "v2" {
		t.Fatalf("revalidation answered %q, want v2", body)
	}
	h.x.fetches.Wait() // the revalidation has stored v2 and ended
	f := old.pending.Load()
	if f == nil {
		t.Fatal("the replaced response has no revalidation to join: a request holding it would revalidate again")
	}
	var b strings.Builder
	if err := f.e.body.writeTo(stringWriter{&b}, 0, -1, nil); err != nil || b.String() != "v2" {
		t.Errorf("the finished revalidation holds %q (%v), want v2", b.String(), err)
	}
	if _, body := h.get(t, "/r"); body != "v2" {
		t.Errorf("then %q, want the stored v2", body)
	}
	if got := o.n.Load(); got != 2 {
		t.Errorf("origin saw %d requests, want 2", got)
	}
}

// stringWriter is a pipe.Writer into a strings.Builder.
type stringWriter struct{ b *strings.Builder }

func (s stringWriter) Write(p []byte) (int, error) { return s.b.Write(p) }
func (s stringWriter) Flush() error                { return nil }
func (s stringWriter) Close() error                { return nil }
