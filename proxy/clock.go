package proxy

import "time"

// instant is a reading of the monotonic clock, in nanoseconds since
// clockStart: what a request's deadlines, an idle connection's age and a
// passive health mark are reckoned in. Reading it (monoNow) is one clock
// read where time.Now is two (the wall clock as well), and it is the
// clock deadlines are kept in anyway.
type instant int64

// clockStart is the origin of instants.
var clockStart = time.Now()

// monoNow returns the current instant.
func monoNow() instant { return instant(time.Since(clockStart)) }

// instantOf returns the instant of t, which must carry a monotonic
// reading (time.Now's do) for the two clocks to agree.
func instantOf(t time.Time) instant { return instant(t.Sub(clockStart)) }

func (t instant) add(d time.Duration) instant { return t + instant(d) }

func (t instant) sub(u instant) time.Duration { return time.Duration(t - u) }

// time returns t as a time.Time, for a connection's deadlines: with a
// monotonic reading, which is what the runtime's deadlines follow.
func (t instant) time() time.Time { return clockStart.Add(time.Duration(t)) }
