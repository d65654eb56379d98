package daemon

import (
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The heap an attack grew (many connections, large bodies, HTTP/2
// floods) is garbage once it ends, but Go's background scavenger
// returns it to the OS slowly, so the process's resident size stays at
// its peak for minutes. A running Server checks every
// heapReleaseInterval how much free heap it holds that the scavenger
// has not returned yet, and past the threshold returns it at once with
// debug.FreeOSMemory (a full GC, then a release of every free page).
//
// The threshold is the larger of heapReleaseThreshold and the live
// heap. A steady server's free heap stays around its live heap (the
// GC lets the heap grow to twice the live heap before collecting, and
// the scavenger keeps what the next cycle will reuse), so comparing
// with the live heap keeps a large steady server from forcing a GC
// every interval; 64 MiB is far above a normal server's churn (a few
// MiB of buffers and requests), so below a burst the check only reads
// three metrics. They are package variables for the tests, not config.
var (
	heapReleaseInterval         = 5 * time.Second
	heapReleaseThreshold uint64 = 64 << 20
)

const (
	metricHeapFree     = "/memory/classes/heap/free:bytes"     // free, not yet returned
	metricHeapReleased = "/memory/classes/heap/released:bytes" // free and returned
	metricHeapObjects  = "/memory/classes/heap/objects:bytes"  // live objects, and dead ones not yet swept
)

// A heapReleaser returns the free heap past its threshold to the OS.
type heapReleaser struct {
	log     func() *slog.Logger
	samples []metrics.Sample
	stop    chan struct{}
	done    chan struct{}
}

func newHeapReleaser(log func() *slog.Logger) *heapReleaser {
	return &heapReleaser{
		log: log,
		samples: []metrics.Sample{
			{Name: metricHeapFree},
			{Name: metricHeapReleased},
			{Name: metricHeapObjects},
		},
	}
}

// start runs check every heapReleaseInterval until Stop, so a release
// happens at most once per interval.
func (h *heapReleaser) start() {
	h.stop = make(chan struct{})
	h.done = make(chan struct{})
	go func() {
		defer close(h.done)
		t := time.NewTicker(heapReleaseInterval)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
				h.check()
			}
		}
	}()
}

// Stop ends the goroutine start began and waits for it.
func (h *heapReleaser) Stop() {
	if h.stop == nil {
		return
	}
	close(h.stop)
	<-h.done
	h.stop = nil
}

// read returns the free heap not yet returned, the heap returned, and
// the heap in objects.
func (h *heapReleaser) read() (free, released, objects uint64) {
	metrics.Read(h.samples)
	return h.samples[0].Value.Uint64(), h.samples[1].Value.Uint64(), h.samples[2].Value.Uint64()
}

// check returns the free heap to the OS if more of it than the
// threshold is held, and reports whether it did.
func (h *heapReleaser) check() bool {
	free, released, objects := h.read()
	if free <= max(heapReleaseThreshold, objects) {
		return false
	}
	debug.FreeOSMemory()
	_, after, _ := h.read()
	returned := uint64(0)
	if after > released {
		returned = after - released
	}
	h.log().Info("free heap returned to the OS", "free_bytes", free, "returned_bytes", returned)
	return true
}
