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
//		if !a.Start() { /* h left the set: give c back */ continue }
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
	set      *hostSet[C] // the Group's hosts as the request saw them last
	safe     bool
	retries  int
	failures int    // failures tried again so far
	tried    uint64 // hosts tried, or marked down when the request began
	full     uint64 // hosts found at max_conns since the last wait
	out      uint64 // slots of set not pickable: free or draining
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

// Begin starts a request's attempts on the hosts of g's set now (those
// draining left out), those marked down (Up) counting as tried already;
// but when every one is marked down, those only the passive checks
// marked are tried (see Failed). safe says the request may be sent again
// after the host answered (an idempotent method and no body): Rejected
// tries another host only then. retries bounds the failures tried again.
//
// The request keeps the set it began with, and takes the Group's newer
// one, if the set changed, only when it picks again (Next): a host that
// stays keeps its slot, so what the request tried stays tried.
func (g *Group[C]) Begin(safe bool, retries int) Attempts[C] {
	s := g.set.Load()
	a := Attempts[C]{g: g, set: s, out: ^s.pickable, safe: safe, retries: retries, now: Now()}
	for i := range s.n {
		if s.pickable&bit(i) != 0 && !s.slots[i].Up(a.now) {
			a.tried |= bit(i)
		}
	}
	if a.tried|a.out == ^uint64(0) {
		// Every host is out. Those only the passive checks took out are
		// tried all the same: the last healthy host of a Group is never
		// taken out by failed requests (nginx ignores max_fails for a
		// group of one), and a host another Group marked down (health is
		// shared by name) may be this one's last.
		for i := range s.n {
			if s.pickable&bit(i) != 0 && !s.slots[i].health.activelyOff.Load() {
				a.tried &^= bit(i)
			}
		}
	}
	return a
}

// follow takes the Group's set s in place of the request's older one: a
// slot whose host changed is untried (and tried at once if its new host
// is marked down), and the slots not pickable are s's.
func (a *Attempts[C]) follow(s *hostSet[C]) {
	for i := range max(s.n, a.set.n) {
		if s.slots[i] != a.set.slots[i] {
			a.tried &^= bit(i)
			a.full &^= bit(i)
			if s.slots[i] != nil && !s.slots[i].Up(a.now) {
				a.tried |= bit(i)
			}
		}
	}
	a.set, a.out = s, ^s.pickable
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
		if s := a.g.set.Load(); s != a.set {
			a.follow(s)
		}
		if a.full == 0 {
			a.gen = q.Generation()
		}
		if i := pick(a.g.bal, a.set, a.tried|a.full|a.out, r, client); i >= 0 {
			a.host = a.set.slots[i]
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
	a.full |= bit(a.host.index)
	a.asked, a.busy = true, true
}

// Start records that the request goes to Host, on the connection the
// transport got: Host is tried, and the request counted in flight to it
// (Host.Begin) until Done or Failed. It reports false when Host left
// its Group's set, or began draining, meanwhile (see Group.Replace): the
// request is then not counted, and the transport gives back what it got
// (Host.Keep, which closes a connection of a host gone; Host.Release for
// a place) and asks Next for another host. A host that left the set or
// drains takes no request whose Start came after the change returned.
func (a *Attempts[C]) Start() bool {
	a.tried |= bit(a.host.index)
	a.host.Begin()
	if a.host.stopped.Load() {
		a.host.End()
		return false
	}
	a.asked, a.busy = true, false
	a.host.requests.Add(1)
	return true
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
	if !a.safe || committed || a.failures >= a.retries || a.tried|a.full|a.out == ^uint64(0) {
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
	a.host.fails.Add(1)
	now := time.Now()
	at := InstantOf(now)
	s := a.set
	for i := range s.n {
		if h := s.slots[i]; h != nil && h != a.host && s.pickable&bit(i) != 0 && h.Up(at) {
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
