package engine

import (
	"testing"
	"time"
)

// TestBodyPace plays arrivals (a wait, then the bytes it brought) against
// the rule on a clock of its own: 1,000 B/s over 2s windows (2,000 bytes
// each) after a 2s grace, and checks when the body is cut off.
func TestBodyPace(t *testing.T) {
	type arrival struct {
		wait time.Duration
		n    int
	}
	every := func(wait time.Duration, n, times int) []arrival {
		a := make([]arrival, times)
		for i := range a {
			a[i] = arrival{wait, n}
		}
		return a
	}
	tests := []struct {
		name     string
		arrivals []arrival
		cutAt    int // index of the wait that expires; -1 for none
	}{
		{"just above the rate", every(100*time.Millisecond, 101, 100), -1},
		// Windows fill in 2.1s: the one ending at 4.1s is short.
		{"just below the rate", every(100*time.Millisecond, 99, 100), 41},
		// The burst fills the window at 0s; grace and window end at 4s.
		{"burst then trickle", append([]arrival{{0, 1 << 20}}, every(500*time.Millisecond, 1, 20)...), 9},
		{"stall within the grace", append([]arrival{{1900 * time.Millisecond, 10}}, every(100*time.Millisecond, 200, 30)...), -1},
		{"stall shorter than a window", append(every(100*time.Millisecond, 200, 20), arrival{1900 * time.Millisecond, 2000}), -1},
		{"stall longer than a window", append(every(100*time.Millisecond, 200, 20), arrival{2100 * time.Millisecond, 2000}), 20},
		{"silence", []arrival{{time.Hour, 0}}, 0},
	}
	lim := Limits{BodyTimeout: 2 * time.Second, MinBodyRate: 1000}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p bodyPace
			p.start(&lim)
			now := int64(1e18)
			cut := -1
			for i, a := range tt.arrivals {
				deadline := p.wait(now)
				if now+int64(a.wait) > deadline {
					cut = i
					break
				}
				now += int64(a.wait)
				p.got(now, a.n)
			}
			if cut != tt.cutAt {
				t.Errorf("cut off at arrival %d, want %d", cut, tt.cutAt)
			}
		})
	}
}

// With the rate off, BodyTimeout bounds the total time spent waiting.
func TestBodyPaceRateOff(t *testing.T) {
	var p bodyPace
	p.start(&Limits{BodyTimeout: time.Second, MinBodyRate: -1})
	now := int64(0)
	for range 9 {
		p.wait(now)
		now += int64(100 * time.Millisecond)
		p.got(now, 1<<20)
	}
	if d := p.wait(now); d != now+int64(100*time.Millisecond) {
		t.Errorf("deadline %v after 900ms of waiting, want 100ms", time.Duration(d-now))
	}
}
