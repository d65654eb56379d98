package cache

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
)

// HEAD, preconditions and Range are answered from a stored GET, without
// the origin.
func TestAnsweredFromStore(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	lm := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	o.set(respond(&o, 200, "0123456789-", "Cache-Control: max-age=600", `ETag: "abc"`, "Last-Modified: "+lm))
	_, full := h.get(t, "/r")
	if full != "0123456789-1" {
		t.Fatalf("body %q", full)
	}
	before := time.Now().Add(-2 * time.Hour).UTC().Format(http.TimeFormat)
	after := time.Now().UTC().Format(http.TimeFormat)
	tests := []struct {
		method string
		fields []string
		status int
		body   string
		check  map[string]string
	}{
		{"HEAD", nil, 200, "", map[string]string{"Content-Length": "12", "Etag": `"abc"`}},
		{"GET", []string{`If-None-Match: "abc"`}, 304, "", map[string]string{"Etag": `"abc"`}},
		{"GET", []string{`If-None-Match: W/"abc"`}, 304, "", nil},
		{"GET", []string{`If-None-Match: "x", "abc"`}, 304, "", nil},
		{"GET", []string{`If-None-Match: *`}, 304, "", nil},
		{"GET", []string{`If-None-Match: "other"`}, 200, full, nil},
		{"GET", []string{"If-Modified-Since: " + after}, 304, "", nil},
		{"GET", []string{"If-Modified-Since: " + before}, 200, full, nil},
		{"GET", []string{`If-None-Match: "other"`, "If-Modified-Since: " + after}, 200, full, nil},
		{"GET", []string{`If-Match: "other"`}, 412, "412 Precondition Failed: precondition failed\n", nil},
		{"GET", []string{`If-Match: "abc"`}, 200, full, nil},
		{"GET", []string{"If-Unmodified-Since: " + before}, 412, "412 Precondition Failed: precondition failed\n", nil},
		{"GET", []string{"Range: bytes=2-5"}, 206, "2345", map[string]string{"Content-Range": "bytes 2-5/12"}},
		{"GET", []string{"Range: bytes=-3"}, 206, "9-1", nil},
		{"GET", []string{"Range: bytes=9-"}, 206, "9-1", nil},
		{"GET", []string{"Range: bytes=5-100"}, 206, "56789-1", map[string]string{"Content-Range": "bytes 5-11/12"}},
		{"GET", []string{"Range: bytes=50-"}, 416, "", map[string]string{"Content-Range": "bytes */12"}},
		{"GET", []string{"Range: items=0-1"}, 200, full, nil},
		{"GET", []string{"Range: bytes=2-5", `If-Range: "abc"`}, 206, "2345", nil},
		{"GET", []string{"Range: bytes=2-5", `If-Range: "old"`}, 200, full, nil},
		{"GET", []string{"Range: bytes=2-5", "If-Range: " + lm}, 206, "2345", nil},
		{"HEAD", []string{`If-None-Match: "abc"`}, 304, "", nil},
	}
	for _, tt := range tests {
		resp, body := h.do(t, tt.method, "/r", tt.fields...)
		name := tt.method + " " + strings.Join(tt.fields, "; ")
		if resp.StatusCode != tt.status || body != tt.body {
			t.Errorf("%s: %d %q, want %d %q", name, resp.StatusCode, body, tt.status, tt.body)
		}
		for k, v := range tt.check {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("%s: %s %q, want %q", name, k, got, v)
			}
		}
		if resp.Header.Get("Age") == "" || !strings.HasPrefix(resp.Header.Get("Cache-Status"), "Sluice; hit") {
			t.Errorf("%s: Age %q, Cache-Status %q", name, resp.Header.Get("Age"), resp.Header.Get("Cache-Status"))
		}
	}
	if got := o.n.Load(); got != 1 {
		t.Errorf("origin saw %d requests, want 1", got)
	}
}

// A HEAD miss passes through unstored; a GET then fills the store.
func TestHeadMiss(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	o.set(respond(&o, 200, "hi", "Cache-Control: max-age=60"))
	resp, _ := h.do(t, "HEAD", "/h")
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Cache-Status"), "detail=method") {
		t.Errorf("HEAD miss: %d %q", resp.StatusCode, resp.Header.Get("Cache-Status"))
	}
	h.get(t, "/h")
	resp, _ = h.do(t, "HEAD", "/h")
	if !strings.HasPrefix(resp.Header.Get("Cache-Status"), "Sluice; hit") || o.n.Load() != 2 {
		t.Errorf("HEAD after GET: %q, origin %d", resp.Header.Get("Cache-Status"), o.n.Load())
	}
}

// A request with only-if-cached is answered 504 when nothing stored may
// answer it, without reaching the origin.
func TestOnlyIfCached(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	o.set(respond(&o, 200, "x", "Cache-Control: max-age=60"))
	resp, _ := h.get(t, "/o", "Cache-Control: only-if-cached")
	if resp.StatusCode != http.StatusGatewayTimeout || o.n.Load() != 0 {
		t.Errorf("cold only-if-cached: %d, origin %d", resp.StatusCode, o.n.Load())
	}
	h.get(t, "/o")
	resp, body := h.get(t, "/o", "Cache-Control: only-if-cached")
	if resp.StatusCode != 200 || body != "x1" {
		t.Errorf("warm only-if-cached: %d %q", resp.StatusCode, body)
	}
	h.clock.advance(time.Hour)
	resp, _ = h.get(t, "/o", "Cache-Control: only-if-cached")
	if resp.StatusCode != http.StatusGatewayTimeout || o.n.Load() != 1 {
		t.Errorf("stale only-if-cached: %d, origin %d", resp.StatusCode, o.n.Load())
	}
}

// Age counts the time spent in the cache and the Age received.
func TestAge(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	o.set(respond(&o, 200, "x", "Cache-Control: max-age=600", "Age: 100"))
	resp, _ := h.get(t, "/age")
	if got := resp.Header.Get("Age"); got != "100" {
		t.Errorf("stored miss: Age %q, want 100", got)
	}
	h.clock.advance(30 * time.Second)
	resp, _ = h.get(t, "/age")
	if got := resp.Header.Get("Age"); got != "130" {
		t.Errorf("hit after 30 s: Age %q, want 130", got)
	}
	if got := resp.Header.Get("Cache-Status"); got != "Sluice; hit; ttl=470" {
		t.Errorf("Cache-Status %q", got)
	}
}

// A Range of several distant byte ranges of a stored response is
// answered with a multipart/byteranges 206.
func TestMultipartRange(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	o.set(respond(&o, 200, "01"+strings.Repeat("-", 500)+"xy", "Cache-Control: max-age=600", "Content-Type: text/plain"))
	h.get(t, "/mr")
	resp, body := h.get(t, "/mr", "Range: bytes=0-1,502-503")
	if resp.StatusCode != 206 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "multipart/byteranges; boundary=") ||
		!strings.Contains(body, "Content-Type: text/plain\r\nContent-Range: bytes 0-1/505\r\n\r\n01\r\n") ||
		!strings.Contains(body, "Content-Range: bytes 502-503/505\r\n\r\nxy\r\n") {
		t.Errorf("two ranges: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if o.n.Load() != 1 {
		t.Errorf("origin saw %d requests", o.n.Load())
	}
}

// A stored body of any size, in one chunk or many (sent together on a
// hit), is answered byte for byte, with and without a filter observing
// the content, and with and without Content-Length from the origin.
func TestHitBodySizes(t *testing.T) {
	sizes := []int{1, 3 << 10, chunkSize - 1, chunkSize, chunkSize + 1, 3*chunkSize + 4<<10, 100<<10 + 7, 1<<20 + 3}
	data := make([]byte, 1<<20+3)
	rand.Read(data)
	observed := pipe.Filter(func(c *pipe.Conn) pipe.Wrap {
		return func(next pipe.Writer) pipe.Writer { return &observer{Through: pipe.Through{Next: next}} }
	})
	for _, observe := range []bool{false, true} {
		var extra []pipe.Component
		if observe {
			extra = append(extra, observed)
		}
		h := newHarness(t, Options{}, func(w http.ResponseWriter, r *http.Request) {
			var n int
			fmt.Sscanf(r.URL.Path, "/%d", &n)
			w.Header().Set("Cache-Control", "max-age=600")
			if r.URL.Query().Get("length") != "" {
				w.Header().Set("Content-Length", strconv.Itoa(n))
			}
			w.Write(data[:n])
		}, extra...)
		for _, size := range sizes {
			for _, query := range []string{"", "?length=1"} {
				path := fmt.Sprintf("/%d%s", size, query)
				for i, want := range []string{"miss", "hit"} {
					resp, body := h.get(t, path)
					if resp.StatusCode != 200 || body != string(data[:size]) || !strings.Contains(resp.Header.Get("Cache-Status"), want) {
						t.Errorf("observed %v, GET %s (%d): %d, %d bytes (right: %v), Cache-Status %q; want 200, %d bytes, %s",
							observe, path, i, resp.StatusCode, len(body), body == string(data[:size]), resp.Header.Get("Cache-Status"), size, want)
					}
				}
			}
		}
	}
}

// observer is a filter's writer that lets the content through unchanged.
type observer struct{ pipe.Through }

func (*observer) Close() error { return nil }
