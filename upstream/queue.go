package upstream

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/coarse"
	"github.com/sluice-server/sluice/engine"
)

// The ends of a wait in the queue other than a connection.
var (
	ErrQueueFull    = errors.New("upstream: every upstream at max_conns and the queue full")
	ErrQueueTimeout = errors.New("upstream: every upstream at max_conns for queue_timeout")
	ErrClientGone   = errors.New("upstream: the client went while its request waited")
)

// Queue holds the requests that wait, every host they may use being at
// max_conns, for a connection to one of a Group's hosts: first come,
// first served. A connection put back or closed is handed to the first
// request waiting for its host, before the pool sees it, so that
// requests arriving meanwhile do not pass those waiting. Its methods may
// be called on a nil *Queue (no queue: they do nothing) and are safe for
// concurrent use.
type Queue[C Conn] struct {
	max     int
	timeout time.Duration
	put     func(C) // puts back a connection granted to a request that gave up

	waiting atomic.Int32  // len(list), read without mu
	gen     atomic.Uint64 // connections freed so far, for wait's last check
	long    atomic.Bool   // the last wait to end took watchAfter or more

	mu   sync.Mutex
	list []*waiter[C]
}

// waiter is one request waiting.
type waiter[C Conn] struct {
	want  uint64        // the hosts it waits for: a bit per index
	grant chan Grant[C] // buffered: it is sent one grant, at most

	// The wait's timer: a coarse one, so that a wait that ends before
	// it leaves the runtime nothing to wake for (see package coarse).
	timer coarse.Timer
	rang  chan struct{} // buffered: ring sends on it
}

// ring tells the waiter its timer fired.
func (w *waiter[C]) ring() {
	select {
	case w.rang <- struct{}{}:
	default:
	}
}

// Grant is what wakes a waiting request: a connection to Host (Conn), or
// a place among Host's open connections to dial one on (Conn the zero C,
// Place true), or neither, when a connection was put back to Host's pool
// or closed while the request was on its way to the queue, or the
// Group's set changed (Host nil): it tries again.
type Grant[C Conn] struct {
	Host  *Host[C]
	Conn  C
	Place bool
}

// newQueue returns a queue of at most max requests, each waiting at most
// timeout; put puts back a connection granted to a request that gave up
// meanwhile (the transport's way of putting one back, as after an
// exchange).
func newQueue[C Conn](max int, timeout time.Duration, put func(C)) *Queue[C] {
	return &Queue[C]{max: max, timeout: timeout, put: put}
}

// Timeout returns how long a request may wait in q.
func (q *Queue[C]) Timeout() time.Duration { return q.timeout }

// Len returns how many requests wait in q now; 0 for a nil q.
func (q *Queue[C]) Len() int {
	if q == nil {
		return 0
	}
	return int(q.waiting.Load())
}

// Generation returns the count of connections freed so far. A request
// reads it before it asks the upstreams for a connection, and passes it
// to wait: a connection freed in between is then not missed.
func (q *Queue[C]) Generation() uint64 {
	if q == nil {
		return 0
	}
	return q.gen.Load()
}

// handOff gives u's connection c (or, c the zero C, its place among u's
// open connections) to the first request waiting for u, and reports
// whether there was one. It is called before c goes back to the pool.
func (q *Queue[C]) handOff(u *Host[C], c C) bool {
	if q == nil || q.waiting.Load() == 0 {
		return false
	}
	q.mu.Lock()
	w := q.next(u)
	if w != nil {
		w.grant <- Grant[C]{Host: u, Conn: c, Place: true}
	}
	q.mu.Unlock()
	return w != nil
}

// freed records that u's pool has a connection, or a place for one,
// that no request was waiting for when handOff looked; a request that
// started waiting since is woken to try again.
func (q *Queue[C]) freed(u *Host[C]) {
	if q == nil {
		return
	}
	q.gen.Add(1)
	if q.waiting.Load() == 0 {
		return
	}
	q.mu.Lock()
	if w := q.next(u); w != nil {
		w.grant <- Grant[C]{Host: u}
	}
	q.mu.Unlock()
}

// wakeAll wakes every request waiting, with a grant of nothing: the
// Group's set changed, and each looks again (a host it waited for may
// have gone, or a new one come).
func (q *Queue[C]) wakeAll() {
	if q == nil {
		return
	}
	q.gen.Add(1)
	q.mu.Lock()
	for _, w := range q.list {
		w.grant <- Grant[C]{}
	}
	clear(q.list)
	q.list = q.list[:0]
	q.waiting.Store(0)
	q.mu.Unlock()
}

// next removes from the queue, and returns, the first request waiting
// for u; nil if none. q.mu is held.
func (q *Queue[C]) next(u *Host[C]) *waiter[C] {
	bit := uint64(1) << u.index
	for i, w := range q.list {
		if w.want&bit != 0 {
			q.list = slices.Delete(q.list, i, i+1)
			q.waiting.Add(-1)
			return w
		}
	}
	return nil
}

// remove takes w out of the queue, and reports whether it was still in
// it (not granted anything). q.mu is held.
func (q *Queue[C]) remove(w *waiter[C]) bool {
	i := slices.Index(q.list, w)
	if i < 0 {
		return false
	}
	q.list = slices.Delete(q.list, i, i+1)
	q.waiting.Add(-1)
	return true
}

// Wait queues a request for a connection to one of the hosts in want
// (bits by Host.Index), found busy after Generation returned gen, and
// waits until deadline, or until the client goes (gone's Gone channel
// closes; gone may be nil). It returns what it was granted, or
// ErrQueueFull at once when q's bound of requests wait already,
// ErrQueueTimeout, or ErrClientGone. A grant without a connection or a
// place (a connection freed as the request came to the queue) says: try
// again. A connection granted is the caller's to check (a peek) and use;
// a place, to dial on (Host.Dial).
//
// The client is watched only once the request has waited watchAfter: a
// queue that moves quickly (a pool at pm.max_children serving short
// scripts) then costs no watch of the client's socket per request. While
// waits are long (the last to end took watchAfter or more: PHP pages
// that take tens of milliseconds, more requests than workers) the client
// is watched from the start instead, since the request will most likely
// wait that long too: a timer would only wake the process to start the
// same watch a little later.
func (q *Queue[C]) Wait(want, gen uint64, deadline time.Time, gone engine.GoneNotifier) (Grant[C], error) {
	w := &waiter[C]{want: want, grant: make(chan Grant[C], 1)}
	q.mu.Lock()
	if len(q.list) >= q.max {
		q.mu.Unlock()
		return Grant[C]{}, ErrQueueFull
	}
	q.list = append(q.list, w)
	q.waiting.Add(1)
	if q.gen.Load() != gen {
		// A connection came free after the upstreams were asked, and
		// before this request could be found waiting.
		q.remove(w)
		q.mu.Unlock()
		return Grant[C]{}, nil
	}
	q.mu.Unlock()

	start := time.Now()
	wait := deadline.Sub(start)
	watching := gone == nil || wait <= watchAfter
	var goneCh <-chan struct{}
	if !watching && q.long.Load() {
		goneCh, watching = gone.Gone(), true
	}
	if !watching {
		wait = watchAfter
	}
	w.rang = make(chan struct{}, 1)
	ring := w.ring
	w.timer.Start(wait, ring)
	defer w.timer.Stop()
	var err error
	for err == nil {
		select {
		case g := <-w.grant:
			q.long.Store(time.Since(start) >= watchAfter)
			return g, nil
		case <-w.rang:
			if watching {
				err = ErrQueueTimeout
				break
			}
			q.long.Store(true)
			watching = true
			goneCh = gone.Gone()
			w.timer.Start(time.Until(deadline), ring)
		case <-goneCh:
			err = ErrClientGone
		}
	}
	q.mu.Lock()
	removed := q.remove(w)
	q.mu.Unlock()
	if !removed {
		// Granted as it gave up: what it got goes to the next in line.
		var none C
		g := <-w.grant
		switch {
		case g.Conn != none:
			q.put(g.Conn)
		case g.Place:
			g.Host.Release()
		case g.Host != nil:
			q.freed(g.Host)
		}
	}
	return Grant[C]{}, err
}

// watchAfter is how long a request waits in the queue before its client
// is watched for going away (within a coarse.Tick more).
const watchAfter = 50 * time.Millisecond
