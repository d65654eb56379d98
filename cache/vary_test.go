package cache

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// A response that varies on a field is stored once per value of it, and
// each request gets its own variant.
func TestVaryVariants(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	o.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Vary", "Accept-Language, X-Theme")
		io.WriteString(w, r.Header.Get("Accept-Language")+"/"+r.Header.Get("X-Theme"))
	})
	variants := [][]string{
		{"Accept-Language: en"},
		{"Accept-Language: fr"},
		{"Accept-Language: en", "X-Theme: dark"},
		{},
	}
	for round := range 2 {
		for i, fields := range variants {
			resp, body := h.get(t, "/v", fields...)
			want := ""
			for _, f := range fields {
				_, v, _ := strings.Cut(f, ": ")
				if strings.HasPrefix(f, "Accept-Language") {
					want = v + want
				} else {
					want += "/" + v
				}
			}
			if !strings.Contains(want, "/") {
				want += "/"
			}
			if body != want {
				t.Errorf("round %d variant %d: body %q, want %q", round, i, body, want)
			}
			cs := resp.Header.Get("Cache-Status")
			if round == 1 && !strings.HasPrefix(cs, "Sluice; hit") {
				t.Errorf("round 2 variant %d: Cache-Status %q, want a hit", i, cs)
			}
			if round == 0 && i > 0 && !strings.Contains(cs, "fwd=vary-miss") {
				t.Errorf("round 1 variant %d: Cache-Status %q, want vary-miss", i, cs)
			}
		}
	}
	if got := o.n.Load(); got != int64(len(variants)) {
		t.Errorf("origin saw %d requests, want %d (one per variant)", got, len(variants))
	}
	// Language tags compare without case.
	if resp, _ := h.get(t, "/v", "Accept-Language: EN"); !strings.HasPrefix(resp.Header.Get("Cache-Status"), "Sluice; hit") {
		t.Errorf("Accept-Language in another case missed: %s", resp.Header.Get("Cache-Status"))
	}
	// Whitespace and list spelling are normalised.
	if resp, _ := h.get(t, "/v", "Accept-Language: en", "X-Theme:  dark "); !strings.HasPrefix(resp.Header.Get("Cache-Status"), "Sluice; hit") {
		t.Errorf("a respelling of a stored variant missed: %s", resp.Header.Get("Cache-Status"))
	}
}
