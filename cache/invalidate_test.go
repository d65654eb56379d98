package cache

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// An unsafe request whose response is not an error invalidates its URI
// and the Location and Content-Location URIs on the same host (RFC 9111
// §4.4); an error response, a safe method and another host's URI do not.
func TestInvalidation(t *testing.T) {
	tests := []struct {
		name    string
		method  string
		target  string
		status  int
		fields  []string // the unsafe response's
		invalid []string // paths whose stored responses must be gone
		kept    []string // paths whose stored responses must stay
	}{
		{name: "post", method: "POST", target: "/a", status: 200, invalid: []string{"/a"}, kept: []string{"/b", "/c"}},
		{name: "put", method: "PUT", target: "/a", status: 204, invalid: []string{"/a"}},
		{name: "delete", method: "DELETE", target: "/a", status: 200, invalid: []string{"/a"}},
		{name: "patch redirect", method: "PATCH", target: "/a", status: 303, invalid: []string{"/a"}},
		{name: "location", method: "POST", target: "/a", status: 201, fields: []string{"Location: /b"}, invalid: []string{"/a", "/b"}, kept: []string{"/c"}},
		{name: "relative location", method: "POST", target: "/a", status: 201, fields: []string{"Location: b"}, invalid: []string{"/a", "/b"}},
		{name: "content-location", method: "POST", target: "/a", status: 200, fields: []string{"Content-Location: /c?q=1"}, invalid: []string{"/a", "/c?q=1"}, kept: []string{"/c", "/b"}},
		{name: "absolute same host", method: "POST", target: "/a", status: 200, fields: []string{"Location: http://HOST/b"}, invalid: []string{"/a", "/b"}},
		{name: "other host", method: "POST", target: "/a", status: 200, fields: []string{"Location: http://elsewhere.example/b"}, invalid: []string{"/a"}, kept: []string{"/b"}},
		{name: "error", method: "POST", target: "/a", status: 500, fields: []string{"Location: /b"}, kept: []string{"/a", "/b"}},
		{name: "options", method: "OPTIONS", target: "/a", status: 200, kept: []string{"/a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o *origin
			h := newHarness(t, Options{}, nil)
			o = h.o
			host := strings.TrimPrefix(h.url, "http://")
			get := respond(&o, 200, "v", "Cache-Control: max-age=600")
			o.set(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == "GET" {
					get(w, r)
					return
				}
				io.Copy(io.Discard, r.Body)
				for _, f := range tt.fields {
					n, v, _ := strings.Cut(f, ": ")
					w.Header().Set(n, strings.ReplaceAll(v, "HOST", host))
				}
				w.WriteHeader(tt.status)
			})
			paths := append(append([]string{}, tt.invalid...), tt.kept...)
			stored := map[string]string{}
			for _, p := range paths {
				_, stored[p] = h.get(t, p)
			}
			resp, _ := h.do(t, tt.method, tt.target)
			if resp.StatusCode != tt.status {
				t.Fatalf("%s answered %d", tt.method, resp.StatusCode)
			}
			if cs := resp.Header.Get("Cache-Status"); cs != "Sluice; fwd=method" {
				t.Errorf("%s: Cache-Status %q", tt.method, cs)
			}
			for _, p := range tt.invalid {
				if _, body := h.get(t, p); body == stored[p] {
					t.Errorf("%s still answered from the store after %s", p, tt.method)
				}
			}
			for _, p := range tt.kept {
				if _, body := h.get(t, p); body != stored[p] {
					t.Errorf("%s lost its stored response after %s: %q, had %q", p, tt.method, body, stored[p])
				}
			}
		})
	}
}

// Invalidating a response that varies removes every variant, and no
// finished fetch lingers to answer for it.
func TestInvalidateVariants(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	get := respond(&o, 200, "v", "Cache-Control: max-age=600", "Vary: X-A")
	o.set(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "GET" {
			w.WriteHeader(204)
			return
		}
		get(w, r)
	})
	_, a := h.get(t, "/iv", "X-A: 1")
	_, b := h.get(t, "/iv", "X-A: 2")
	if _, again := h.get(t, "/iv", "X-A: 1"); again != a {
		t.Fatalf("variant not stored: %q then %q", a, again)
	}
	h.do(t, "POST", "/iv")
	for _, v := range []string{"1", "2"} {
		if _, body := h.get(t, "/iv", "X-A: "+v); body == a || body == b {
			t.Errorf("variant %s still answered from the store after POST: %q", v, body)
		}
	}
	h.x.mu.Lock()
	n := len(h.x.inflight)
	h.x.mu.Unlock()
	if n != 0 {
		t.Errorf("%d fetches still in flight", n)
	}
}

// With extra key parts, an unsafe request invalidates the URI under
// every value of them, not only the one it sent (§4.4 names the URI).
func TestInvalidateKeyParts(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{Key: []string{"header:X-Lang", "cookie:region"}}, nil)
	o = h.o
	o.set(respond(&o, 200, "v", "Cache-Control: max-age=60"))
	variants := [][]string{{"X-Lang: fr"}, {"X-Lang: en", "Cookie: region=eu"}, nil}
	for _, v := range variants {
		h.get(t, "/i", v...)
		h.get(t, "/j", v...)
	}
	if o.n.Load() != 6 {
		t.Fatalf("origin saw %d requests storing 6 responses", o.n.Load())
	}
	h.do(t, "POST", "/i", "X-Lang: de")
	for _, v := range variants {
		if resp, _ := h.get(t, "/i", v...); strings.HasPrefix(resp.Header.Get("Cache-Status"), "Sluice; hit") {
			t.Errorf("/i %v still stored after the POST", v)
		}
		if resp, _ := h.get(t, "/j", v...); !strings.HasPrefix(resp.Header.Get("Cache-Status"), "Sluice; hit") {
			t.Errorf("/j %v invalidated: %s", v, resp.Header.Get("Cache-Status"))
		}
	}
}
