package engine

import "time"

// Parking: an idle keep-alive connection waits with no goroutine at all.
//
// A goroutine blocked in a read keeps its stack (2 KiB at least) and its
// runtime state, and its socket the runtime poller's state: most of an
// idle connection's cost when its buffers are pooled (4.2 KB in all at
// 10,000 connections). So where the platform allows (Linux, a connection
// with a non-blocking descriptor), a connection whose wait moves off its
// goroutine (after its first exchange, and after the idle notice; see
// waitForRequest and IdleNotice) is parked instead: its socket joins the
// engine's park set, an epoll set of its own, for its next bytes or its
// peer's FIN or RST, and the goroutine returns to the runners. When the
// socket becomes readable a runner takes the connection over and its
// wait goes on where it stopped (run with resume set); when the timeout
// manager, the connection limit or Shutdown gives up on it, Expire closes
// it there and then. Handlers are unaffected: every request still runs on
// a goroutine, as before.
//
// A connection woken soon after it parked (within sparseAfter) is busy:
// it then waits for its next request in the runtime's poller, where the
// keep-alive loop is cheapest (see rawServe), until the idle notice parks
// it again, unless it is one of a crowd: then it parks again after every
// answer, so that the crowd is answered in the order it spoke (see
// crowd.go). One woken later is sparse: it parks again as soon as it has
// answered, so a client that speaks now and then costs a goroutine only
// while it is answered, and no system call to park or wake: its socket
// stays in the park set, edge-triggered (see park_linux.go). At 10,000 busy connections every connection waits longer than
// that for its turn, so they are all sparse: a connection moves between
// the runtime's poller and the park set (a dozen system calls and a
// goroutine each way) only when how its client talks changes.
//
// sparseAfter is measured from the park to the wake, which is when the
// park set's reader hands the connection on: at a server that answers
// slower than requests come, a request waits for its turn in the park
// set, and its connection counts as sparse, whatever its client's pace.
//
// A parked connection holds its conn, its socket (a sock.Conn, out of the
// runtime's poller; see sock.Conn.Unpoll), its timeout handle, the closure
// of its wait and a slot in the park set: about 500 bytes of heap
// (TestParkedStateIsSmall). conn.wait says who owns it: waitParked while
// it is in the set, and whoever moves it out of that state (the park
// set's reader, or Expire) owns it next. docs/benchmarks.md has the
// figures and the alternatives measured.
//
// A TLS connection parks too, by the socket beneath crypto/tls, when
// crypto/tls holds no request bytes that the socket's readiness would
// not report; it keeps crypto/tls's state while parked (about 7 KB, most
// of it buffers and ciphers crypto/tls keeps for the connection's life),
// and a runner that takes it over reads through crypto/tls. tlsidle.go
// says how it looks at what crypto/tls holds and when it parks.

// sparseAfter is how long a connection must have been parked for its wake
// to find it sparse. Parking after every request costs a hand-over to a
// runner per request, a few hundred nanoseconds; waiting in the
// runtime's poller costs nothing per request but holds a goroutine, its
// grown stack included, until the idle notice. A client that speaks again
// within a few milliseconds is served from the poller; one slower than
// this pays the hand-over.
const sparseAfter = 20 * time.Millisecond

// Bits of conn.parkFlags (see park_linux.go).
const (
	parkPending  = 1 << iota // bytes came while the connection was in the park set and not parked
	parkPeerDone             // the park set reported the peer's FIN or RST
)

// monoStart is the origin of monoNow.
var monoStart = time.Now()

// monoNow returns the monotonic clock in nanoseconds since monoStart.
func monoNow() int64 { return int64(time.Since(monoStart)) }

// moveWait moves c's idle wait off the calling goroutine, which must then
// exit without touching c again: c is parked or, where it cannot be, its
// wait goes on on a fresh goroutine with a minimal stack. c must hold no
// session and its timeout handle must be idle.
func (c *conn) moveWait() {
	idleMoves.Add(1)
	if c.park() {
		return
	}
	// Where it cannot park, a wait that would park again after every
	// answer would take a fresh goroutine for each instead.
	c.sparse, c.parkFailed = false, true
	go c.run(true)
}
