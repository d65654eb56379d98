package cache_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-server/sluice/cache"
	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/proxy"
	"github.com/sluice-server/sluice/sluicetest"
)

// serve starts origin (when not nil) on loopback and Sluice serving
// [cache, between..., proxy to origin], and returns Sluice's URL.
func serve(t *testing.T, opts cache.Options, origin http.Handler, between ...pipe.Component) string {
	t.Helper()
	c, err := cache.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	chain := append(pipe.Chain{c}, between...)
	if origin != nil {
		o := httptest.NewServer(origin)
		t.Cleanup(o.Close)
		p, err := proxy.New(proxy.Options{Upstreams: []string{o.URL}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		chain = append(chain, p)
	}
	return sluicetest.NewServer(t, pipe.Handler(chain)).URL
}

// With compress after the cache, one variant is stored per coding: the
// spellings of one preference share it, and each client gets a coding it
// accepts.
func TestVaryAcceptEncoding(t *testing.T) {
	comp, err := components.NewCompress(components.CompressOptions{Encodings: []string{"gzip", "br"}, MinSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	page := strings.Repeat("compress me please ", 50)
	var n atomic.Int64
	url := serve(t, cache.Options{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, page)
	}), comp)
	tests := []struct {
		ae, coding string
		origin     int64 // the origin's count after this request
	}{
		{"gzip", "gzip", 1},
		{"gzip, deflate", "gzip", 1},
		{"deflate, gzip;q=1.0", "gzip", 1},
		{"br", "br", 2},
		{"br;q=1, gzip;q=0.5", "br", 2},
		{"", "", 3},
		{"identity", "", 3},
		{"gzip;q=0, identity", "", 3},
	}
	for _, tt := range tests {
		var fields []string
		if tt.ae != "" {
			fields = append(fields, "Accept-Encoding: "+tt.ae)
		}
		req, _ := http.NewRequest("GET", url+"/ae", nil)
		for _, f := range fields {
			n, v, _ := strings.Cut(f, ": ")
			req.Header.Set(n, v)
		}
		if tt.ae == "" {
			req.Header.Set("Accept-Encoding", "identity") // keep Go's client from asking for gzip
		}
		tr := &http.Transport{DisableCompression: true}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tr.CloseIdleConnections()
		if got := resp.Header.Get("Content-Encoding"); got != tt.coding {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q, want %q", tt.ae, got, tt.coding)
		}
		if tt.coding == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			plain, _ := io.ReadAll(zr)
			if string(plain) != page {
				t.Errorf("Accept-Encoding %q: the gzip body does not decode to the page", tt.ae)
			}
		}
		if tt.coding == "" && string(raw) != page {
			t.Errorf("Accept-Encoding %q: identity body differs", tt.ae)
		}
		if got := n.Load(); got != tt.origin {
			t.Errorf("after Accept-Encoding %q the origin saw %d requests, want %d", tt.ae, got, tt.origin)
		}
	}
}
