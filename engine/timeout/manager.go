// Package timeout is one timeout manager for many connections, after Warp's
// TimeManager: instead of a timer per read, each connection owns a Handle
// whose deadline it moves with a single atomic store, and one sweeper
// goroutine visits every handle once a tick and fires the ones that expired.
//
// Deadlines are measured on a coarse clock that the sweeper advances each
// tick, so reading the time costs one atomic load and a deadline fires up
// to one tick late. Choose a tick of a fraction (a quarter, say) of the
// shortest timeout in use.
//
// The sweeper does not wake when nothing is due: after a sweep it sleeps
// until the earliest deadline, idle timeout or notice of its handles (a
// tick at least), and a handle armed for earlier wakes it, which then
// sweeps at that time (or at its next tick, if later): a keep-alive
// connection that goes idle makes it sweep when the idle notice is due,
// whether the connection is still idle then or not. While it sleeps past its next tick, Now reads
// the system's clock instead of the coarse one. A manager whose handles
// are re-armed busily (more than busyChanges of them, or half of them
// and at least 8, between two sweeps) keeps its tick, and its clock a
// load: it would read the system's clock far more often than it wakes.
//
// A Handle is idle (waiting for a new request; it expires after the
// manager's idle timeout, which the owner may tighten under load), armed
// with a deadline, both (MarkIdle: it fires at whichever comes first), or
// cleared (no timeout while, say, a handler runs).
//
// A handle that has been idle for the manager's idle notice period (but
// not yet its timeout) gets one IdleNotice call, and reports Noticed until
// it is idle anew: a server uses it to move a long wait off the goroutine
// that waits. The notice is never early: the clock an idle period is
// stamped with may be up to a tick behind, so a notice comes after the
// notice period and at most two ticks more.
package timeout

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// busyChanges is the count of handles re-armed between two sweeps above
// which the sweeper keeps its tick (see the package's doc), and
// busyShare the share of its handles (at least 8) likewise.
const (
	busyChanges = 64
	busyShare   = 2 // a half
)

// Manager sweeps its handles once a tick. It is safe for concurrent use.
type Manager struct {
	now         atomic.Int64 // coarse clock, Unix nanoseconds
	asleep      atomic.Bool  // the sweeper sleeps past its next tick: now is not kept
	next        atomic.Int64 // when the sweeper sweeps next, at the latest (Unix ns); 0 while it sweeps
	early       atomic.Int64 // the earliest due time told to the sweeper since it last woke; MaxInt64: none
	wake        chan struct{}
	idleTimeout atomic.Int64 // nanoseconds
	idleNotice  atomic.Int64 // nanoseconds; 0 = no notices

	mu      sync.Mutex
	handles []*Handle
	fire    []*Handle // the sweeper's scratch; only its goroutine touches it
	notify  []*Handle // likewise

	tick time.Duration
	done chan struct{}
	wg   sync.WaitGroup
}

// Handle is one connection's entry in a Manager. Its methods are safe to
// call from any goroutine; typically only the connection's own goroutine
// arms it, while the manager's sweeper fires it.
type Handle struct {
	m         *Manager
	idx       int          // position in m.handles; guarded by m.mu, -1 when cancelled
	deadline  atomic.Int64 // Unix ns; 0 = none
	idleSince atomic.Int64 // Unix ns; 0 = not idle
	noticed   atomic.Bool  // IdleNotice was called for the current idle period
	seen      uint32       // stamp of deadline and idleSince at the last sweep (the sweeper's), in noticed's padding
	owner     Owner
}

// Owner is told about its Handle's events. Its methods are called from the
// sweeper's goroutine without locks held, and must not block: Expire
// typically sets a past deadline on a socket so the owner's blocked read
// or write returns.
type Owner interface {
	// Expire is called when the handle's deadline or idle timeout passes.
	Expire()
	// IdleNotice is called once per idle period, after the idle notice.
	IdleNotice()
}

// New starts a manager that sweeps every tick, with the given idle timeout.
// Call Stop to end its goroutine.
func New(tick, idleTimeout time.Duration) *Manager {
	m := makeManager(tick, idleTimeout)
	m.wg.Add(1)
	go m.run()
	return m
}

// makeManager returns a manager that sweeps only when told to.
func makeManager(tick, idleTimeout time.Duration) *Manager {
	if tick <= 0 {
		tick = time.Second
	}
	m := &Manager{tick: tick, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	m.now.Store(time.Now().UnixNano())
	m.next.Store(math.MaxInt64)
	m.early.Store(math.MaxInt64)
	m.idleTimeout.Store(int64(idleTimeout))
	return m
}

// Stop ends the sweeper and waits for it. Handles are not fired.
func (m *Manager) Stop() {
	close(m.done)
	m.wg.Wait()
}

// Now returns the coarse clock in Unix nanoseconds (the system's clock
// while the sweeper sleeps past its tick).
func (m *Manager) Now() int64 {
	if m.asleep.Load() {
		return time.Now().UnixNano()
	}
	return m.now.Load()
}

// due tells the sweeper that something is due at t, Unix ns: if that is
// before it means to sweep, it is woken to sweep then (or at its next
// tick, if later).
func (m *Manager) due(t int64) {
	if n := m.next.Load(); n == 0 || t < n {
		for e := m.early.Load(); t < e && !m.early.CompareAndSwap(e, t); e = m.early.Load() {
		}
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
}

// SetIdleTimeout changes how long an idle handle may stay idle; it applies
// to handles already idle at the next sweep.
func (m *Manager) SetIdleTimeout(d time.Duration) {
	m.idleTimeout.Store(int64(d))
	m.due(0)
}

// IdleTimeout returns the current idle timeout.
func (m *Manager) IdleTimeout() time.Duration { return time.Duration(m.idleTimeout.Load()) }

// SetIdleNotice sets how long a handle stays idle before its owner's
// IdleNotice is called; 0 turns notices off.
func (m *Manager) SetIdleNotice(d time.Duration) {
	m.idleNotice.Store(int64(d))
	m.due(0)
}

// idleDue returns when an idle period that began at since first needs a
// sweep: its notice (see sweep) or its timeout.
func (m *Manager) idleDue(since int64) int64 {
	d := m.idleTimeout.Load()
	if n := m.idleNotice.Load(); n > 0 {
		d = min(d, n+int64(m.tick))
	}
	return since + d
}

// Register adds a handle for o, initially cleared.
func (m *Manager) Register(o Owner) *Handle {
	h := &Handle{m: m, owner: o}
	m.mu.Lock()
	h.idx = len(m.handles)
	m.handles = append(m.handles, h)
	m.mu.Unlock()
	return h
}

// Cancel removes the handle from its manager; it will not fire afterwards.
// Cancel is idempotent.
func (h *Handle) Cancel() {
	m := h.m
	m.mu.Lock()
	if i := h.idx; i >= 0 {
		last := len(m.handles) - 1
		m.handles[i] = m.handles[last]
		m.handles[i].idx = i
		m.handles[last] = nil
		m.handles = m.handles[:last]
		h.idx = -1
	}
	m.mu.Unlock()
}

// SetDeadline arms the handle to fire d from now and ends idleness.
func (h *Handle) SetDeadline(d time.Duration) {
	h.idleSince.Store(0)
	t := h.m.Now() + int64(d)
	h.deadline.Store(t)
	h.m.due(t)
}

// SetDeadlineAt arms the handle to fire at t (Unix ns on the manager's
// clock) and ends idleness.
func (h *Handle) SetDeadlineAt(t int64) {
	h.idleSince.Store(0)
	h.deadline.Store(t)
	h.m.due(t)
}

// SetIdle marks the handle idle from now: it fires once it has been idle
// longer than the manager's idle timeout, or when CloseIdle picks it.
func (h *Handle) SetIdle() {
	h.deadline.Store(0)
	h.noticed.Store(false)
	now := h.m.Now()
	h.idleSince.Store(now)
	h.m.due(h.m.idleDue(now))
}

// MarkIdle marks an armed handle idle from now as well, unless it is idle
// already: CloseIdle may then pick it, and it fires at its deadline or at
// the idle timeout, whichever comes first. A server uses it for a new
// connection that found no request to read yet: it may be closed like an
// idle one but must not wait longer than a request head may take.
func (h *Handle) MarkIdle() {
	if h.idleSince.Load() == 0 {
		h.noticed.Store(false)
		now := h.m.Now()
		if h.idleSince.CompareAndSwap(0, now) {
			h.m.due(h.m.idleDue(now))
		}
	}
}

// Noticed reports whether the handle has been idle for the idle notice
// period in its current idle period: its owner's IdleNotice was called
// (or, if the owner ignored it, was due).
func (h *Handle) Noticed() bool { return h.noticed.Load() }

// Clear disarms the handle: it will not fire until armed again.
//
// Only the owner arms a handle; the sweeper only disarms it. A field
// read as zero therefore stays zero, and is not stored again: a
// connection serving pipelined requests clears a handle that is clear
// already for all but the first, and an atomic store costs a locked
// instruction where a load costs a plain one.
func (h *Handle) Clear() {
	if h.deadline.Load() != 0 {
		h.deadline.Store(0)
	}
	if h.idleSince.Load() != 0 {
		h.idleSince.Store(0)
	}
}

// Len returns the number of registered handles.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.handles)
}

// Idle returns the number of handles idle now: marked by SetIdle or
// MarkIdle and not armed or cleared since. For a server, these are the
// connections waiting for a request. It locks the manager and walks every
// handle: it is for tests and diagnostics, not for a request path.
func (m *Manager) Idle() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, h := range m.handles {
		if h.idleSince.Load() != 0 {
			n++
		}
	}
	return n
}

// CloseIdle fires up to n idle handles, longest idle first, at once, and
// returns how many it fired. A server at its connection limit uses it to
// make room for new connections.
func (m *Manager) CloseIdle(n int) int {
	var fire []*Handle
	m.mu.Lock()
	for len(fire) < n {
		var oldest *Handle
		var since int64
		for _, h := range m.handles {
			if s := h.idleSince.Load(); s != 0 && (oldest == nil || s < since) {
				oldest, since = h, s
			}
		}
		if oldest == nil {
			break
		}
		oldest.idleSince.Store(0)
		oldest.deadline.Store(0) // fired now; not again at its deadline
		fire = append(fire, oldest)
	}
	m.mu.Unlock()
	for _, h := range fire {
		h.owner.Expire()
	}
	return len(fire)
}

// ExpireAll fires every handle at once, armed or not. A server closing
// down uses it to interrupt all its connections.
func (m *Manager) ExpireAll() {
	m.mu.Lock()
	all := append([]*Handle(nil), m.handles...)
	m.mu.Unlock()
	for _, h := range all {
		h.Clear()
		h.owner.Expire()
	}
}

func (m *Manager) run() {
	defer m.wg.Done()
	t := time.NewTimer(m.tick)
	defer t.Stop()
	last := time.Now().UnixNano() // when the last sweep was
	for {
		select {
		case <-m.done:
			return
		case <-m.wake:
			// Something is due before the sweep planned: sweep then, or
			// at the next tick after the last sweep if that is later.
			now := time.Now().UnixNano()
			at := max(m.early.Swap(math.MaxInt64), last+int64(m.tick))
			if m.next.Load() <= at {
				continue // planned for then already
			}
			if at <= now+int64(m.tick) {
				m.keepClock()
			}
			m.next.Store(at)
			t.Reset(time.Duration(at - now))
			continue
		case <-t.C:
		}
		m.keepClock()
		m.next.Store(0) // a handle armed from now on wakes the sweeper
		m.early.Store(math.MaxInt64)
		now := m.Now()
		next, changes := m.sweep(now)
		last = now
		at := max(next, now+int64(m.tick))
		if changes > busyChanges || changes >= 8 && changes*busyShare >= m.Len() {
			at = now + int64(m.tick)
		}
		if at > now+int64(m.tick) {
			m.asleep.Store(true)
		}
		m.next.Store(at)
		t.Reset(time.Duration(at - time.Now().UnixNano()))
	}
}

// keepClock makes the coarse clock the system's time, and Now read it.
func (m *Manager) keepClock() {
	m.now.Store(time.Now().UnixNano())
	m.asleep.Store(false)
}

// stamp folds a handle's deadline and idle period into 32 bits, for the
// sweeper to count the handles re-armed between two sweeps.
func stamp(d, s int64) uint32 {
	x := uint64(d) ^ uint64(s)*0x9e3779b97f4a7c15
	return uint32(x ^ x>>32)
}

// sweep advances the clock to now and fires every expired handle. It
// returns when the earliest of what is left is due (math.MaxInt64:
// nothing), and how many handles were re-armed since the last sweep.
func (m *Manager) sweep(now int64) (next int64, changes int) {
	next = math.MaxInt64
	m.now.Store(now)
	idle, notice := m.idleTimeout.Load(), m.idleNotice.Load()
	if notice > 0 {
		// An idle period stamped s began between s and the next tick: it
		// has certainly lasted the notice period once now-s covers a
		// tick more. Without the tick a notice could come at once (with
		// the notice period a tick, to a connection idle for a
		// microsecond before the tick that noticed it).
		notice += int64(m.tick)
	}
	m.mu.Lock()
	for _, h := range m.handles {
		// Firing disarms both the deadline and the idle period (a handle
		// marked idle while armed has both), so a handle fires once.
		d, s := h.deadline.Load(), h.idleSince.Load()
		if x := stamp(d, s); x != h.seen {
			changes++
			h.seen = x
		}
		if d != 0 && now >= d {
			if h.deadline.CompareAndSwap(d, 0) {
				h.idleSince.CompareAndSwap(s, 0)
				m.fire = append(m.fire, h)
			}
			continue
		}
		if d != 0 {
			next = min(next, d)
		}
		switch {
		case s == 0:
		case now-s >= idle:
			if h.idleSince.CompareAndSwap(s, 0) {
				h.deadline.CompareAndSwap(d, 0)
				m.fire = append(m.fire, h)
			}
		case notice > 0 && now-s >= notice && !h.noticed.Load():
			h.noticed.Store(true)
			m.notify = append(m.notify, h)
			next = min(next, s+idle)
		case notice > 0 && !h.noticed.Load():
			next = min(next, s+min(idle, notice))
		default:
			next = min(next, s+idle)
		}
	}
	m.mu.Unlock()
	for i, h := range m.fire {
		h.owner.Expire()
		m.fire[i] = nil
	}
	m.fire = m.fire[:0]
	for i, h := range m.notify {
		h.owner.IdleNotice()
		m.notify[i] = nil
	}
	m.notify = m.notify[:0]
	return next, changes
}
