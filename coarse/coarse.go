// Package coarse provides timers for the many timeouts of a server that
// are armed for every request and almost never expire: the wait before a
// slow upstream's client is watched for going away, a request's place in
// a queue. They share one runtime timer, which fires on a grid of Tick,
// and stopping one costs a lock and no change to the runtime's timers.
//
// Why not time.Timer: the runtime keeps its timers in a heap per P and
// wakes a sleeping process (the thread parked in the network poller, and
// sysmon) at the earliest time in it. A timer stopped, or moved later,
// keeps its old time in the heap until that time comes, so a request
// that sets a short deadline and clears it when its answer comes still
// wakes the idle process once, at the old deadline: two thread switches
// for nothing, per request. A server waiting on slow upstreams (PHP
// pages that take tens of milliseconds) spends more on those wake-ups
// than on the requests. Timers of this package wake the process at most
// once a Tick while any is pending, whatever their number.
package coarse

import (
	"sync"
	"time"
)

// Tick is the grid a Timer fires on: a call is made between its time
// and a Tick later (later still when the process is busy, as for any
// timer). Timers due in the same Tick share one wake-up.
const Tick = 100 * time.Millisecond

// Timer is one pending call: Start arms it, Stop disarms it. The zero
// value is a disarmed Timer; it must not be copied once armed. Start
// and Stop are safe for concurrent use with the wheel's firing, but one
// Timer must not be started from two goroutines at once.
type Timer struct {
	f    func()
	when int64 // on the wheel's clock (see now)
	idx  int   // in the wheel's pending, plus one; 0: not pending
}

// Start arms t to call f, on a goroutine of the package's, once d has
// passed (within a Tick after). f must return quickly: every call due
// on the same tick runs on the same goroutine, one after another. To
// call a method without allocating each time, bind it to a func value
// once and pass that. Start panics if t is already armed.
func (t *Timer) Start(d time.Duration, f func()) {
	when := now() + int64(d)
	w := &wheel
	w.mu.Lock()
	if t.idx != 0 {
		w.mu.Unlock()
		panic("coarse: Start of an armed Timer")
	}
	t.f, t.when = f, when
	w.pending = append(w.pending, t)
	t.idx = len(w.pending)
	if w.next == 0 || onGrid(when) < w.next {
		// Nothing armed, or armed past this call's grid point: the
		// runtime timer is moved earlier, which leaves nothing stale
		// behind it.
		w.arm(when)
	}
	w.mu.Unlock()
}

// Stop disarms t and reports whether it did: false when t was not armed,
// or its call has been made or is being made (a caller that must know
// when that call has ended waits for it by its own means). t may be
// started again after Stop.
func (t *Timer) Stop() bool {
	w := &wheel
	w.mu.Lock()
	defer w.mu.Unlock()
	if t.idx == 0 {
		return false
	}
	w.remove(t)
	return true
}

// timerWheel is the pending calls and the one runtime timer that makes
// them.
type timerWheel struct {
	mu      sync.Mutex
	pending []*Timer // unordered
	due     []func() // the calls of a firing, reused
	rt      *time.Timer
	next    int64 // when rt fires, on the grid; 0: not armed
	firing  bool  // rt's call is running: it arms rt again itself
}

// wheel is the package's.
var wheel timerWheel

// epoch is the origin of the wheel's clock, which is monotonic.
var epoch = time.Now()

// now is the wheel's clock: nanoseconds since epoch.
func now() int64 { return int64(time.Since(epoch)) }

// onGrid returns the grid point at or after when.
func onGrid(when int64) int64 {
	tick := int64(Tick)
	return (when + tick - 1) / tick * tick
}

// arm sets the runtime timer for the grid point at or after when. w.mu
// is held.
func (w *timerWheel) arm(when int64) {
	at := onGrid(when)
	if w.firing {
		// fire picks the earliest pending call when it is done.
		return
	}
	w.next = at
	d := time.Duration(at - now())
	if w.rt == nil {
		w.rt = time.AfterFunc(d, w.fire)
		return
	}
	w.rt.Reset(d)
}

// remove takes t out of pending. w.mu is held.
func (w *timerWheel) remove(t *Timer) {
	i, last := t.idx-1, len(w.pending)-1
	if i != last {
		moved := w.pending[last]
		w.pending[i], moved.idx = moved, i+1
	}
	w.pending[last] = nil
	w.pending = w.pending[:last]
	t.idx, t.f = 0, nil
}

// fire makes the calls that are due, then arms the runtime timer for
// the earliest call still pending, if any.
func (w *timerWheel) fire() {
	w.mu.Lock()
	w.firing = true
	t := now()
	for i := 0; i < len(w.pending); {
		p := w.pending[i]
		if p.when > t {
			i++
			continue
		}
		f := p.f
		w.remove(p) // moves the last one to i
		w.due = append(w.due, f)
	}
	due := w.due
	w.mu.Unlock()
	for i, f := range due {
		f()
		due[i] = nil
	}
	w.mu.Lock()
	w.due = due[:0]
	w.firing = false
	w.next = 0
	if len(w.pending) > 0 {
		earliest := w.pending[0].when
		for _, p := range w.pending[1:] {
			earliest = min(earliest, p.when)
		}
		w.arm(max(earliest, now()))
	}
	w.mu.Unlock()
}
