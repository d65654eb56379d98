package upstream

import (
	"errors"
	"testing"
	"time"
)

// passive marks a host down at its second failure within a minute.
var passive = PassiveHealth{Failures: 2, Window: time.Minute, DownFor: time.Minute}

// next is a fake transport's step: the next host for a and its
// connection (from the queue's grant, the pool, or a new one), with the
// attempt started; nil when the request has no host left. Hosts at
// max_conns are recorded as full on the way.
func next(a *Attempts[*fakeConn]) (*Host[*fakeConn], *fakeConn) {
	for a.Next(nil, nil, nil) {
		h := a.Host()
		c, granted := a.Granted()
		if !granted {
			var err error
			if c, _, err = h.Get(a.Now(), false); err == ErrFull {
				a.Full()
				continue
			}
		}
		if !a.Start() { // h left the set: what was got goes back
			if c != nil {
				h.Keep(c, Now())
			} else {
				h.Release()
			}
			continue
		}
		if c == nil {
			c = &fakeConn{id: h.Index()} // dialled on the place got
		}
		return h, c
	}
	return nil, nil
}

// A failure that may be tried again goes to another host; the request
// is counted in flight to each host only while it is tried there.
func TestAttemptsRetryElsewhere(t *testing.T) {
	g := newGroup(t, []string{"http://127.0.0.1:11", "http://127.0.0.1:12"}, Config{Passive: passive})
	a := g.Begin(true, 1)
	h1, _ := next(&a)
	if h1 == nil || h1.active.Load() != 1 {
		t.Fatalf("first attempt on %v, want a host with the request in flight", h1)
	}
	a.Failed(true, true)
	if h1.active.Load() != 0 || a.Down() {
		t.Fatalf("after Failed: %d in flight on the host, down %v; want 0, not down (one failure of two)", h1.active.Load(), a.Down())
	}
	h2, _ := next(&a)
	if h2 == nil || h2 == h1 {
		t.Fatalf("second attempt on %v after a failure on %v, want the other host", h2, h1)
	}
	a.Done()
	if err := a.Err(); err != nil || h2.active.Load() != 0 {
		t.Fatalf("Err = %v, %d in flight; want nil, 0", err, h2.active.Load())
	}
}

// A failure that may not be tried again (the request is not safe to
// send twice) ends the attempts, with hosts and retries left; so do
// spent retries, and every host tried.
func TestAttemptsNoRetry(t *testing.T) {
	names := []string{"http://127.0.0.1:21", "http://127.0.0.1:22", "http://127.0.0.1:23"}
	for _, tc := range []struct {
		name     string
		retries  int
		retry    bool
		attempts int
	}{
		{"unsafe", 5, false, 1},
		{"retries spent", 1, true, 2},
		{"every host tried", 5, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGroup(t, names, Config{})
			a := g.Begin(true, tc.retries)
			n := 0
			for h, _ := next(&a); h != nil; h, _ = next(&a) {
				n++
				a.Failed(false, tc.retry)
			}
			if n != tc.attempts || a.Err() != nil {
				t.Fatalf("%d attempts, Err %v; want %d, nil (the last failure stands)", n, a.Err(), tc.attempts)
			}
		})
	}
}

// A response the transport counts as a failure is tried elsewhere only
// for a safe request, nothing of it passed on, with retries and a host
// left; it counts for passive health either way.
func TestAttemptsRejected(t *testing.T) {
	names := []string{"http://127.0.0.1:31", "http://127.0.0.1:32"}
	for _, tc := range []struct {
		name      string
		safe      bool
		committed bool
		retries   int
		want      bool
	}{
		{"safe", true, false, 1, true},
		{"unsafe", false, false, 1, false},
		{"committed", true, true, 1, false},
		{"no retries", true, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGroup(t, names, Config{Passive: PassiveHealth{Failures: 1, Window: time.Minute, DownFor: time.Minute}})
			a := g.Begin(tc.safe, tc.retries)
			h, _ := next(&a)
			if got := a.Rejected(tc.committed); got != tc.want || !a.Down() || h.Up(Now()) {
				t.Fatalf("Rejected = %v, down %v; want %v, the host down", got, a.Down(), tc.want)
			}
			a.Done()
			if h, _ := next(&a); h == nil || !tc.want {
				return
			}
			if a.Rejected(false) {
				t.Fatal("Rejected with every host tried = true, want false")
			}
			a.Done()
		})
	}
}

// A request finding its host at max_conns waits in the queue, and gets
// the connection put back first.
func TestAttemptsQueue(t *testing.T) {
	g := newGroup(t, []string{"http://127.0.0.1:41"}, Config{MaxConns: 1, Queue: 1, QueueTimeout: time.Minute})
	h := g.Hosts()[0]
	held, _, err := h.Get(Now(), false)
	if held != nil || err != nil {
		t.Fatalf("Get = %v, %v; want a place", held, err)
	}
	held = &fakeConn{id: 99}
	type result struct {
		h *Host[*fakeConn]
		c *fakeConn
	}
	got := make(chan result)
	go func() {
		a := g.Begin(true, 0)
		h, c := next(&a)
		got <- result{h, c}
		a.Done()
	}()
	for g.Queue().Len() == 0 {
		time.Sleep(time.Millisecond)
	}
	if !h.HandOff(held) {
		t.Fatal("HandOff found no request waiting")
	}
	if r := <-got; r.h != h || r.c != held {
		t.Fatalf("the waiting request got %v on %v, want the connection put back", r.c, r.h)
	}
}

// A request that cannot wait for a host at max_conns ends busy: without a
// queue at once (ErrFull), with one after its timeout.
func TestAttemptsBusy(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"no queue", Config{MaxConns: 1}, ErrFull},
		{"queue timeout", Config{MaxConns: 1, Queue: 1, QueueTimeout: 10 * time.Millisecond}, ErrQueueTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGroup(t, []string{"http://127.0.0.1:51"}, tc.cfg)
			if _, _, err := g.Hosts()[0].Get(Now(), false); err != nil {
				t.Fatal(err)
			}
			a := g.Begin(true, 1)
			if h, _ := next(&a); h != nil || !errors.Is(a.Err(), tc.want) {
				t.Fatalf("next = %v, Err %v; want none, %v", h, a.Err(), tc.want)
			}
		})
	}
}

// Passive health: the failures counted within the window mark a host
// down, and the next request leaves it out; with every host down there
// is no upstream to try.
func TestAttemptsPassiveDown(t *testing.T) {
	g := newGroup(t, []string{"http://127.0.0.1:61", "http://127.0.0.1:62"}, Config{Passive: passive})
	bad := g.Hosts()[0]
	for i := range passive.Failures {
		a := g.Begin(true, 0)
		for h, _ := next(&a); h != nil; h, _ = next(&a) {
			if h != bad {
				a.Done()
				continue
			}
			a.Failed(true, false)
			if last := i == passive.Failures-1; a.Down() != last {
				t.Fatalf("failure %d: Down = %v, want %v", i+1, a.Down(), last)
			}
			break
		}
	}
	if bad.Up(Now()) {
		t.Fatal("the failing host is up after its failures")
	}
	for range 3 {
		a := g.Begin(true, 0)
		if h, _ := next(&a); h != g.Hosts()[1] {
			t.Fatalf("request went to %v, want the host up", h)
		}
		a.Done()
	}

	// The host left is the last one up: its failures do not mark it
	// down.
	for i := range 2 * passive.Failures {
		a := g.Begin(true, 0)
		h, _ := next(&a)
		if h != g.Hosts()[1] {
			t.Fatalf("request %d went to %v, want the last host up", i, h)
		}
		if a.Failed(true, false); a.Down() || !h.Up(Now()) {
			t.Fatalf("failure %d marked the last host up down", i+1)
		}
	}

	// Marked down all the same (as another Group naming it may do: health
	// is shared by name), it is still tried, as is the other: only the
	// active checks leave a Group without a host.
	g.Hosts()[1].Failed(time.Now(), &passive)
	g.Hosts()[1].Failed(time.Now(), &passive)
	a := g.Begin(true, 5)
	if h, _ := next(&a); h == nil {
		t.Fatalf("with every host marked down by passive checks: no host tried (Err %v), want one", a.Err())
	}
	a.Done()
	for _, h := range g.Hosts() {
		h.health.checked(false, &Health{Fall: 1})
	}
	a = g.Begin(true, 5)
	if h, _ := next(&a); h != nil || a.Err() != ErrNoUpstream {
		t.Fatalf("with every host down by active checks: next = %v, Err %v; want none, ErrNoUpstream", h, a.Err())
	}
}

// A Group of one host keeps it whatever its requests do, and so does
// another Group naming the same host when a larger Group marked it down.
func TestAttemptsLastHostStays(t *testing.T) {
	one := newGroup(t, []string{"http://127.0.0.1:71"}, Config{Passive: passive})
	two := newGroup(t, []string{"http://127.0.0.1:71", "http://127.0.0.1:72"}, Config{Passive: passive})
	for i := range 3 * passive.Failures {
		a := one.Begin(true, 0)
		h, _ := next(&a)
		if h == nil {
			t.Fatalf("request %d of a Group of one found no host (Err %v)", i, a.Err())
		}
		a.Failed(true, false)
		if a.Down() || !h.Up(Now()) {
			t.Fatalf("failure %d marked a Group's only host down", i+1)
		}
		a = one.Begin(true, 0)
		h, _ = next(&a)
		if h == nil {
			t.Fatalf("request %d of a Group of one found no host (Err %v)", i, a.Err())
		}
		if a.Rejected(false); a.Down() || !h.Up(Now()) {
			t.Fatalf("rejected answer %d marked a Group's only host down", i+1)
		}
		a.Done()
	}
	// The larger Group marks the shared host down; the Group of one
	// still sends to it.
	shared := two.Hosts()[0]
	for range passive.Failures {
		a := two.Begin(true, 0)
		for h, _ := next(&a); h != nil; h, _ = next(&a) {
			if h == shared {
				a.Failed(true, false)
				break
			}
			a.Done()
		}
	}
	if shared.Up(Now()) {
		t.Fatal("the Group of two did not mark its failing host down")
	}
	a := one.Begin(true, 0)
	if h, _ := next(&a); h != one.Hosts()[0] {
		t.Fatalf("the Group of one, its host marked down by another Group: next = %v (Err %v), want its host", h, a.Err())
	}
	a.Done()
}
