package cache

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// Each directive of RFC 9111 (and RFC 5861), table-driven from the raw
// fields of the origin's response and of a second request made after
// the clock moved: whether the second request reaches the origin, and
// the Cache-Status it gets.
func TestDirectives(t *testing.T) {
	now := time.Now().UTC()
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		name    string
		opts    Options
		status  int
		resp    []string      // origin's response fields
		first   []string      // first request's fields
		advance time.Duration // clock move between the requests
		second  []string      // second request's fields
		origin  int64         // requests the origin saw after both
		status2 string        // Cache-Status of the second answer begins so
		cond    string        // the origin saw this If-None-Match on the second
	}{
		{name: "max-age fresh", resp: []string{"Cache-Control: max-age=60"}, origin: 1, status2: "Sluice; hit"},
		{name: "max-age stale", resp: []string{"Cache-Control: max-age=60"}, advance: 61 * time.Second, origin: 2, status2: "Sluice; fwd=stale"},
		{name: "max-age stale revalidated", resp: []string{"Cache-Control: max-age=60", `ETag: "v1"`}, advance: 61 * time.Second,
			origin: 2, status2: "Sluice; fwd=stale; fwd-status=304", cond: `"v1"`},
		{name: "s-maxage over max-age", resp: []string{"Cache-Control: max-age=0, s-maxage=60"}, origin: 1, status2: "Sluice; hit"},
		{name: "s-maxage=0 over max-age", resp: []string{"Cache-Control: max-age=60, s-maxage=0", `ETag: "a"`}, origin: 2, cond: `"a"`},
		{name: "expires future", resp: []string{"Expires: " + date(time.Hour), "Date: " + date(0)}, origin: 1, status2: "Sluice; hit"},
		{name: "expires past", resp: []string{"Expires: " + date(-time.Hour), "Date: " + date(0), `ETag: "e"`}, origin: 2, cond: `"e"`},
		{name: "expires invalid", resp: []string{"Expires: 0", `ETag: "e"`}, origin: 2, cond: `"e"`},
		{name: "expires wrong case", resp: []string{"Expires: THU, 18 AUG 2050 02:01:18 gmt", "Date: " + date(0)}, origin: 1},
		{name: "expires wrong zone", resp: []string{"Expires: Thu, 18 Aug 2050 02:01:18 CET", "Date: " + date(0), `ETag: "e"`}, origin: 2},
		{name: "max-age over expires", resp: []string{"Expires: " + date(-time.Hour), "Cache-Control: max-age=60"}, origin: 1},
		{name: "age header", resp: []string{"Cache-Control: max-age=60", "Age: 50"}, advance: 11 * time.Second, origin: 2},
		{name: "age list first element", resp: []string{"Cache-Control: max-age=60", "Age: 7200, 0"}, origin: 2},
		{name: "age list first element fresh", resp: []string{"Cache-Control: max-age=60", "Age: 0, 7200"}, origin: 1},
		{name: "age first line", resp: []string{"Cache-Control: max-age=60", "Age: 0", "Age: 7200"}, origin: 1},
		{name: "age not a number", resp: []string{"Cache-Control: max-age=60", "Age: 1.5"}, origin: 1},
		{name: "cdn-cache-control over cache-control", resp: []string{"Cache-Control: no-store", "CDN-Cache-Control: max-age=60"}, origin: 1},
		{name: "cdn-cache-control no-store", resp: []string{"Cache-Control: max-age=60", "CDN-Cache-Control: no-store"}, origin: 2},
		{name: "cdn-cache-control private", resp: []string{"Cache-Control: max-age=60", "CDN-Cache-Control: private"}, origin: 2},
		{name: "cdn-cache-control short", resp: []string{"Cache-Control: max-age=600", "CDN-Cache-Control: max-age=5"}, advance: 10 * time.Second, origin: 2},
		{name: "age header fresh", resp: []string{"Cache-Control: max-age=60", "Age: 50"}, advance: 5 * time.Second, origin: 1},
		{name: "no-store", resp: []string{"Cache-Control: no-store, max-age=60"}, origin: 2, status2: "Sluice; fwd=miss; fwd-status=200; detail=no-store"},
		{name: "private", resp: []string{"Cache-Control: private, max-age=60"}, origin: 2, status2: "Sluice; fwd=miss; fwd-status=200; detail=private"},
		{name: "private with fields", resp: []string{`Cache-Control: private="X-Secret", max-age=60`, "X-Secret: s"}, origin: 1},
		{name: "no-cache revalidates", resp: []string{"Cache-Control: no-cache, max-age=60", `ETag: "n"`}, origin: 2, status2: "Sluice; fwd=stale; fwd-status=304", cond: `"n"`},
		{name: "no-cache with fields", resp: []string{`Cache-Control: no-cache="X-Tmp", max-age=60`, "X-Tmp: 1"}, origin: 1},
		{name: "must-revalidate refuses max-stale", resp: []string{"Cache-Control: max-age=1, must-revalidate"}, advance: 10 * time.Second,
			second: []string{"Cache-Control: max-stale=100"}, origin: 2},
		{name: "proxy-revalidate refuses max-stale", resp: []string{"Cache-Control: max-age=1, proxy-revalidate"}, advance: 10 * time.Second,
			second: []string{"Cache-Control: max-stale=100"}, origin: 2},
		{name: "max-stale", resp: []string{"Cache-Control: max-age=1"}, advance: 10 * time.Second,
			second: []string{"Cache-Control: max-stale=100"}, origin: 1, status2: "Sluice; hit; ttl=-9; detail=max-stale"},
		{name: "max-stale any", resp: []string{"Cache-Control: max-age=1"}, advance: 1000 * time.Second,
			second: []string{"Cache-Control: max-stale"}, origin: 1},
		{name: "max-stale too little", resp: []string{"Cache-Control: max-age=1"}, advance: 100 * time.Second,
			second: []string{"Cache-Control: max-stale=10"}, origin: 2},
		{name: "request no-cache", resp: []string{"Cache-Control: max-age=60", `ETag: "r"`}, second: []string{"Cache-Control: no-cache"},
			origin: 2, status2: "Sluice; fwd=request; fwd-status=304", cond: `"r"`},
		{name: "request pragma ignored with cache-control", resp: []string{"Cache-Control: max-age=60"},
			second: []string{"Pragma: no-cache", "Cache-Control: max-stale=1"}, origin: 1},
		{name: "request max-age", resp: []string{"Cache-Control: max-age=600"}, advance: 30 * time.Second,
			second: []string{"Cache-Control: max-age=10"}, origin: 2, status2: "Sluice; fwd=request"},
		{name: "request max-age allows", resp: []string{"Cache-Control: max-age=600"}, advance: 30 * time.Second,
			second: []string{"Cache-Control: max-age=100"}, origin: 1},
		{name: "request min-fresh", resp: []string{"Cache-Control: max-age=60"}, second: []string{"Cache-Control: min-fresh=120"}, origin: 2},
		{name: "request min-fresh allows", resp: []string{"Cache-Control: max-age=600"}, second: []string{"Cache-Control: min-fresh=120"}, origin: 1},
		{name: "request no-store", resp: []string{"Cache-Control: max-age=60"}, first: []string{"Cache-Control: no-store"}, origin: 2},
		{name: "heuristic", resp: []string{"Last-Modified: " + date(-10*24*time.Hour), "Date: " + date(0)}, advance: 12 * time.Hour, origin: 1},
		{name: "heuristic capped", resp: []string{"Last-Modified: " + date(-100*24*time.Hour), "Date: " + date(0)}, advance: 25 * time.Hour, origin: 2},
		{name: "heuristic fraction", resp: []string{"Last-Modified: " + date(-10*time.Hour), "Date: " + date(0)}, advance: 2 * time.Hour, origin: 2},
		{name: "no heuristic for 302", status: 302, resp: []string{"Last-Modified: " + date(-10*24*time.Hour), "Location: /x"}, origin: 2},
		{name: "302 with max-age", status: 302, resp: []string{"Cache-Control: max-age=60", "Location: /x"}, origin: 1},
		{name: "404 heuristic", status: 404, resp: []string{"Last-Modified: " + date(-10*24*time.Hour)}, origin: 1},
		{name: "public heuristic", status: 299, resp: []string{"Cache-Control: public", "Last-Modified: " + date(-10*24*time.Hour)}, origin: 1},
		{name: "nothing", resp: nil, origin: 2, status2: "Sluice; fwd=miss; fwd-status=200; detail=no-freshness"},
		{name: "must-understand no-store known", resp: []string{"Cache-Control: must-understand, no-store, max-age=60"}, origin: 1},
		{name: "must-understand unknown status", status: 299, resp: []string{"Cache-Control: must-understand, no-store, max-age=60"}, origin: 2},
		{name: "authorization", resp: []string{"Cache-Control: max-age=60"}, first: []string{"Authorization: Basic dTpw"}, origin: 2},
		{name: "authorization public", resp: []string{"Cache-Control: public, max-age=60"}, first: []string{"Authorization: Basic dTpw"}, origin: 1},
		{name: "authorization s-maxage", resp: []string{"Cache-Control: s-maxage=60"}, first: []string{"Authorization: Basic dTpw"}, origin: 1},
		{name: "authorization must-revalidate", resp: []string{"Cache-Control: max-age=60, must-revalidate"}, first: []string{"Authorization: Basic dTpw"}, origin: 1},
		{name: "set-cookie", resp: []string{"Cache-Control: max-age=60", "Set-Cookie: a=b"}, origin: 2, status2: "Sluice; fwd=miss; fwd-status=200; detail=set-cookie"},
		{name: "set-cookie private", resp: []string{`Cache-Control: max-age=60, private="Set-Cookie"`, "Set-Cookie: a=b"}, origin: 1},
		{name: "set-cookie no-cache", resp: []string{`Cache-Control: max-age=60, no-cache="set-cookie"`, "Set-Cookie: a=b"}, origin: 1},
		{name: "set-cookie stored when configured", opts: Options{StoreSetCookie: true}, resp: []string{"Cache-Control: max-age=60", "Set-Cookie: a=b"}, origin: 1},
		{name: "heuristic off", opts: Options{HeuristicFraction: -1}, resp: []string{"Last-Modified: " + date(-10*24*time.Hour), "Date: " + date(0)}, origin: 2},
		{name: "vary star", resp: []string{"Cache-Control: max-age=60", "Vary: *"}, origin: 2},
		{name: "partial not stored", status: 206, resp: []string{"Cache-Control: max-age=60", "Content-Range: bytes 0-4/10"}, origin: 2},
		{name: "500 with max-age", status: 500, resp: []string{"Cache-Control: max-age=60"}, origin: 1},
		{name: "stale-while-revalidate", resp: []string{"Cache-Control: max-age=1, stale-while-revalidate=60"}, advance: 10 * time.Second,
			origin: 2, status2: "Sluice; hit; ttl=-9; detail=stale-while-revalidate"},
		{name: "stale-while-revalidate over", resp: []string{"Cache-Control: max-age=1, stale-while-revalidate=5"}, advance: 10 * time.Second,
			origin: 2, status2: "Sluice; fwd=stale"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o *origin
			h := newHarness(t, tt.opts, nil)
			o = h.o
			status := tt.status
			if status == 0 {
				status = 200
			}
			o.set(respond(&o, status, "body", tt.resp...))
			r1, b1 := h.get(t, "/d", tt.first...)
			if r1.Header.Get("Cache-Status") == "" {
				t.Errorf("first answer has no Cache-Status")
			}
			h.clock.advance(tt.advance)
			r2, b2 := h.get(t, "/d", tt.second...)
			if tt.name == "stale-while-revalidate" {
				// Served stale at once; the revalidation goes on behind.
				if b2 != b1 {
					t.Errorf("stale answer %q, want the stored %q", b2, b1)
				}
				waitCount(t, o, 2)
			}
			if got := o.n.Load(); got != tt.origin {
				t.Errorf("origin saw %d requests, want %d", got, tt.origin)
			}
			if tt.origin == 1 && b2 != b1 {
				t.Errorf("second body %q, want the stored %q", b2, b1)
			}
			if tt.origin == 1 && !tt.opts.StoreSetCookie && r2.Header.Get("Set-Cookie") != "" {
				t.Errorf("a stored answer carries Set-Cookie %q", r2.Header.Get("Set-Cookie"))
			}
			if tt.origin == 1 && r2.StatusCode != status {
				t.Errorf("second status %d, want %d", r2.StatusCode, status)
			}
			cs := r2.Header.Get("Cache-Status")
			if !strings.HasPrefix(cs, tt.status2) || cs == "" {
				t.Errorf("second Cache-Status %q, want it to begin %q", cs, tt.status2)
			}
			if tt.origin == 1 && r2.Header.Get("Age") == "" {
				t.Errorf("an answer from the store has no Age")
			}
			if tt.cond != "" {
				if got := o.lastHeader().Get("If-None-Match"); got != tt.cond {
					t.Errorf("origin saw If-None-Match %q, want %q", got, tt.cond)
				}
			}
			for _, name := range []string{"X-Secret", "X-Tmp"} {
				if tt.origin == 1 && r2.Header.Get(name) != "" {
					t.Errorf("a field named by private= or no-cache= was served from the store: %s", name)
				}
			}
		})
	}
}

// waitCount waits until the origin has seen n requests.
func waitCount(t *testing.T, o *origin, n int64) {
	t.Helper()
	sluicetest.WaitFor(t, fmt.Sprintf("the origin to see %d requests", n), func() bool { return o.n.Load() >= n })
}

// A bare private or no-cache after the qualified form means the whole
// response: not stored, or validated on every reuse.
func TestBareAfterQualified(t *testing.T) {
	tests := []struct {
		cc     string
		stored bool // a second request is answered without the origin
	}{
		{cc: `private="x-a", private, max-age=60`},
		{cc: `no-cache="x-a", no-cache, max-age=60`},
		{cc: `private="x-a", max-age=60`, stored: true},
	}
	for _, tt := range tests {
		t.Run(tt.cc, func(t *testing.T) {
			var o *origin
			h := newHarness(t, Options{}, nil)
			o = h.o
			o.set(respond(&o, 200, "v", "Cache-Control: "+tt.cc))
			h.get(t, "/b")
			resp, _ := h.get(t, "/b")
			if got := o.n.Load() == 1; got != tt.stored {
				t.Errorf("origin saw %d requests (%s)", o.n.Load(), resp.Header.Get("Cache-Status"))
			}
		})
	}
}
