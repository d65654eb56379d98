package engine

// Parking: an idle keep-alive connection waits with no goroutine at all.
//
// A goroutine blocked in a read keeps its stack (2 KiB at least) and its
// runtime state, about 2.5 KB in all: most of an idle connection's cost
// when its buffers are pooled. So where the platform allows (Linux, a
// connection with a non-blocking descriptor), a connection whose wait
// moves off its goroutine (after its first exchange, and after the idle
// notice; see waitForRequest and IdleNotice) is parked instead: its
// socket joins the engine's park set, an epoll set of its own, for its
// next bytes or its peer's FIN or RST, and the goroutine returns to the
// runners. When the socket becomes readable a runner takes the connection
// over and its wait goes on where it stopped (run with resume set); when
// the timeout manager or Shutdown gives up on it, Expire closes it there
// and then. Handlers are unaffected: every request still runs on a
// goroutine of its own, as before.
//
// A parked connection holds its conn, its socket (a sockConn, out of the
// runtime's poller; see sockConn.unpoll), its timeout handle and a slot in
// the park set: about 600 bytes. conn.wait says who owns it: waitParked
// while it is in the set, and whoever moves it out of that state (the
// park set's reader, or Expire) owns it next.

// moveWait moves c's idle wait off the calling goroutine, which must then
// exit without touching c again: c is parked or, where it cannot be, its
// wait goes on on a fresh goroutine with a minimal stack. c must hold no
// session and its timeout handle must be idle.
func (c *conn) moveWait() {
	idleMoves.Add(1)
	if c.park() {
		return
	}
	go c.run(true)
}
