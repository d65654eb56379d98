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
// read it, and read by them directly when none did for a tick: a runtime
// timer refreshes it every tick while it is read, and stops at the first
// tick after none did, so an idle process is not woken for it (an
// isolated read costs one wake-up, a tick later). A reading is at most
// about a tick behind the system's clock.
type coarseClock struct {
	now     atomic.Int64 // preciseNow as of the last tick
	ticking atomic.Bool  // the timer runs: now is kept
	read    atomic.Bool  // now was read since the last tick
	mu      sync.Mutex   // serializes start and tick
	t       *time.Timer
}

// clock is the package's coarse clock, shared by every Server.
var clock coarseClock

// Now returns the clock's reading, nanoseconds since clockEpoch.
func (c *coarseClock) Now() int64 {
	if c.ticking.Load() {
		if !c.read.Load() {
			c.read.Store(true)
		}
		return c.now.Load()
	}
	return c.start()
}

// start reads the system's clock and starts the timer if it is not
// running.
func (c *coarseClock) start() int64 {
	t := preciseNow()
	c.mu.Lock()
	if !c.ticking.Load() {
		c.now.Store(t)
		c.read.Store(false)
		c.ticking.Store(true)
		if c.t == nil {
			c.t = time.AfterFunc(clockTick, c.tick)
		} else {
			c.t.Reset(clockTick)
		}
	}
	c.mu.Unlock()
	return t
}

// tick refreshes the clock if it was read since the last tick, and
// otherwise stops it.
func (c *coarseClock) tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.read.Swap(false) {
		c.ticking.Store(false)
		return
	}
	c.now.Store(preciseNow())
	c.t.Reset(clockTick)
}
