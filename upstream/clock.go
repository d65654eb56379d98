package upstream

import "time"

// Instant is a reading of the monotonic clock, in nanoseconds since the
// package's start: what a request's deadlines, an idle connection's age
// and a passive health mark are reckoned in. Reading it (Now) is one
// clock read where time.Now is two (the wall clock as well), and it is
// the clock deadlines are kept in anyway. The zero Instant is the
// package's start.
type Instant int64

// clockStart is the origin of instants.
var clockStart = time.Now()

// Now returns the current instant.
func Now() Instant { return Instant(time.Since(clockStart)) }

// InstantOf returns the instant of t, which must carry a monotonic
// reading (time.Now's do) for the two clocks to agree.
func InstantOf(t time.Time) Instant { return Instant(t.Sub(clockStart)) }

// Add returns t+d.
func (t Instant) Add(d time.Duration) Instant { return t + Instant(d) }

// Sub returns the duration t-u.
func (t Instant) Sub(u Instant) time.Duration { return time.Duration(t - u) }

// Time returns t as a time.Time, for a connection's deadlines: with a
// monotonic reading, which is what the runtime's deadlines follow.
func (t Instant) Time() time.Time { return clockStart.Add(time.Duration(t)) }
