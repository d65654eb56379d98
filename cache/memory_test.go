package cache

import (
	"io"
	"net/http"
	"runtime"
	"strconv"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// A body over MaxObjectSize that a collapsed request reads along is not
// kept whole: the cache holds a bounded window of it, so memory stays
// near MaxObjectSize however long the response. Measured at the origin
// once it has sent everything, with the GC run: a body kept whole would
// be live then.
func TestOversizeWithReaderBounded(t *testing.T) {
	const chunks, chunk = 512, 64 << 10 // 32 MB
	release := make(chan struct{})
	live := make(chan uint64, 1)
	h := newHarness(t, Options{Size: 4 << 20, MaxObjectSize: 256 << 10}, func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Header().Set("Cache-Control", "max-age=60")
		b := make([]byte, chunk)
		for range chunks {
			if _, err := w.Write(b); err != nil {
				break
			}
		}
		w.(http.Flusher).Flush()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		live <- ms.HeapAlloc
	})
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	done := make(chan int64, 2)
	get := func() {
		req, _ := http.NewRequest("GET", h.url+"/big", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- -1
			return
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- n
	}
	go get()
	sluicetest.WaitFor(t, "the leader at the origin", func() bool { return h.o.n.Load() == 1 })
	go get()
	sluicetest.WaitFor(t, "a request to join the leader", func() bool { return h.x.joined() == 1 })
	close(release)
	after := <-live
	for range 2 {
		<-done // the reader along may be cut off when it lags the window
	}
	if grew := int64(after) - int64(before); grew > 16<<20 {
		t.Errorf("heap grew by %d MB streaming a 32 MB body with MaxObjectSize 256 KB", grew>>20)
	}
}

// A body of known length takes memory as it comes, not its whole
// Content-Length before the first byte.
func TestKnownLengthBodyGrows(t *testing.T) {
	if *everyOnDisk {
		t.Skip("a body in memory")
	}
	const length = 4 << 20
	release := make(chan struct{})
	defer close(release)
	h := newHarness(t, Options{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Length", strconv.Itoa(length))
		w.Write(make([]byte, 1024))
		w.(http.Flusher).Flush()
		<-release
	})
	go h.try("GET", "/known")
	var held int64
	sluicetest.WaitFor(t, "the first bytes in the store", func() bool { held = h.x.inflightHeld(); return held > 0 })
	if held > chunkSize {
		t.Errorf("a 4 MB body holds %d bytes after its first 1024", held)
	}
}
