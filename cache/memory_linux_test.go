//go:build !race

package cache

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/pipe"
)

var churnSize = flag.Int("cache.churn-size", 0, "TestChurnMemoryBound: measure this body size in this process")

// rss returns the process's resident set size, from /proc/self/statm.
func rss(t testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	f := bytes.Fields(b)
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// churn sends n misses for distinct keys, each a body of size bytes,
// through a memory store of budget bytes, and returns the process's
// peak resident set over the churn (sampled every 32 requests) less
// what it was before, and that growth at the end. The source makes
// each body anew, as an application does: garbage, which lets the
// collector's pacing show.
func churn(t testing.TB, budget int64, size, n int) (peak, end int64) {
	debug.FreeOSMemory()
	base := rss(t)
	arenaHeap, arenaSmallPages = *onHeap, *smallPages
	x, err := New(Options{Size: budget})
	if err != nil {
		t.Fatal(err)
	}
	src := pipe.Source(func(c *pipe.Conn) pipe.Content {
		h := c.Header()
		h.Set("Cache-Control", "max-age=600")
		h.SetContentLength(int64(size))
		return func(w pipe.Writer) error {
			_, err := w.Write(bytes.Repeat([]byte{'x'}, size))
			return err
		}
	})
	h := pipe.Handler(pipe.Chain{x, src})
	w := &discard{}
	for i := range n {
		h.Serve(w, allocRequest([]byte("k="+strconv.Itoa(i))))
		if i%32 == 0 {
			peak = max(peak, rss(t)-base)
		}
	}
	end = rss(t) - base
	peak = max(peak, end)
	if got := x.Size(); got > budget {
		t.Errorf("the store holds %d bytes, over its budget %d", got, budget)
	}
	runtime.KeepAlive(x)
	return peak, end
}

// A memory store's process holds about its budget, not twice it: a
// churn of distinct keys through a 64 MB store (five times what it
// holds) grows the resident set by no more than the budget and a
// bounded slack: the arena's, and the Go heap's own, which holds the
// entries' header fields and bookkeeping (charged to the budget) and
// lets it grow to about twice that between collections. With 4 KB
// bodies that is about a quarter of the budget, with 100 KB bodies
// little.
//
// Each size is measured in a process of its own (this test run again),
// so that what one churn leaves does not count in the next.
func TestChurnMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 320 MB through the cache")
	}
	const budget = 64 << 20
	limits := map[int]int64{
		4 << 10:   budget*7/4 + 4<<20,
		100 << 10: budget*7/4 + 4<<20,
	}
	if *churnSize == 0 {
		for _, size := range []int{4 << 10, 100 << 10} {
			cmd := exec.Command(os.Args[0], "-test.run=^TestChurnMemoryBound$", "-test.v", "-cache.churn-size="+strconv.Itoa(size))
			out, err := cmd.CombinedOutput()
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "memory_linux_test.go") {
					t.Log(strings.TrimSpace(line))
				}
			}
			if err != nil {
				t.Errorf("%d-byte bodies: %v", size, err)
			}
		}
		return
	}
	limit, ok := limits[*churnSize]
	if !ok {
		t.Fatalf("no limit for %d-byte bodies", *churnSize)
	}
	n := 5 * budget / *churnSize
	peak, end := churn(t, budget, *churnSize, n)
	t.Logf("%d-byte bodies, %d misses through a %d MB store: resident set grew by %d MB at peak, %d MB at the end",
		*churnSize, n, budget>>20, peak>>20, end>>20)
	if peak > limit {
		t.Errorf("%d-byte bodies: the resident set grew by %d MB at peak, want at most %d MB", *churnSize, peak>>20, limit>>20)
	}
}
