package files

import (
	"testing"
	"time"
)

// The coarse clock ticks while it is read often, staying within about a
// tick of the system's; read a few times a tick, or not at all, it stops,
// and a read then reads the system's clock: a process that reads it
// rarely is not woken for it.
func TestCoarseClock(t *testing.T) {
	var c coarseClock
	last := int64(0)
	check := func(got, now int64, slack time.Duration) {
		t.Helper()
		if got < last {
			t.Fatalf("clock went back: %d after %d", got, last)
		}
		if lag := time.Duration(now - got); lag > slack {
			t.Fatalf("clock %v behind, want at most %v", lag, slack)
		}
		last = got
	}
	// Read often: it ticks. (A tick, and generous room for a late timer
	// on a loaded machine.)
	for end := time.Now().Add(20 * clockTick); time.Now().Before(end); {
		check(c.Now(), preciseNow(), clockTick+50*time.Millisecond)
	}
	if !c.ticking.Load() {
		t.Fatal("clock not ticking while read often")
	}
	// Read a few times a tick: it stops, and reads the system's clock.
	stopped := false
	for end := time.Now().Add(40 * clockTick); time.Now().Before(end); {
		stopped = stopped || !c.ticking.Load()
		if stopped && c.ticking.Load() {
			t.Fatal("clock ticking again, read a few times a tick")
		}
		check(c.Now(), preciseNow(), clockTick+50*time.Millisecond)
		time.Sleep(clockTick / 4)
	}
	if !stopped {
		t.Fatal("clock still ticking, read a few times a tick")
	}
	before := preciseNow()
	if got := c.Now(); got < before {
		t.Fatalf("stopped clock reads %d, before %d", got, before)
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
