//go:build !race

package files_test

import (
	"testing"
	"time"

	"github.com/sluice-server/sluice/files"
)

// A keep-alive GET of a small cached file allocates nothing end to end:
// engine, files.Server and the client's reads.
func TestServeSmallFileAllocatesNothing(t *testing.T) {
	base := serveDir(t, benchDir(t), files.Options{Expiry: time.Hour})
	k := newKeepAliveClient(t, hostOf(base), benchRequest)
	allocs := testing.AllocsPerRun(500, func() { k.do(t) })
	if allocs != 0 {
		t.Errorf("keep-alive GET of a cached file allocates %v times per request, want 0", allocs)
	}
}

// So does a client-side route served by its try fallback: the candidates
// are built on the stack and found in the cache.
func TestServeTryFallbackAllocatesNothing(t *testing.T) {
	base := serveDir(t, benchDir(t), files.Options{Expiry: time.Hour, Try: []string{"$path", "$path.html", "/index.html"}})
	req := "GET /users/42/edit HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n"
	k := newKeepAliveClient(t, hostOf(base), req)
	allocs := testing.AllocsPerRun(500, func() { k.do(t) })
	if allocs != 0 {
		t.Errorf("keep-alive GET of a try fallback allocates %v times per request, want 0", allocs)
	}
}
