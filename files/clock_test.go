package files

import (
	"testing"
	"time"
)

// The coarse clock stays within about a tick of the system's while read,
// and its timer stops once it is not read: an idle process is not woken
// for it.
func TestCoarseClock(t *testing.T) {
	var c coarseClock
	last := int64(0)
	end := time.Now().Add(20 * clockTick)
	for time.Now().Before(end) {
		got, now := c.Now(), preciseNow()
		if got < last {
			t.Fatalf("clock went back: %d after %d", got, last)
		}
		// A tick plus generous room for a late timer on a loaded machine.
		if lag := time.Duration(now - got); lag > clockTick+50*time.Millisecond {
			t.Fatalf("clock %v behind", lag)
		}
		last = got
		time.Sleep(clockTick / 4)
	}
	if !c.ticking.Load() {
		t.Fatal("clock not ticking while read")
	}
	deadline := time.Now().Add(2 * time.Second)
	for c.ticking.Load() {
		if time.Now().After(deadline) {
			t.Fatal("clock still ticking 2s after its last read")
		}
		time.Sleep(clockTick)
	}
	// Read again after it stopped: it starts with the system's reading.
	before := preciseNow()
	if got := c.Now(); got < before {
		t.Fatalf("restarted clock reads %d, before %d", got, before)
	}
}

func BenchmarkCacheNow(b *testing.B) {
	for _, coarse := range []bool{false, true} {
		name := "precise"
		if coarse {
			name = "coarse"
		}
		b.Run(name, func(b *testing.B) {
			c := &cache{coarse: coarse}
			var sum int64
			for b.Loop() {
				sum += c.now()
			}
			_ = sum
		})
	}
}
