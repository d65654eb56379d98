package engine

import "github.com/sluice-server/sluice/sock"

// Deferred accepting. A listener that defers accepting a connection until
// its first bytes arrive (TCP_DEFER_ACCEPT on Linux) spares the server a
// wait per connection: a short connection is then accept4, recvfrom,
// sendto and close, with no trip through a poller, and its server does
// not wake twice for it (once to accept, once for the request). On a short
// connection that is a third of the server's CPU (Connection: close on
// 4 KiB at 100 connections: 24.7 CPU-µs per request deferred, 42.4 not).
//
// But the kernel then takes the handshake to end when the request
// arrives, and times the connection's first round trip to it: a client
// that waits before its first request (at 10,000 connections opened at
// once, some hundreds of milliseconds) starts with that wait as its
// round-trip estimate, an inflated retransmission timeout, and, with BBR,
// a pacing rate derived from it that only grows. Pacing then holds back
// the second segment of a response larger than one (80 KiB over loopback)
// behind a timer, a timer interrupt and a softirq per response: 29% of
// the server's profile at 10,000 connections on 80 KiB, and 47.4 CPU-µs
// per request against 33.3 without deferring (docs/benchmarks.md, "At
// 10,000 connections"). nginx with `listen ... deferred` pays the same.
//
// So the engine defers accepting only while its connections are short:
// the server looks at the requests read in each period of runnerIdleTime
// (the runner reaper's tick), and turns deferring on for its listeners
// when more than half of them asked to close their connection after them
// ("Connection: close", or HTTP/1.0 without keep-alive), off when fewer
// than a quarter did; with fewer than deferMinRequests requests, or
// between the two, it leaves the setting as it was. It starts off, as
// nginx's default. (The connections accepted per request would not do: a
// client that opens many keep-alive connections at once, 10,000 for wrk,
// has made one request on each when the reaper looks.)
const deferMinRequests = 64

// deferState is what Server.tuneDeferAccept knows; Server.mu guards it.
type deferState struct {
	on                bool   // listeners defer accepting
	requests, closing uint64 // the counters at the last look
}

// tuneDeferAccept turns deferred accepting on or off for s's listeners
// after a period of traffic (see above). The reaper calls it.
func (s *Server) tuneDeferAccept() {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := &s.deferAccept
	r, c := s.stats.requests.Load(), s.stats.closing.Load()
	dr, dc := r-d.requests, c-d.closing
	d.requests, d.closing = r, c
	var on bool
	switch {
	case dr < deferMinRequests:
		return
	case 2*dc > dr:
		on = true
	case 4*dc < dr:
		on = false
	default:
		return
	}
	if on == d.on {
		return
	}
	d.on = on
	for ln := range s.listeners {
		sock.SetDeferAccept(ln, on)
	}
}
