package engine

import (
	"math"
	"time"
)

// bodyRateWindow is the window over which Limits.MinBodyRate is judged,
// unless Limits.BodyTimeout is shorter (see Limits.MinBodyRate).
const bodyRateWindow = 5 * time.Second

// bodyPace judges whether a request body keeps arriving at the minimum
// rate over a sliding window rather than on average, so that a body sent
// fast and then a byte at a time is cut off like any slow one: after the
// grace period, every window's worth of bytes (MinBodyRate × window) must
// arrive within a window of the previous ones (or of the grace period's
// end). Only time the connection spends waiting for body bytes counts:
// time the handler takes between reads is not the client's doing.
//
// It costs a few additions per read, on the timeout manager's coarse
// clock: a wait shorter than a tick counts as 0 or a whole tick, which
// evens out over many reads.
type bodyPace struct {
	grace    int64 // Limits.BodyTimeout, in ns of waiting
	window   int64 // ns; 0 when the rate is off
	quota    int64 // bytes a window must carry
	waited   int64 // ns spent waiting for body bytes so far
	winStart int64 // waited when the current window began
	winGot   int64 // bytes received since the current window began
	since    int64 // coarse time the current wait began
}

// start readies p for a new body under lim.
func (p *bodyPace) start(lim *Limits) {
	*p = bodyPace{grace: int64(lim.BodyTimeout)}
	if lim.MinBodyRate > 0 {
		w := min(lim.BodyTimeout, bodyRateWindow)
		rate := min(lim.MinBodyRate, math.MaxInt64/bodyRateWindow.Milliseconds())
		p.window = int64(w)
		p.quota = max(1, rate*w.Milliseconds()/1000)
	}
}

// wait notes that a wait for body bytes begins at now (the coarse clock)
// and returns its deadline: the end of the grace period, or, with a rate,
// the end of the current window, which begins no earlier than the grace
// period ends. It may be in the past.
func (p *bodyPace) wait(now int64) (deadline int64) {
	p.since = now
	end := p.grace
	if p.window > 0 {
		end = max(p.grace, p.winStart) + p.window
	}
	return now + end - p.waited
}

// got accounts for the wait begun by wait, which ended at now with n
// bytes received. A window that has its quota ends, and the next begins
// empty: bytes beyond the quota buy no time later.
func (p *bodyPace) got(now int64, n int) {
	p.waited += now - p.since
	p.add(n)
}

// add accounts for n bytes that came without a wait.
func (p *bodyPace) add(n int) {
	p.winGot += int64(n)
	if p.window > 0 && p.winGot >= p.quota {
		p.winStart, p.winGot = p.waited, 0
	}
}
