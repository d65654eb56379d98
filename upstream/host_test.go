package upstream

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// fakeConn is a transport's connection for the tests: the pool only
// closes it.
type fakeConn struct {
	id     int
	closed bool
}

func (c *fakeConn) Close() error { c.closed = true; return nil }

func newGroup(t *testing.T, names []string, cfg Config) *Group[*fakeConn] {
	t.Helper()
	bal, err := NewBalancer("", "")
	if err != nil {
		t.Fatal(err)
	}
	var g *Group[*fakeConn]
	g, err = NewGroup(names, bal, cfg, func(c *fakeConn) { g.Hosts()[0].Keep(c, Now()) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// The pool hands back the connection put last, holds at most
// MaxIdleConns, bounds the open ones by MaxConns, and closes those idle
// past the idle timeout as it comes across them.
func TestHostPool(t *testing.T) {
	g := newGroup(t, []string{"http://127.0.0.1:1"}, Config{MaxConns: 2, MaxIdleConns: 1, IdleTimeout: time.Minute})
	h := g.Hosts()[0]
	now := Now()
	a, _, err := h.Get(now, false)
	if a != nil || err != nil {
		t.Fatalf("Get on an empty pool = %v, %v; want a place to dial on", a, err)
	}
	a = &fakeConn{id: 1}
	if b, _, err := h.Get(now, false); b != nil || err != nil {
		t.Fatalf("second Get = %v, %v; want a place", b, err)
	}
	b := &fakeConn{id: 2}
	if _, _, err := h.Get(now, false); !errors.Is(err, ErrFull) {
		t.Fatalf("third Get = %v, want ErrFull", err)
	}
	h.Keep(a, now)
	h.Keep(b, now) // MaxIdleConns 1: closed
	if !b.closed || a.closed || h.Open() != 1 {
		t.Fatalf("after two Keeps: a closed %v, b closed %v, %d open; want b closed, 1 open", a.closed, b.closed, h.Open())
	}
	if c, idle, err := h.Get(now.Add(time.Second), false); c != a || idle != time.Second || err != nil {
		t.Fatalf("Get = %v, %v, %v; want the idle connection, idle 1s", c, idle, err)
	}
	h.Keep(a, now)
	if c, _, err := h.Get(now.Add(2*time.Minute), false); c != nil || err != nil || !a.closed {
		t.Fatalf("Get after the idle timeout = %v, %v (closed %v); want a place, the idle one closed", c, err, a.closed)
	}
	h.Release()
	if h.Open() != 0 {
		t.Fatalf("%d open after Release, want 0", h.Open())
	}
}

// A connection put back goes to the request waiting for its host before
// the pool; a place given back likewise.
func TestQueueHandOff(t *testing.T) {
	g := newGroup(t, []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, Config{MaxConns: 1, Queue: 1, QueueTimeout: time.Minute})
	h := g.Hosts()[1]
	if _, _, err := h.Get(Now(), false); err != nil {
		t.Fatal(err)
	}
	q := g.Queue()
	gen := q.Generation()
	got := make(chan Grant[*fakeConn])
	go func() {
		gr, err := q.Wait(1<<h.Index(), gen, time.Now().Add(time.Minute), nil)
		if err != nil {
			t.Error(err)
		}
		got <- gr
	}()
	for q.Len() == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := q.Wait(1, gen, time.Now().Add(time.Minute), nil); err != ErrQueueFull {
		t.Fatalf("Wait on a full queue = %v, want ErrQueueFull", err)
	}
	c := &fakeConn{}
	if !h.HandOff(c) {
		t.Fatal("HandOff found no request waiting")
	}
	if gr := <-got; gr.Host != h || gr.Conn != c || !gr.Place {
		t.Fatalf("granted %+v, want the connection", gr)
	}
	if h.HandOff(c) {
		t.Fatal("HandOff found a request waiting in an empty queue")
	}
}

// round_robin takes each host in turn, skipping those tried.
func TestPickRoundRobin(t *testing.T) {
	g := newGroup(t, []string{"http://a", "http://b", "http://c"}, Config{})
	var seq []int
	for range 4 {
		seq = append(seq, g.Pick(0b010, nil, nil).Index())
	}
	if seq[0] == 1 || seq[1] == 1 || seq[2] == 1 || seq[3] == 1 || seq[0] == seq[1] {
		t.Fatalf("picks %v skipping host 1, want 0 and 2 in turn", seq)
	}
	if h := g.Pick(0b111, nil, nil); h != nil {
		t.Fatalf("Pick with every host tried = %v, want nil", h.Name)
	}
}

// NewGroup refuses no hosts, more than 64 and a name that is not an
// http or https URL of a host or a unix: path.
func TestNewGroupRefuses(t *testing.T) {
	bal, _ := NewBalancer("", "")
	many := make([]string, 65)
	for i := range many {
		many[i] = "http://127.0.0.1:1"
	}
	for _, names := range [][]string{nil, many, {"ftp://a"}, {"https://a/path"}, {"unix:"}, {"http://a/path"}} {
		if _, err := NewGroup(names, bal, Config{}, func(*fakeConn) {}); err == nil {
			t.Errorf("NewGroup(%.40q) = nil error, want one", names)
		}
	}
}

// An https URL is a host spoken to over TLS, on port 443 unless named.
func TestNewGroupHTTPS(t *testing.T) {
	bal, _ := NewBalancer("", "")
	g, err := NewGroup([]string{"https://a", "https://b:8443", "http://c"}, bal, Config{}, func(*fakeConn) {})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		addr, authority string
		tls             bool
	}{{"a:443", "a", true}, {"b:8443", "b:8443", true}, {"c:80", "c", false}} {
		h := g.Hosts()[i]
		if h.Addr != want.addr || h.Authority != want.authority || h.TLS != want.tls {
			t.Errorf("%s: addr %q authority %q tls %v, want %+v", h.Name, h.Addr, h.Authority, h.TLS, want)
		}
	}
}

// goneAsked is a client that has gone, and counts the times it is asked.
type goneAsked struct{ asked atomic.Int32 }

func (g *goneAsked) Gone() <-chan struct{} {
	g.asked.Add(1)
	ch := make(chan struct{})
	close(ch)
	return ch
}

// stayingAsked is a client that stays, counting how often it was asked.
type stayingAsked struct{ asked atomic.Int32 }

func (g *stayingAsked) Gone() <-chan struct{} {
	g.asked.Add(1)
	return nil // never gone
}

// A request granted a connection quickly never watches its client; one
// that waits longer does, and leaves the queue when its client has gone.
func TestQueueWatchesClientLate(t *testing.T) {
	g := newGroup(t, []string{"http://127.0.0.1:1"}, Config{MaxConns: 1, Queue: 2, QueueTimeout: time.Minute})
	h := g.Hosts()[0]
	if _, _, err := h.Get(Now(), false); err != nil {
		t.Fatal(err)
	}
	q := g.Queue()
	quick := new(stayingAsked)
	got := make(chan error, 1)
	begun := time.Now()
	go func() {
		_, err := q.Wait(1, q.Generation(), time.Now().Add(time.Minute), quick)
		got <- err
	}()
	sluicetest.WaitFor(t, "the request to queue", func() bool { return q.Len() > 0 })
	if !h.HandOff(&fakeConn{}) {
		t.Fatal("HandOff found no request waiting")
	}
	took := time.Since(begun)
	if err := <-got; err != nil {
		t.Fatalf("a quick grant: %v", err)
	}
	// Whether the grant was quick is the machine's to say: on a loaded
	// one the hand-off may come after watchAfter, and the client is then
	// rightly asked.
	if took < watchAfter/2 && quick.asked.Load() != 0 {
		t.Fatalf("a grant after %v asked the client %d times; want 0 before %v", took, quick.asked.Load(), watchAfter)
	}

	slow := new(goneAsked)
	start := time.Now()
	_, err := q.Wait(1, q.Generation(), time.Now().Add(time.Minute), slow)
	if err != ErrClientGone || slow.asked.Load() != 1 {
		t.Fatalf("a long wait: err %v, client asked %d times; want ErrClientGone, 1", err, slow.asked.Load())
	}
	if waited := time.Since(start); waited < watchAfter {
		t.Fatalf("left the queue after %v, before the client was watched (%v)", waited, watchAfter)
	}
	if q.Len() != 0 {
		t.Fatalf("%d requests still queued, want 0", q.Len())
	}
}

// While waits are long (the last one to end outlasted watchAfter), a
// request watches its client from the start, and leaves at once when it
// has gone; a quick grant makes the next request watch late again.
func TestQueueWatchesAtOnceWhileWaitsAreLong(t *testing.T) {
	g := newGroup(t, []string{"http://127.0.0.1:1"}, Config{MaxConns: 1, Queue: 2, QueueTimeout: time.Minute})
	h := g.Hosts()[0]
	if _, _, err := h.Get(Now(), false); err != nil {
		t.Fatal(err)
	}
	q := g.Queue()
	// A long wait: the client is watched after watchAfter, and has gone.
	if _, err := q.Wait(1, q.Generation(), time.Now().Add(time.Minute), new(goneAsked)); err != ErrClientGone {
		t.Fatalf("a long wait: %v, want ErrClientGone", err)
	}
	// Waits are long now: the next request's client is asked at once.
	gone := new(goneAsked)
	start := time.Now()
	if _, err := q.Wait(1, q.Generation(), time.Now().Add(time.Minute), gone); err != ErrClientGone || gone.asked.Load() != 1 {
		t.Fatalf("a wait after a long one: %v, client asked %d times; want ErrClientGone, 1", err, gone.asked.Load())
	}
	if waited := time.Since(start); waited >= watchAfter {
		t.Errorf("a wait after a long one left after %v; want at once (before %v)", waited, watchAfter)
	}
	// A quick grant, its client asked at once since waits were long...
	grant := func(client *stayingAsked) time.Duration {
		got := make(chan error, 1)
		begun := time.Now()
		go func() {
			_, err := q.Wait(1, q.Generation(), time.Now().Add(time.Minute), client)
			got <- err
		}()
		sluicetest.WaitFor(t, "the request to queue", func() bool { return q.Len() > 0 })
		if !h.HandOff(&fakeConn{}) {
			t.Fatal("HandOff found no request waiting")
		}
		if err := <-got; err != nil {
			t.Fatalf("a quick grant: %v", err)
		}
		return time.Since(begun)
	}
	first := new(stayingAsked)
	if took := grant(first); took < watchAfter/2 && first.asked.Load() != 1 {
		t.Fatalf("a grant after a long wait: client asked %d times, want 1", first.asked.Load())
	}
	// ...makes waits short again: the next quick one is not asked.
	second := new(stayingAsked)
	if took := grant(second); took < watchAfter/2 && second.asked.Load() != 0 {
		t.Fatalf("a grant after a quick one (%v): client asked %d times, want 0", took, second.asked.Load())
	}
}
