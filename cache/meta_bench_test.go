package cache

import (
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
)

// What newMeta costs for a response from an nginx origin
// (setOriginFields): nine fields to store.
func BenchmarkNewMeta(b *testing.B) {
	x, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	var h engine.Header
	setOriginFields(&h, 4096)
	ri := readRequest(&engine.Request{Method: []byte("GET"), Path: []byte("/a"), Host: []byte("h")})
	now := time.Date(2026, 12, 7, 7, 48, 20, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		if m, why := x.newMeta(200, &h, &ri, nil, now, now); m == nil {
			b.Fatal(why)
		}
	}
}

// setOriginFields sets on h the fields an nginx origin sends for a
// static file of n bytes with an expiry, and the Via a proxy adds: nine
// fields a cache stores.
func setOriginFields(h *engine.Header, n int64) {
	h.Set("Server", "nginx")
	h.Set("Date", "Mon, 07 Dec 2026 07:48:20 GMT")
	h.Set("Content-Type", "text/html")
	h.SetContentLength(n)
	h.Set("Last-Modified", "Mon, 07 Dec 2026 07:41:55 GMT")
	h.Set("ETag", `"6b166343-1000"`)
	h.Set("Expires", "Mon, 07 Dec 2026 08:48:20 GMT")
	h.Set("Cache-Control", "max-age=3600")
	h.Set("Accept-Ranges", "bytes")
	h.Set("Via", "1.1 sluice")
}
