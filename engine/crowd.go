package engine

// Crowds: a busy connection that is one of many parks after every answer.
//
// A busy raw connection (one woken within sparseAfter of parking; see
// park.go) waits for its next request in the runtime's poller, the
// cheapest wait there is. But the poller hands the goroutines it finds
// ready to the scheduler in reverse order: netpoll collects them in a
// list it prepends to, and the scheduler runs the list from its head, so
// the connection whose request came last is answered first and the one
// whose request came first waits for all the others that came in the
// same poll. With a hundred connections that all keep a request in
// flight, as a load generator's do, that wait is the latency's tail, and
// it made Sluice's 99th percentile longer than nginx's, whose event loop
// answers in the order the kernel reported (docs/benchmarks.md, "The
// tail at 100 connections"). The park set's reader hands connections on
// in that order, 32 at a time (see parkSet.run), so a connection that
// waits in the park set is answered in turn.
//
// Parking after every answer costs a hand-over to a runner per request,
// a few percent of the CPU of a small response, so only a connection that is
// one of a crowd does it: one that many other connections' requests came
// between two of its own. The server counts the waits of its raw
// connections that ended with bytes (Server.wakes, one atomic add per
// wake, not per request: a wake that brings pipelined requests counts
// once), and each connection keeps the count at its own last wake
// (waitMark). A connection that sees crowdEnter or more wakes of others
// between two of its own is crowded, and parks when it has answered; it
// stays crowded until it sees fewer than crowdStay, so a connection at
// the edge does not move between the poller and the park set (a dozen
// system calls each way) on every request. A sparse connection parks
// anyway; a connection that could not park (see moveWait) does not try
// again for being crowded.
//
// The count is of wakes, not of connections: one that speaks rarely
// beside a few busy ones sees many wakes between its requests and is
// crowded too, which costs it a hand-over per request, and it parks, as
// it would anyway, when its wait reaches the idle notice.

const (
	crowdEnter = 32 // wakes of others between two of its own that make a connection crowded
	crowdStay  = 12 // the fewest that keep it crowded
)

// noteWake records that a wait of c ended with bytes, and whether c is
// one of a crowd. Called by c's goroutine.
func (c *conn) noteWake() {
	n := c.srv.wakes.Add(1)
	others := n - c.waitMark - 1
	c.waitMark = n
	if c.crowded {
		c.crowded = others >= crowdStay
	} else {
		c.crowded = others >= crowdEnter
	}
}

// reparks reports whether c parks again as soon as it has answered and
// its client has no more to say: it was woken after a long park
// (sparse), or it is one of a crowd and parks where it can.
func (c *conn) reparks() bool {
	return c.sparse || c.crowded && c.hasSlot && !c.parkFailed
}
