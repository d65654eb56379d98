package timeout

import (
	"math"
	"sync/atomic"
	"testing"
	"time"
)

type owner struct {
	expired, noticed atomic.Int32
}

func (o *owner) Expire()     { o.expired.Add(1) }
func (o *owner) IdleNotice() { o.noticed.Add(1) }

// sweepAt advances the manager's clock by d and sweeps, so the tests drive
// time themselves instead of sleeping.
func sweepAt(m *Manager, d time.Duration) { m.sweep(m.Now() + int64(d)) }

// testTick is the tick of the managers the tests make; they have no
// ticker, so only sweepAt sweeps.
const testTick = 100 * time.Millisecond

func newManager(t *testing.T, idle time.Duration) *Manager {
	return makeManager(testTick, idle)
}

func TestDeadlineFiresOnceWhenPassed(t *testing.T) {
	m := newManager(t, time.Hour)
	o := &owner{}
	h := m.Register(o)
	h.SetDeadline(10 * time.Second)
	sweepAt(m, 9*time.Second)
	if o.expired.Load() != 0 {
		t.Fatal("fired before its deadline")
	}
	sweepAt(m, 10*time.Second)
	sweepAt(m, 1*time.Second)
	if n := o.expired.Load(); n != 1 {
		t.Fatalf("fired %d times, want 1", n)
	}
}

func TestClearedHandleNeverFires(t *testing.T) {
	m := newManager(t, time.Second)
	o := &owner{}
	h := m.Register(o)
	h.SetDeadline(time.Second)
	h.Clear()
	sweepAt(m, time.Hour)
	if o.expired.Load() != 0 || o.noticed.Load() != 0 {
		t.Fatal("a cleared handle fired")
	}
}

func TestIdleNoticeThenTimeout(t *testing.T) {
	m := newManager(t, 10*time.Second)
	m.SetIdleNotice(time.Second)
	o := &owner{}
	h := m.Register(o)
	h.SetIdle()
	sweepAt(m, 500*time.Millisecond)
	if o.noticed.Load() != 0 || h.Noticed() {
		t.Fatal("noticed too early")
	}
	sweepAt(m, time.Second)
	sweepAt(m, time.Second)
	if n := o.noticed.Load(); n != 1 || !h.Noticed() {
		t.Fatalf("noticed %d times (Noticed %v), want once per idle period", n, h.Noticed())
	}
	h.SetIdle() // a new idle period
	if h.Noticed() {
		t.Fatal("Noticed carried over into a new idle period")
	}
	sweepAt(m, 2*time.Second)
	if n := o.noticed.Load(); n != 2 {
		t.Fatalf("noticed %d times after a second idle period, want 2", n)
	}
	if o.expired.Load() != 0 {
		t.Fatal("expired before the idle timeout")
	}
	m.SetIdleTimeout(time.Second) // tightened under load
	sweepAt(m, time.Second)
	if o.expired.Load() != 1 {
		t.Fatal("idle handle outlived the tightened idle timeout")
	}
}

// The clock is a tick behind at worst, so a handle that went idle just
// before a tick is stamped with the tick before: it must not be noticed
// one notice period after that stamp, when it may have been idle for no
// more than a moment, but only once the period has surely passed.
func TestIdleNoticeNeverEarly(t *testing.T) {
	m := newManager(t, time.Hour)
	m.SetIdleNotice(testTick)
	o := &owner{}
	h := m.Register(o)
	h.SetIdle() // stamped now; as far as the manager knows, just before the next tick
	sweepAt(m, testTick)
	if o.noticed.Load() != 0 {
		t.Fatal("noticed one notice period after the stamp: the handle may have been idle for a moment only")
	}
	sweepAt(m, testTick)
	if o.noticed.Load() != 1 {
		t.Fatal("not noticed a notice period and a tick after the stamp")
	}
}

func TestCloseIdlePicksLongestIdle(t *testing.T) {
	m := newManager(t, time.Hour)
	older, newer, busy := &owner{}, &owner{}, &owner{}
	m.Register(older).SetIdle()
	sweepAt(m, time.Second) // advance the clock
	m.Register(newer).SetIdle()
	m.Register(busy).SetDeadline(time.Hour)
	if n := m.CloseIdle(1); n != 1 {
		t.Fatalf("CloseIdle(1) = %d", n)
	}
	if older.expired.Load() != 1 || newer.expired.Load() != 0 {
		t.Fatal("CloseIdle did not pick the longest-idle handle")
	}
	if n := m.CloseIdle(5); n != 1 || busy.expired.Load() != 0 {
		t.Fatalf("CloseIdle(5) = %d; busy expired %d", n, busy.expired.Load())
	}
}

func TestCancelRemovesHandle(t *testing.T) {
	m := newManager(t, time.Hour)
	var hs []*Handle
	owners := make([]*owner, 5)
	for i := range owners {
		owners[i] = &owner{}
		h := m.Register(owners[i])
		h.SetDeadline(time.Second)
		hs = append(hs, h)
	}
	hs[1].Cancel()
	hs[1].Cancel() // idempotent
	hs[3].Cancel()
	if m.Len() != 3 {
		t.Fatalf("Len = %d, want 3", m.Len())
	}
	sweepAt(m, time.Minute)
	for i, o := range owners {
		want := int32(1)
		if i == 1 || i == 3 {
			want = 0
		}
		if o.expired.Load() != want {
			t.Errorf("owner %d expired %d times, want %d", i, o.expired.Load(), want)
		}
	}
}

func TestExpireAll(t *testing.T) {
	m := newManager(t, time.Hour)
	a, b := &owner{}, &owner{}
	m.Register(a)
	m.Register(b).SetIdle()
	m.ExpireAll()
	if a.expired.Load() != 1 || b.expired.Load() != 1 {
		t.Fatal("ExpireAll missed a handle")
	}
}

func BenchmarkSweep10k(b *testing.B) {
	m := New(time.Hour, time.Hour)
	defer m.Stop()
	for i := 0; i < 10000; i++ {
		m.Register(&owner{}).SetIdle()
	}
	b.ReportAllocs()
	for b.Loop() {
		m.sweep(m.Now())
	}
}

// An idle handle with a deadline fires at whichever comes first, once, and
// CloseIdle may pick it like any idle handle.
func TestIdleDeadline(t *testing.T) {
	m := newManager(t, 10*time.Second)
	// armedIdle registers a handle armed for d and marked idle.
	armedIdle := func(d time.Duration) *owner {
		o := &owner{}
		h := m.Register(o)
		h.SetDeadline(d)
		h.MarkIdle()
		return o
	}
	o := armedIdle(3 * time.Second)
	sweepAt(m, 2*time.Second)
	if o.expired.Load() != 0 {
		t.Fatal("fired before its deadline")
	}
	sweepAt(m, time.Second)
	sweepAt(m, 10*time.Second)
	if n := o.expired.Load(); n != 1 {
		t.Fatalf("fired %d times, want 1 (at the deadline)", n)
	}

	o = armedIdle(time.Hour)
	sweepAt(m, 10*time.Second)
	if n := o.expired.Load(); n != 1 {
		t.Fatalf("fired %d times at the idle timeout, want 1", n)
	}

	o = armedIdle(time.Hour)
	if n := m.CloseIdle(1); n != 1 || o.expired.Load() != 1 {
		t.Fatalf("CloseIdle closed %d, handle fired %d times; want it picked", n, o.expired.Load())
	}
	sweepAt(m, 2*time.Hour)
	if n := o.expired.Load(); n != 1 {
		t.Fatalf("a handle CloseIdle fired fired again at its deadline (%d times)", n)
	}
}

// Idle counts the handles marked idle and not armed, cleared or
// cancelled since.
func TestIdleCount(t *testing.T) {
	m := newManager(t, time.Hour)
	a, b, c := m.Register(&owner{}), m.Register(&owner{}), m.Register(&owner{})
	if n := m.Idle(); n != 0 {
		t.Fatalf("fresh handles: Idle() = %d, want 0", n)
	}
	a.SetIdle()
	b.SetDeadline(time.Second)
	b.MarkIdle()
	c.SetIdle()
	if n := m.Idle(); n != 3 {
		t.Fatalf("Idle() = %d, want 3", n)
	}
	a.SetDeadline(time.Second)
	b.Clear()
	if n := m.Idle(); n != 1 {
		t.Fatalf("after SetDeadline and Clear: Idle() = %d, want 1", n)
	}
	c.Cancel()
	if n := m.Idle(); n != 0 {
		t.Fatalf("after Cancel: Idle() = %d, want 0", n)
	}
}

// A running manager with nothing due sleeps, its clock following the
// system's; a deadline, an idle notice and an idle timeout armed then
// each wake it in time (within two ticks), and once they are done it
// sleeps again.
func TestSweeperSleepsUntilDue(t *testing.T) {
	const tick = 20 * time.Millisecond
	const slack = time.Second // for a loaded machine (the race detector, other tests); asleep for good, the sweeper misses every bound
	m := New(tick, 300*time.Millisecond)
	defer m.Stop()
	m.SetIdleNotice(100 * time.Millisecond)
	waitAsleep := func() {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Second); !m.asleep.Load() || m.next.Load() != math.MaxInt64; {
			if time.Now().After(deadline) {
				t.Fatalf("the sweeper did not go to sleep (next %d)", m.next.Load())
			}
			time.Sleep(time.Millisecond)
		}
	}
	h := m.Register(&owner{})
	waitAsleep()
	before := time.Now().UnixNano()
	time.Sleep(5 * time.Millisecond)
	if now := m.Now(); now < before+int64(5*time.Millisecond) || now > time.Now().UnixNano() {
		t.Fatalf("asleep, Now is %d, not the system's clock (after %d)", now, before)
	}
	// within reports whether f becomes true between lo and hi from now.
	within := func(what string, start time.Time, lo, hi time.Duration, f func() bool) {
		t.Helper()
		for !f() {
			if time.Since(start) > hi {
				t.Fatalf("%s: not after %v", what, hi)
			}
			time.Sleep(time.Millisecond)
		}
		if e := time.Since(start); e < lo {
			t.Fatalf("%s after %v, before %v", what, e, lo)
		}
	}
	o := h.owner.(*owner)
	h.SetDeadline(150 * time.Millisecond)
	within("deadline", time.Now(), 150*time.Millisecond, 150*time.Millisecond+2*tick+slack, func() bool { return o.expired.Load() == 1 })
	waitAsleep()
	h.SetIdle()
	idle := time.Now()
	within("idle notice", idle, 100*time.Millisecond, 100*time.Millisecond+2*tick+slack, func() bool { return o.noticed.Load() == 1 })
	within("idle timeout", idle, 300*time.Millisecond, 300*time.Millisecond+tick+slack, func() bool { return o.expired.Load() == 2 })
	waitAsleep()
	// A shorter idle timeout applies to a handle idle already.
	h.SetIdle()
	time.Sleep(2 * tick)
	m.SetIdleTimeout(50 * time.Millisecond)
	within("shortened idle timeout", time.Now(), 0, 50*time.Millisecond+2*tick+slack, func() bool { return o.expired.Load() == 3 })
}

// A manager whose handles are re-armed busily keeps its tick.
func TestSweeperBusyKeepsTick(t *testing.T) {
	m := makeManager(testTick, time.Hour)
	hs := make([]*Handle, busyChanges+1)
	for i := range hs {
		hs[i] = m.Register(&owner{})
	}
	for i, h := range hs {
		h.SetDeadline(time.Duration(i+1) * time.Hour)
	}
	if _, changes := m.sweep(m.Now()); changes <= busyChanges {
		t.Fatalf("%d changes counted for %d handles re-armed", changes, len(hs))
	}
	if _, changes := m.sweep(m.Now()); changes != 0 {
		t.Fatalf("%d changes counted with none", changes)
	}
	next, _ := m.sweep(m.Now())
	if want := m.Now() + int64(time.Hour); next < want-int64(time.Second) || next > want+int64(time.Second) {
		t.Fatalf("next due %d, want about %d", next, want)
	}
}
