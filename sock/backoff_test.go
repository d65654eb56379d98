package sock

import (
	"testing"
	"time"
)

// The back-off doubles to a second, survives successes that come less
// than a second after an error, and warns at most once a second.
func TestAcceptBackoff(t *testing.T) {
	var b AcceptBackoff
	now := int64(1e18)
	ms := int64(time.Millisecond)
	var waits []time.Duration
	warnings := 0
	for range 10 { // fail, succeed, fail, … 10ms apart
		wait, warn, _ := b.Failed(now)
		waits = append(waits, wait)
		if warn {
			warnings++
		}
		now += 10 * ms
		if n := b.Succeeded(now); n != 0 {
			t.Fatalf("succeeded 10ms after an error reported %d unlogged errors", n)
		}
	}
	want := []time.Duration{5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000}
	for i, w := range want {
		if waits[i] != w*time.Millisecond {
			t.Fatalf("waits %v, want %v (ms)", waits, want)
		}
	}
	if warnings != 1 {
		t.Errorf("%d warnings within 100ms, want 1", warnings)
	}
	if _, warn, n := b.Failed(now + int64(acceptCalm)); !warn || n != 9 {
		t.Errorf("a second later: warn %v with %d suppressed, want a warning counting 9", warn, n)
	}
	now += int64(acceptCalm)
	b.Failed(now + 10*ms) // unlogged
	if n := b.Succeeded(now + 10*ms + int64(acceptCalm)); n != 1 {
		t.Errorf("recovery reported %d unlogged errors, want 1", n)
	}
	if wait, warn, _ := b.Failed(now + 3*int64(acceptCalm)); wait != acceptDelayMin || !warn {
		t.Errorf("after recovery: wait %v, warn %v; want %v and a warning", wait, warn, acceptDelayMin)
	}
}
