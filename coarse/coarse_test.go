package coarse

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A call comes no sooner than its duration, once.
func TestCallAfterDuration(t *testing.T) {
	for _, d := range []time.Duration{0, time.Millisecond, Tick / 2, Tick, 3*Tick/2 + 1} {
		var tm Timer
		var calls atomic.Int32
		done := make(chan time.Duration, 2)
		start := time.Now()
		tm.Start(d, func() {
			calls.Add(1)
			done <- time.Since(start)
		})
		if got := <-done; got < d {
			t.Errorf("a timer of %v called after %v", d, got)
		}
		if tm.Stop() {
			t.Errorf("Stop after the call reported it stopped one")
		}
		// Another timer a tick later has run: no second call came.
		waitTicks(t, 1)
		if n := calls.Load(); n != 1 {
			t.Errorf("a timer of %v called %d times", d, n)
		}
	}
}

// waitTicks waits until a timer started now for n ticks has fired.
func waitTicks(t *testing.T, n int) {
	t.Helper()
	var tm Timer
	done := make(chan struct{})
	tm.Start(time.Duration(n)*Tick, func() { close(done) })
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("a timer never fired")
	}
}

// A timer stopped before it is due is never called, and may be started
// again.
func TestStop(t *testing.T) {
	var tm Timer
	called := make(chan string, 2)
	tm.Start(Tick, func() { called <- "first" })
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer reported none")
	}
	if tm.Stop() {
		t.Fatal("a second Stop reported a timer")
	}
	tm.Start(2*Tick, func() { called <- "second" })
	waitTicks(t, 3)
	select {
	case got := <-called:
		if got != "second" {
			t.Fatalf("the stopped call was made: %s", got)
		}
	default:
		t.Fatal("the restarted timer was not called")
	}
	select {
	case got := <-called:
		t.Fatalf("another call: %s", got)
	default:
	}
}

func TestStartArmedPanics(t *testing.T) {
	var tm Timer
	tm.Start(time.Hour, func() {})
	defer tm.Stop()
	defer func() {
		if recover() == nil {
			t.Error("Start of an armed Timer did not panic")
		}
	}()
	tm.Start(time.Hour, func() {})
}

// An earlier timer started after a later one is called on its own
// tick, not the later one's.
func TestEarlierAfterLater(t *testing.T) {
	var late, early Timer
	late.Start(time.Hour, func() {})
	defer late.Stop()
	done := make(chan struct{})
	start := time.Now()
	early.Start(Tick, func() { close(done) })
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("a timer of %v started after one of an hour was not called within a minute", Tick)
	}
	if time.Since(start) < Tick {
		t.Error("called early")
	}
}

// Many goroutines start and stop timers while the wheel fires: every
// timer not stopped is called once, none stopped is called.
func TestConcurrent(t *testing.T) {
	const n = 2000
	timers := make([]Timer, n)
	calls := make([]atomic.Int32, n)
	stopped := make([]bool, n)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 8 {
				timers[i].Start(time.Duration(i%5)*Tick/2, func() { calls[i].Add(1) })
				if i%3 == 0 {
					stopped[i] = timers[i].Stop()
				}
			}
		}()
	}
	wg.Wait()
	waitTicks(t, 4)
	for i := range n {
		want := int32(1)
		if stopped[i] {
			want = 0
		}
		if got := calls[i].Load(); got != want {
			t.Fatalf("timer %d (stopped %v) called %d times", i, stopped[i], got)
		}
	}
	wheel.mu.Lock()
	left := len(wheel.pending)
	wheel.mu.Unlock()
	if left != 0 {
		t.Errorf("%d timers still pending", left)
	}
}

// A timer started and stopped allocates nothing and changes no runtime
// timer once the wheel is armed.
func TestStartStopAllocatesNothing(t *testing.T) {
	var keep Timer
	keep.Start(time.Hour, func() {})
	defer keep.Stop()
	var tm Timer
	f := func() {}
	if n := testing.AllocsPerRun(100, func() {
		tm.Start(time.Second, f)
		tm.Stop()
	}); n != 0 {
		t.Errorf("%v allocations per Start and Stop", n)
	}
}

func BenchmarkStartStop(b *testing.B) {
	var keep Timer
	keep.Start(time.Hour, func() {})
	defer keep.Stop()
	f := func() {}
	b.RunParallel(func(pb *testing.PB) {
		var tm Timer
		for pb.Next() {
			tm.Start(500*time.Millisecond, f)
			tm.Stop()
		}
	})
}

// The runtime's timer, for comparison: a deadline set short and then
// moved past, as a request's was.
func BenchmarkRuntimeTimerResetStop(b *testing.B) {
	f := func() {}
	b.RunParallel(func(pb *testing.PB) {
		tm := time.AfterFunc(time.Hour, f)
		for pb.Next() {
			tm.Reset(500 * time.Millisecond)
			tm.Stop()
		}
	})
}
