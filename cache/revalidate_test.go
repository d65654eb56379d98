package cache

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// A 304 on revalidation updates the stored header fields (RFC 9111
// §3.2) but Content-Length and Content-Encoding, and the freshness; the
// client's own preconditions are then answered from the updated store.
func TestNotModifiedUpdatesHeader(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	o.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"e"`)
		w.Header().Set("X-Version", "1")
		w.Header().Set("Content-Encoding", "identity-ish")
		w.Header().Set("Cache-Control", "max-age=10")
		io.WriteString(w, "body")
	})
	h.get(t, "/nm")
	o.set(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") != `"e"` {
			t.Errorf("revalidation without the stored ETag: %q", r.Header.Get("If-None-Match"))
		}
		w.Header().Set("ETag", `"e"`)
		w.Header().Set("X-Version", "2")
		w.Header().Set("Content-Encoding", "other")
		w.Header().Set("Cache-Control", "max-age=600")
		w.WriteHeader(http.StatusNotModified)
	})
	h.clock.advance(time.Minute)
	resp, body := h.get(t, "/nm", `If-None-Match: "zzz"`)
	if body != "body" || resp.Header.Get("X-Version") != "2" || resp.Header.Get("Content-Encoding") != "identity-ish" ||
		resp.Header.Get("Content-Length") != "4" || !strings.HasPrefix(resp.Header.Get("Cache-Status"), "Sluice; fwd=stale; fwd-status=304") {
		t.Errorf("revalidated: %q X-Version %q Content-Encoding %q Content-Length %q %q", body, resp.Header.Get("X-Version"),
			resp.Header.Get("Content-Encoding"), resp.Header.Get("Content-Length"), resp.Header.Get("Cache-Status"))
	}
	// Fresh again for max-age=600: a hit with the new fields.
	h.clock.advance(5 * time.Minute)
	resp, _ = h.get(t, "/nm")
	if !strings.HasPrefix(resp.Header.Get("Cache-Status"), "Sluice; hit") || resp.Header.Get("X-Version") != "2" || o.n.Load() != 2 {
		t.Errorf("after: %q, X-Version %q, origin %d", resp.Header.Get("Cache-Status"), resp.Header.Get("X-Version"), o.n.Load())
	}
	// The client's own If-None-Match is answered from the store.
	o.set(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotModified) })
	h.clock.advance(10 * time.Minute)
	resp, _ = h.get(t, "/nm", `If-None-Match: "e"`)
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("client's matching If-None-Match after revalidation: %d", resp.StatusCode)
	}
}

// A fetch that brings no header within LockTimeout lets the requests
// waiting on it go to the origin themselves.
func TestLockTimeout(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{LockTimeout: 20 * time.Millisecond}, nil)
	o = h.o
	release := make(chan struct{})
	o.set(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-First") != "" {
			<-release
		}
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, "answer "+r.Header.Get("X-First"))
	})
	first := make(chan string, 1)
	go func() {
		_, b, err := h.try("GET", "/lt", "X-First: yes")
		if err != nil {
			b = err.Error()
		}
		first <- b
	}()
	sluicetest.WaitFor(t, "the first request at the origin", func() bool { return o.n.Load() == 1 })
	second := make(chan string, 1)
	go func() {
		_, b, err := h.try("GET", "/lt")
		if err != nil {
			b = err.Error()
		}
		second <- b
	}()
	select {
	case b := <-second:
		if b != "answer " {
			t.Errorf("the second request got %q, want its own answer", b)
		}
	case <-time.After(sluicetest.WaitTimeout):
		t.Errorf("the second request still waits on the first's fetch")
	}
	close(release)
	if b := <-first; b != "answer yes" {
		t.Errorf("first: %q", b)
	}
}

// A revalidation that brings a response that may not be stored streams
// it to the request that started it, letting go of what was sent, and
// the requests that joined it fetch their own.
func TestRevalidationUnstoredStreams(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	o.set(respond(&o, 200, "old", "Cache-Control: max-age=10"))
	h.get(t, "/us")
	big := strings.Repeat("0123456789abcdef", 20000) // 320 KB: ten chunks
	release := make(chan struct{})
	o.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, big[:chunkSize])
		w.(http.Flusher).Flush()
		if o.n.Load() == 2 {
			<-release
		}
		io.WriteString(w, big[chunkSize:])
	})
	h.clock.advance(time.Minute)
	bodies := make(chan string, 2)
	for range 2 {
		go func() {
			_, b, err := h.try("GET", "/us")
			if err != nil {
				b = err.Error()
			}
			bodies <- b
		}()
	}
	sluicetest.WaitFor(t, "both requests on the revalidation", func() bool { return o.n.Load() >= 2 })
	close(release)
	for range 2 {
		if b := <-bodies; b != big {
			t.Errorf("got %d bytes, want %d", len(b), len(big))
		}
	}
	if got := o.n.Load(); got != 3 {
		t.Errorf("origin saw %d requests", got)
	}
	// What a stream body's reader has read is let go.
	b := newBody(-1, nil)
	b.stream = true
	for range 4 {
		b.append(make([]byte, chunkSize))
	}
	b.finish(false)
	var sink discardWriter
	if err := b.writeTo(&sink, 0, -1, nil); err != nil || sink.n != 4*chunkSize {
		t.Fatalf("read %d bytes, %v", sink.n, err)
	}
	if c := b.capacity(); c > chunkSize {
		t.Errorf("a read stream body still holds %d bytes", c)
	}
}

type discardWriter struct{ n int }

func (d *discardWriter) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }
func (d *discardWriter) Flush() error                { return nil }
func (d *discardWriter) Close() error                { return nil }

// A 304 whose strong ETag is not the stored response's updates nothing
// (RFC 9111 §4.3.4): the stored response is dropped and the request is
// answered with a fresh fetch.
func TestNotModifiedOtherETag(t *testing.T) {
	tests := []struct {
		name    string
		etag304 string
		updated bool
	}{
		{name: "same strong", etag304: `"1"`, updated: true},
		{name: "other strong", etag304: `"2"`},
		{name: "weak", etag304: `W/"2"`, updated: true},
		{name: "none", updated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o *origin
			h := newHarness(t, Options{}, nil)
			o = h.o
			o.set(respond(&o, 200, "old", "Cache-Control: max-age=10", `ETag: "1"`))
			h.get(t, "/m")
			o.set(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", "max-age=10")
				if r.Header.Get("If-None-Match") != "" {
					if tt.etag304 != "" {
						w.Header().Set("ETag", tt.etag304)
					}
					w.WriteHeader(http.StatusNotModified)
					return
				}
				w.Header().Set("ETag", `"2"`)
				io.WriteString(w, "new")
			})
			h.clock.advance(time.Minute)
			resp, body := h.get(t, "/m")
			want := "new"
			if tt.updated {
				want = "old1"
			}
			if resp.StatusCode != 200 || body != want {
				t.Errorf("got %d %q (%s), want %q", resp.StatusCode, body, resp.Header.Get("Cache-Status"), want)
			}
		})
	}
}
