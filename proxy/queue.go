package proxy

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Options.Queue and Options.QueueTimeout.
const (
	DefaultQueue        = 100
	DefaultQueueTimeout = 5 * time.Second
)

// The ends of a wait in the queue other than a connection.
var (
	errQueueFull    = errors.New("proxy: every upstream at max_conns and the queue full")
	errQueueTimeout = errors.New("proxy: every upstream at max_conns for queue_timeout")
	errClientGone   = errors.New("proxy: the client went while its request waited")
)

// waitQueue holds the requests that wait, every upstream they may use
// being at max_conns, for a connection to one of a Proxy's upstreams:
// first come, first served. A connection put back or closed is handed to
// the first request waiting for its upstream, before the pool sees it,
// so that requests arriving meanwhile do not pass those waiting. Its
// methods may be called on a nil *waitQueue (no queue: they do nothing)
// and are safe for concurrent use.
type waitQueue struct {
	max     int
	timeout time.Duration

	waiting atomic.Int32  // len(list), read without mu
	gen     atomic.Uint64 // connections freed so far, for wait's last check

	mu   sync.Mutex
	list []*waiter
}

// waiter is one request waiting.
type waiter struct {
	want  uint64     // the upstreams it waits for: a bit per index
	grant chan grant // buffered: it is sent one grant, at most
}

// grant is what wakes a waiting request: a connection to u (c), or a
// place among u's open connections to dial one on (c nil, place true),
// or neither, when a connection was put back to u's pool or closed
// while the request was on its way to the queue: it tries again.
type grant struct {
	u     *upstream
	c     *upConn
	place bool
}

func newWaitQueue(max int, timeout time.Duration) *waitQueue {
	return &waitQueue{max: max, timeout: timeout}
}

// generation returns the count of connections freed so far. A request
// reads it before it asks the upstreams for a connection, and passes it
// to wait: a connection freed in between is then not missed.
func (q *waitQueue) generation() uint64 {
	if q == nil {
		return 0
	}
	return q.gen.Load()
}

// handOff gives u's connection c (or, c nil, its place among u's open
// connections) to the first request waiting for u, and reports whether
// there was one. It is called before c goes back to the pool.
func (q *waitQueue) handOff(u *upstream, c *upConn) bool {
	if q == nil || q.waiting.Load() == 0 {
		return false
	}
	q.mu.Lock()
	w := q.next(u)
	if w != nil {
		w.grant <- grant{u: u, c: c, place: true}
	}
	q.mu.Unlock()
	return w != nil
}

// freed records that u's pool has a connection, or a place for one,
// that no request was waiting for when handOff looked; a request that
// started waiting since is woken to try again.
func (q *waitQueue) freed(u *upstream) {
	if q == nil {
		return
	}
	q.gen.Add(1)
	if q.waiting.Load() == 0 {
		return
	}
	q.mu.Lock()
	if w := q.next(u); w != nil {
		w.grant <- grant{u: u}
	}
	q.mu.Unlock()
}

// next removes from the queue, and returns, the first request waiting
// for u; nil if none. q.mu is held.
func (q *waitQueue) next(u *upstream) *waiter {
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
func (q *waitQueue) remove(w *waiter) bool {
	i := slices.Index(q.list, w)
	if i < 0 {
		return false
	}
	q.list = slices.Delete(q.list, i, i+1)
	q.waiting.Add(-1)
	return true
}

// wait queues a request for a connection to one of the upstreams in
// want (bits by index), read busy after generation returned gen, and
// waits until deadline, or until gone is closed (the client went). It
// returns what it was granted, or errQueueFull at once when q.max
// requests wait already, errQueueTimeout, or errClientGone. A grant
// without a connection or a place (a connection freed as the request
// came to the queue) says: try again.
func (q *waitQueue) wait(want, gen uint64, deadline time.Time, gone <-chan struct{}) (grant, error) {
	w := &waiter{want: want, grant: make(chan grant, 1)}
	q.mu.Lock()
	if len(q.list) >= q.max {
		q.mu.Unlock()
		return grant{}, errQueueFull
	}
	q.list = append(q.list, w)
	q.waiting.Add(1)
	if q.gen.Load() != gen {
		// A connection came free after the upstreams were asked, and
		// before this request could be found waiting.
		q.remove(w)
		q.mu.Unlock()
		return grant{}, nil
	}
	q.mu.Unlock()

	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var err error
	select {
	case g := <-w.grant:
		return g, nil
	case <-timer.C:
		err = errQueueTimeout
	case <-gone:
		err = errClientGone
	}
	q.mu.Lock()
	removed := q.remove(w)
	q.mu.Unlock()
	if !removed {
		// Granted as it gave up: what it got goes to the next in line.
		g := <-w.grant
		switch {
		case g.c != nil:
			g.u.put(g.c)
		case g.place:
			g.u.release()
		default:
			q.freed(g.u)
		}
	}
	return grant{}, err
}
