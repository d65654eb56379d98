package daemon

import (
	"context"
	"log/slog"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// readMetric reads one runtime metric of kind uint64.
func readMetric(t *testing.T, name string) uint64 {
	t.Helper()
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Fatalf("metric %s: kind %v", name, s[0].Value.Kind())
	}
	return s[0].Value.Uint64()
}

func testReleaser(t *testing.T) (*heapReleaser, *sluicetest.Buffer) {
	log := &sluicetest.Buffer{}
	logger := slog.New(slog.NewTextHandler(log, nil))
	return newHeapReleaser(func() *slog.Logger { return logger }), log
}

// sink keeps the compiler from dropping the garbage's writes.
var sink []byte

// After a burst's garbage is collected, one check returns the free heap
// to the OS instead of leaving it to the slow background scavenger.
func TestHeapReleaseReturnsFreedHeap(t *testing.T) {
	const garbage = 128 << 20
	h, log := testReleaser(t)
	debug.FreeOSMemory() // start from a heap with nothing free

	chunks := make([][]byte, garbage>>20)
	for i := range chunks {
		chunks[i] = make([]byte, 1<<20)
		for j := 0; j < len(chunks[i]); j += 4096 {
			chunks[i][j] = 1 // touch every page, as a burst's buffers are
		}
		sink = chunks[i]
	}
	chunks, sink = nil, nil
	runtime.GC() // the garbage is now free heap, not yet returned

	if free := readMetric(t, metricHeapFree); free <= heapReleaseThreshold {
		t.Fatalf("free heap after the burst %d MiB, not above the threshold %d MiB", free>>20, heapReleaseThreshold>>20)
	}
	released0 := readMetric(t, metricHeapReleased)
	if !h.check() {
		t.Fatal("check did not release a free heap above the threshold")
	}
	released := int64(readMetric(t, metricHeapReleased)) - int64(released0)
	free := readMetric(t, metricHeapFree)
	t.Logf("released %d MiB; %d MiB free not returned", released>>20, free>>20)
	if released < garbage*3/4 {
		t.Errorf("released %d MiB of %d MiB of garbage", released>>20, garbage>>20)
	}
	if free >= heapReleaseThreshold {
		t.Errorf("free heap not returned %d MiB, want below %d MiB", free>>20, heapReleaseThreshold>>20)
	}
	if got := log.String(); !strings.Contains(got, "free heap returned to the OS") || !strings.Contains(got, "returned_bytes=") {
		t.Errorf("log %q, want the release and its size", got)
	}
}

// A check with little free heap neither collects nor releases.
func TestHeapReleaseIdle(t *testing.T) {
	h, log := testReleaser(t)
	debug.FreeOSMemory()
	if free := readMetric(t, metricHeapFree); free > heapReleaseThreshold {
		t.Fatalf("free heap %d MiB after FreeOSMemory", free>>20)
	}
	gcs := readMetric(t, "/gc/cycles/total:gc-cycles")
	if h.check() {
		t.Error("check released a heap with little free")
	}
	if n := readMetric(t, "/gc/cycles/total:gc-cycles") - gcs; n != 0 {
		t.Errorf("check ran %d GC cycles, want 0", n)
	}
	if log.String() != "" {
		t.Errorf("log %q, want nothing", log.String())
	}
}

// The releaser runs while the server runs and its goroutine ends with it.
func TestHeapReleaseStopsWithServer(t *testing.T) {
	file := filepath.Join(t.TempDir(), "site.yaml")
	writeFile(t, file, textConfig("127.0.0.1:0", "ok"))
	s, _ := newServer(t, fileLoad(file))
	start(t, s)
	h := s.heap
	if h == nil || h.done == nil {
		t.Fatal("no heap releaser running after Start")
	}
	select {
	case <-h.done:
		t.Fatal("heap releaser ended while the server runs")
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case <-h.done:
	default:
		t.Fatal("heap releaser still running after Shutdown returned")
	}
}
