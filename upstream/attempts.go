package upstream

import (
	"errors"
	"time"

	"github.com/sluice-server/sluice/engine"
)

// ErrNoUpstream reports that a request found no host to try: every one
// of its Group's is marked down.
var ErrNoUpstream = errors.New("upstream: no upstream available")

// Attempts is one request's way through its Group's hosts: which host to
// try next, skipping those tried, found at max_conns or marked down;
// waiting in the queue when every host left is at max_conns; counting
// the request in flight and its failures for passive health; and whether
// a failure is tried again. A transport drives it, and keeps what is its
// own: getting a connection to the host (a pooled one it checks, or one
// it dials), the exchange, which outcome is a failure and whether it is
// safe to send again, and telling the client.
//
//	a := g.Begin(safe, retries)
//	for a.Next(r, client, gone) {
//		h := a.Host()
//		// c: a.Granted's connection, or the transport's from h.Get;
//		// at max_conns (ErrFull): a.Full(); continue
//		a.Start()
//		// the exchange; on failure: a.Failed(fault, retry); continue
//		// on a response the transport counts as a failure: a.Rejected
//		a.Done()
//		return
//	}
//	// a.Err(), or the last failure, says what to tell the client
//
// Begin returns it as a value, which lives on the caller's stack: it
// allocates nothing unless the request waits in the queue. It is for one
// goroutine; its zero value is not usable.
type Attempts[C Conn] struct {
	g        *Group[C]
	safe     bool
	retries  int
	failures int    // failures tried again so far
	tried    uint64 // hosts tried, or marked down when the request began
	full     uint64 // hosts found at max_conns since the last wait
	all      uint64 // every host's bit
	gen      uint64 // the queue's generation as this round of asking began
	deadline time.Time
	now      Instant

	host    *Host[C]
	grant   C
	granted bool

	asked bool  // a host was started or found full
	busy  bool  // the last host asked was at max_conns
	down  bool  // the last failure marked host down
	stop  bool  // no more tries
	err   error // the queue's, when its wait failed
}

// Begin starts a request's attempts on g's hosts, those marked down (Up)
// counting as tried already; but when every one is marked down, those
// only the passive checks marked are tried (see Failed). safe says the
// request may be sent again after the host answered (an idempotent method
// and no body): Rejected tries another host only then. retries bounds the
// failures tried again.
func (g *Group[C]) Begin(safe bool, retries int) Attempts[C] {
	a := Attempts[C]{g: g, safe: safe, retries: retries, now: Now()}
	for i, h := range g.Hosts {
		if !h.Up(a.now) {
			a.tried |= 1 << i
		}
	}
	a.all = uint64(1)<<len(g.Hosts) - 1 // (wraps to every bit for 64)
	if a.tried == a.all {
		// Every host is out. Those only the passive checks took out are
		// tried all the same: the last healthy host of a Group is never
		// taken out by failed requests (nginx ignores max_fails for a
		// group of one), and a host another Group marked down (health is
		// shared by name) may be this one's last.
		for i, h := range g.Hosts {
			if !h.health.activelyOff.Load() {
				a.tried &^= 1 << i
			}
		}
	}
	return a
}

// Next picks the next host to try for r (Host), and reports whether there
// is one; r and client (the client's address, for ip_hash) are what the
// Balancer picks by (Group.Pick), the same at every call. (They are not
// kept in a: the client's address is often on the caller's stack, and
// stays there.) When every host left is at max_conns (Full), it waits in
// the Group's queue, if it has one, for a connection or a place to come
// free, or until the queue's timeout, or gone's Gone channel closes (the
// client went; gone may be nil): what the queue grants is then Granted.
// It reports false when every host was tried, after a failure not to be
// tried again (Failed), or when the queue had no connection for the
// request (Err says why).
func (a *Attempts[C]) Next(r *engine.Request, client []byte, gone engine.GoneNotifier) bool {
	var none C
	a.host, a.grant, a.granted = nil, none, false
	q := a.g.queue
	for !a.stop {
		if a.full == 0 {
			a.gen = q.Generation()
		}
		if i := a.g.Pick(a.tried|a.full, r, client); i >= 0 {
			a.host = a.g.Hosts[i]
			return true
		}
		if a.full == 0 || q == nil {
			return false
		}
		// Every host left is at max_conns: wait for one.
		if a.deadline.IsZero() {
			a.deadline = time.Now().Add(q.Timeout())
		}
		g, err := q.Wait(a.full, a.gen, a.deadline, gone)
		if err != nil {
			a.err, a.stop = err, true
			return false
		}
		a.full = 0
		a.now = Now() // waited: deadlines count from here
		if g.Conn == none && !g.Place {
			continue // a connection came free meanwhile: ask again
		}
		a.host, a.grant, a.granted = g.Host, g.Conn, true
		return true
	}
	return false
}

// Host returns the host Next picked.
func (a *Attempts[C]) Host() *Host[C] { return a.host }

// Now returns the instant the attempt's deadlines count from: when the
// request began, or when it last came out of the queue.
func (a *Attempts[C]) Now() Instant { return a.now }

// Granted returns what the queue granted the request for Host, and
// whether it did: a connection, put back a moment ago, for the transport
// to check as one from the pool; or the zero C, a place among Host's open
// connections to dial one on (Host.Dial). Without a grant the transport
// asks Host for a connection (Host.Get).
func (a *Attempts[C]) Granted() (c C, ok bool) { return a.grant, a.granted }

// Full records that Host is at max_conns (Host.Get said ErrFull): it is
// not tried, and the request waits for it (Next) when no other host is
// left.
func (a *Attempts[C]) Full() {
	a.full |= 1 << a.host.index
	a.asked, a.busy = true, true
}

// Start records that the request goes to Host, on the connection the
// transport got: Host is tried, and the request counted in flight to it
// (Host.Begin) until Done or Failed.
func (a *Attempts[C]) Start() {
	a.tried |= 1 << a.host.index
	a.asked, a.busy = true, false
	a.host.Begin()
}

// Done ends the request's attempt on Host, once the response has been
// passed on (or the connection handed over, as for a tunnel).
func (a *Attempts[C]) Done() { a.host.End() }

// Failed ends the attempt on Host with a failure: the upstream's fault
// (it counts for passive health: a refused or timed-out connection, a
// missing or malformed response) or not (what the client caused: it went
// away, or its request carried what made the response refused). A fault
// marks Host down at the passive checks' count unless it is the last host
// of the Group that is up: failed requests never leave a Group without a
// host, so that a client cannot take a Group of one out by making its
// requests fail. retry says whether the request may go to another host:
// nothing was sent, or the transport knows the request safe to send
// again. Next then picks one, as long as the Group's retries are not
// spent; otherwise it reports false.
func (a *Attempts[C]) Failed(fault, retry bool) {
	a.host.End()
	a.down = fault && a.fail()
	if !retry || a.failures >= a.retries {
		a.stop = true
		return
	}
	a.failures++
}

// Rejected records that Host answered with what the transport counts as
// a failure (the proxy's fail_status), which counts for passive health,
// and reports whether to try another host instead of passing the answer
// on: the request is safe, nothing of the answer was passed on
// (committed false), a host is left and the retries are not spent. Either
// way the transport ends the attempt with Done (after closing the
// connection, when trying again).
func (a *Attempts[C]) Rejected(committed bool) bool {
	a.down = a.fail()
	if !a.safe || committed || a.failures >= a.retries || (a.tried|a.full)&a.all == a.all {
		return false
	}
	a.failures++
	return true
}

// fail counts a failure of Host for the passive checks, and reports
// whether it marked Host down. The last host of the Group that is up is
// not marked down: failed requests never leave a Group without a host
// (a Group of one host keeps it, as nginx ignores max_fails for a group
// of one server). Only the active checks take the last one out.
func (a *Attempts[C]) fail() bool {
	now := time.Now()
	at := InstantOf(now)
	for _, h := range a.g.Hosts {
		if h != a.host && h.Up(at) {
			return a.host.Failed(now, &a.g.passive)
		}
	}
	return false
}

// Down reports whether the last Failed or Rejected marked Host down
// under the passive checks, for the transport to log.
func (a *Attempts[C]) Down() bool { return a.down }

// Err returns why the request ends without an answer when it was not a
// host's failure: ErrNoUpstream (no host to try: every one marked down),
// ErrFull (the last host asked was at max_conns, with no queue to wait
// in), or the queue's ErrQueueFull, ErrQueueTimeout or ErrClientGone.
// It returns nil when the last host tried failed (Failed, Rejected): the
// transport tells the client of that failure.
func (a *Attempts[C]) Err() error {
	switch {
	case a.err != nil:
		return a.err
	case a.busy:
		return ErrFull
	case !a.asked:
		return ErrNoUpstream
	}
	return nil
}
