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
