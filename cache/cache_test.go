package cache

import (
	"net/http"
	"testing"

	"github.com/sluice-server/sluice/pipe"
)

func TestSmoke(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	o.set(respond(&o, 200, "hello", "Cache-Control: max-age=60"))
	r1, b1 := h.get(t, "/a")
	r2, b2 := h.get(t, "/a")
	t.Logf("%v %q %v", r1.Header, b1, r1.StatusCode)
	t.Logf("%v %q", r2.Header, b2)
	if o.n.Load() != 1 || b1 != b2 || r2.StatusCode != http.StatusOK {
		t.Fatalf("origin saw %d", o.n.Load())
	}
}

// The name is an sf-token (RFC 9211 §2): a Cache-Status parser reads it
// as one, so a name that is an HTTP token but no sf-token is refused.
func TestName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"Sluice", true}, {"edge-1", true}, {"cdn.example:443/a", true}, {"*x", true},
		{"1cache", false}, {"-x", false}, {"two words", false}, {`a"b`, false}, {"a,b", false}, {"é", false},
	}
	for _, tt := range tests {
		_, err := New(Options{Name: tt.name})
		if (err == nil) != tt.ok {
			t.Errorf("New(Name %q): %v", tt.name, err)
			continue
		}
		if !tt.ok {
			continue
		}
		h := newHarnessWith(t, Options{Name: tt.name}, nil, pipe.FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "max-age=60")
		})))
		h.get(t, "/n")
		if resp, _ := h.get(t, "/n"); resp.Header.Get("Cache-Status") != tt.name+"; hit; ttl=60" {
			t.Errorf("name %q: Cache-Status %q", tt.name, resp.Header.Get("Cache-Status"))
		}
	}
}

// A miss says "stored" only when the body's length is known: a body of
// unknown length may yet outgrow MaxObjectSize.
func TestStoredParam(t *testing.T) {
	tests := []struct {
		name    string
		chunked bool
		want    string
	}{
		{name: "content-length", want: "Sluice; fwd=uri-miss; fwd-status=200; stored; ttl=60"},
		{name: "chunked", chunked: true, want: "Sluice; fwd=uri-miss; fwd-status=200; ttl=60"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Options{}, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", "max-age=60")
				if tt.chunked {
					w.(http.Flusher).Flush()
				}
				w.Write([]byte("body"))
			})
			if resp, _ := h.get(t, "/s"); resp.Header.Get("Cache-Status") != tt.want {
				t.Errorf("Cache-Status %q, want %q", resp.Header.Get("Cache-Status"), tt.want)
			}
			if resp, _ := h.get(t, "/s"); resp.Header.Get("Cache-Status") != "Sluice; hit; ttl=60" {
				t.Errorf("then: %q", resp.Header.Get("Cache-Status"))
			}
		})
	}
}
