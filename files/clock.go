package files

import (
	"sync"
	"sync/atomic"
	"time"
)

// clockTick is how often the coarse clock reads the system's clock while
// it is in use.
const clockTick = 10 * time.Millisecond

// clockEpoch is the origin of the package's clocks, which are monotonic.
var clockEpoch = time.Now()

// preciseNow reads the system's clock: nanoseconds since clockEpoch.
func preciseNow() int64 { return int64(time.Since(clockEpoch)) }

// coarseClock is preciseNow read at most once a clockTick while requests
// read it often, and read by them directly otherwise. A runtime timer
// refreshes it every tick while it is read at least busyReads times a
// tick, and stops at the first tick after fewer: a process serving a few
// requests a second (PHP pages that take tens of milliseconds) reads the
// system's clock for each, which costs less than a timer waking it, and
// an idle process is never woken for it. A reading is at most about a
// tick behind the system's clock.
type coarseClock struct {
	now     atomic.Int64 // preciseNow as of the last tick
	ticking atomic.Bool  // the timer runs: now is kept
	reads   atomic.Int32 // reads counted in this tick (or window), up to busyReads
	window  atomic.Int64 // the tick-long window the reads were counted in, while stopped
	mu      sync.Mutex   // serializes start and tick
	t       *time.Timer
}

// busyReads is how many reads in a tick keep the clock ticking, and
// start it: a thousand and more a second (a timer firing costs a
// process that would sleep more than as many reads of the system's
// clock).
const busyReads = 10

// clock is the package's coarse clock, shared by every Server.
var clock coarseClock

// Now returns the clock's reading, nanoseconds since clockEpoch.
func (c *coarseClock) Now() int64 {
	if c.ticking.Load() {
		// Counted up to busyReads only: a busy clock's readers then
		// only load, and never contend for the count's cache line.
		if c.reads.Load() < busyReads {
			c.reads.Add(1)
		}
		return c.now.Load()
	}
	t := preciseNow()
	if w := t / int64(clockTick); c.window.Load() != w {
		// A new window: the count starts again (racing readers may
		// lose a count or two, which only delays the start).
		c.window.Store(w)
		c.reads.Store(0)
	}
	if c.reads.Add(1) >= busyReads {
		c.start(t)
	}
	return t
}

// start makes the clock tick from t on, if it does not already.
func (c *coarseClock) start(t int64) {
	c.mu.Lock()
	if !c.ticking.Load() {
		c.now.Store(t)
		c.reads.Store(0)
		c.ticking.Store(true)
		if c.t == nil {
			c.t = time.AfterFunc(clockTick, c.tick)
		} else {
			c.t.Reset(clockTick)
		}
	}
	c.mu.Unlock()
}

// tick refreshes the clock if it was read busyReads times since the last
// tick, and otherwise stops it.
func (c *coarseClock) tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reads.Swap(0) < busyReads {
		c.ticking.Store(false)
		return
	}
	c.now.Store(preciseNow())
	c.t.Reset(clockTick)
}
