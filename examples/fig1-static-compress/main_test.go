package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

func startServer(t *testing.T, network bool) string {
	t.Helper()
	comp, stop, err := newServer("public", network)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop) // after the server's shutdown
	return sluicetest.NewServer(t, pipe.Handler(comp)).URL
}

// get fetches url offering the coding accept and returns the response and
// the body decoded by its Content-Encoding.
func get(t *testing.T, url, accept string) (*http.Response, []byte) {
	t.Helper()
	var fields []string
	if accept != "" {
		fields = []string{"Accept-Encoding", accept}
	}
	// sluicetest.Client asks for no coding itself and decodes none: the
	// test decodes.
	resp, raw := sluicetest.Get(t, url, fields...)
	var r io.Reader = strings.NewReader(raw)
	switch ce := resp.Header.Get("Content-Encoding"); ce {
	case "":
	case "gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	case "br":
		r = brotli.NewReader(r)
	case "zstd":
		zr, err := zstd.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		r = zr
	default:
		t.Fatalf("unexpected Content-Encoding %q", ce)
	}
	body, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// Files under /js/ and /css/ are compressed in the coding the client
// accepts and decode to the file byte for byte; others are sent as they
// are — with a chain and with a process network alike.
func TestStaticCompress(t *testing.T) {
	for _, network := range []bool{false, true} {
		base := startServer(t, network)
		tests := []struct {
			path, file, accept, encoding string
		}{
			{"/js/app.js", "js/app.js", "gzip", "gzip"},
			{"/js/app.js", "js/app.js", "br", "br"},
			{"/css/site.css", "css/site.css", "zstd", "zstd"},
			{"/css/site.css", "css/site.css", "gzip, br;q=0.5", "gzip"},
			{"/css/site.css", "css/site.css", "", ""},
			{"/", "index.html", "gzip, br, zstd", ""},
			{"/", "index.html", "gzip", ""},
		}
		for _, tt := range tests {
			want, err := os.ReadFile(filepath.Join("public", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			resp, body := get(t, base+tt.path, tt.accept)
			if resp.StatusCode != 200 {
				t.Errorf("network=%v %s: status %d", network, tt.path, resp.StatusCode)
				continue
			}
			if ce := resp.Header.Get("Content-Encoding"); ce != tt.encoding {
				t.Errorf("network=%v %s (Accept-Encoding %q): Content-Encoding %q, want %q",
					network, tt.path, tt.accept, ce, tt.encoding)
			}
			if !bytes.Equal(body, want) {
				t.Errorf("network=%v %s (%s): body differs from the file (%d bytes, want %d)",
					network, tt.path, tt.accept, len(body), len(want))
			}
		}
		if resp, _ := get(t, base+"/js/missing.js", "gzip"); resp.StatusCode != 404 {
			t.Errorf("network=%v: missing file: status %d", network, resp.StatusCode)
		}
	}
}

func TestNewServerBadRoot(t *testing.T) {
	if _, _, err := newServer("no-such-dir", false); err == nil {
		t.Error("newServer accepted a missing root")
	}
}
