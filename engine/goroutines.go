package engine

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/sock"
)

// Connection goroutines are reused. A goroutine serving a request grows
// its stack (parsing, the handler, a file send); the runtime grows a
// stack by copying it, walking every frame, several times from the
// initial 2 KiB. A fresh goroutine per connection pays that on every
// connection, which for short connections ("Connection: close", one
// request each) was 7% of the server's CPU. So a goroutine that has
// finished a connection waits, as a runner, for the next one the accept
// loop hands over.
//
// Idle runners form a stack: the most recently idle is handed the next
// connection (its stack is warm in the cache), and those at the bottom,
// unused for runnerIdleTime, are stopped by the reaper. At most
// maxIdleRunners wait, so a burst of connections leaves no crowd of
// goroutines with grown stacks behind. Keep-alive connections do not hold
// a runner while they are idle: on a connection with a raw descriptor
// their wait moves off it after the first exchange (see
// conn.waitForRequest), to the park set or to a fresh goroutine with a
// minimal stack, and the runner returns to the stack. A parked
// connection whose bytes arrive is handed to a runner like a new one.
const (
	maxIdleRunners = 256
	runnerIdleTime = 2 * time.Second
)

// A runner is a connection goroutine kept for reuse (not a worker
// process): while idle it waits for a connection on its channel; nil tells
// it to exit.
type runner struct {
	next chan *conn // capacity 1: handing over never blocks
	idle int64      // when it became idle, on the timeout manager's clock
}

// runnersStarted counts runner goroutines started, for tests.
var runnersStarted atomic.Int64

// startConn serves c on the most recently idle runner, or on a new
// goroutine that becomes a runner when c ends.
func (s *Server) startConn(c *conn) {
	if s.handToIdle(c) {
		return
	}
	s.startRunner(c)
}

// startNew serves c, just accepted. If no runner is idle and as many
// runners run as the idle stack keeps, as when connections come faster
// than runners come back (a burst of new connections), the accept loop
// tries c's first read itself: if the request is not in yet c parks
// there and then (see conn.parkFirst), with no runner and no new
// goroutine, whose state would stay after the burst; otherwise c goes to
// a new runner, as startConn would, with what the read found. Below that
// a new connection takes a new runner, as it did: it may well find its
// request in by the time the runner reads, where parking it would cost a
// wake.
func (s *Server) startNew(c *conn) {
	if s.handToIdle(c) || s.runners.Load() >= s.parkNewAt && c.parkFirst() {
		return
	}
	s.startRunner(c)
}

// startRunner serves c on a new runner.
func (s *Server) startRunner(c *conn) {
	runnersStarted.Add(1)
	s.runners.Add(1)
	go s.runConns(c)
}

// handToIdle hands c to the most recently idle runner, if there is one,
// and reports whether it did.
func (s *Server) handToIdle(c *conn) bool {
	s.runnerMu.Lock()
	n := len(s.idleRunners)
	if n == 0 {
		s.runnerMu.Unlock()
		return false
	}
	w := s.idleRunners[n-1]
	s.idleRunners[n-1] = nil
	s.idleRunners = s.idleRunners[:n-1]
	s.runnerMu.Unlock()
	w.next <- c
	return true
}

// runConns serves c, then the connections startConn hands over, until the
// reaper or a full stack of idle runners ends it, or the server stops.
func (s *Server) runConns(c *conn) {
	defer s.runners.Add(-1)
	w := &runner{next: make(chan *conn, 1)}
	for c != nil {
		s.serveBegins()
		c.serve()
		s.serveEnds()
		w.idle = s.tm.Now()
		s.runnerMu.Lock()
		if s.shuttingDown() || len(s.idleRunners) >= maxIdleRunners {
			s.runnerMu.Unlock()
			return
		}
		s.idleRunners = append(s.idleRunners, w)
		s.runnerMu.Unlock()
		c = <-w.next
	}
}

// reapRunners stops the runners idle for longer than runnerIdleTime, every
// runnerIdleTime, and all of them once the server stops. It also sweeps
// the expired answers of sock.Resident and tunes the listeners' deferred
// accepting (see deferaccept.go).
func (s *Server) reapRunners() {
	t := time.NewTicker(runnerIdleTime)
	defer t.Stop()
	for {
		stop := false
		select {
		case <-t.C:
		case <-s.quit:
			stop = true
		}
		sock.SweepResidency(s.tm.Now())
		if !stop {
			s.tuneDeferAccept()
		}
		old := s.tm.Now() - int64(runnerIdleTime)
		s.runnerMu.Lock()
		n := 0
		for n < len(s.idleRunners) && (stop || s.idleRunners[n].idle < old) {
			s.idleRunners[n].next <- nil
			n++
		}
		s.idleRunners = append(s.idleRunners[:0], s.idleRunners[n:]...)
		clear(s.idleRunners[len(s.idleRunners) : len(s.idleRunners)+n])
		s.runnerMu.Unlock()
		s.taskRunners.reap(old, stop)
		if stop {
			return
		}
	}
}

// stopIdleRunners stops every idle runner.
func (s *Server) stopIdleRunners() {
	s.runnerMu.Lock()
	for i, w := range s.idleRunners {
		w.next <- nil
		s.idleRunners[i] = nil
	}
	s.idleRunners = s.idleRunners[:0]
	s.runnerMu.Unlock()
}

// idleRunnerCount returns the number of idle runners.
func (s *Server) idleRunnerCount() int {
	s.runnerMu.Lock()
	defer s.runnerMu.Unlock()
	return len(s.idleRunners)
}

// Memory after a burst. Runners serve woken connections as they come, a
// goroutine each while its handler runs: a burst of requests whose
// handlers block (a proxy waiting for its upstream, a database) takes
// as many goroutines as requests in flight, and what they allocate. When
// the burst is over the runners beyond maxIdleRunners exit, but their
// stacks go back to the heap, not to the OS, and the garbage their
// requests left is not even collected: the collector's goal grew with the
// burst's heap, so the next cycle may be minutes away on a quiet server,
// and the runtime's scavenger returns only what lies beyond that goal.
// The process would keep the burst's peak resident size.
//
// So the server counts the connections its runners are serving
// (serving). When that reaches burstGoroutines, as many as the idle stack
// keeps (runners beyond them exit, leaving their stacks in the heap), a
// burst is on; when it falls back to a quarter of that the burst is over,
// and if no other begins within burstQuiet the server returns its memory
// to the OS, on a goroutine of its own: it stops the idle runners, whose
// stacks the burst grew, then two collections (pooled buffers outlive the
// first) and every free page released (debug.FreeOSMemory), at most once
// per burstReleaseGap (a burst that ends sooner waits for the gap). That
// costs the collections (40-70 ms of CPU after 10,000 proxied requests
// with 10,000 connections parked), new runners for the next connections,
// and the page faults of the heap growing again in the next burst; a
// server that never has burstGoroutines connections on runners at once
// pays only two atomic adds per hand-over to a runner.
//
// Runners are bounded where a bound costs nothing: the park set's
// reader hands woken connections on 32 at a time and yields (see
// parkSet.run), so a burst of first requests on parked connections whose
// handlers do not block takes no new runner, and the accept loop parks
// new connections once maxIdleRunners run (see startNew). A hard bound
// on the runners serving requests would not lower what a burst of
// blocking handlers holds, a goroutine per handler in flight, without
// stalling the connections queued behind them (docs/benchmarks.md, "A
// burst of first requests").
const (
	burstGoroutines = maxIdleRunners         // connections served at once that make a burst
	burstQuiet      = 500 * time.Millisecond // how long a burst must be over before its memory goes
	burstReleaseGap = time.Second            // the least time between two releases
)

// serveBegins counts a connection a runner starts serving.
func (s *Server) serveBegins() {
	if n := s.serving.Add(1); n >= s.burst.at && !s.burst.on.Load() {
		s.burst.on.Store(true)
	}
}

// serveEnds counts a connection a runner is done with, and returns the
// memory of a burst that ended.
func (s *Server) serveEnds() {
	if n := s.serving.Add(-1); n <= s.burst.at/4 && s.burst.on.Load() {
		s.burst.ended.Store(monoNow())
		if s.burst.on.CompareAndSwap(true, false) {
			go s.releaseBurst()
		}
	}
}

// burstState is what a Server knows of bursts (see above).
type burstState struct {
	at        int64        // burstGoroutines (tests change it)
	quiet     int64        // burstQuiet, in nanoseconds (tests change it)
	gap       int64        // burstReleaseGap, in nanoseconds (tests change it)
	on        atomic.Bool  // a burst is on
	ended     atomic.Int64 // when the last burst ended (monoNow)
	releasing atomic.Bool  // a release is waiting for its gap, or running
	last      int64        // when the last release was done (monoNow), 0 if none; only releaseBurst touches it
	releases  atomic.Int64
}

// releaseBurst returns the free heap to the OS once a burst is over (see
// above): when no burst has been on for the quiet time and the last
// release is the gap old. It does nothing if another call is waiting
// already, which will see this burst end too, and gives up if the server
// stops.
func (s *Server) releaseBurst() {
	b := &s.burst
	if !b.releasing.CompareAndSwap(false, true) {
		return
	}
	defer b.releasing.Store(false)
	for {
		// on before ended: a burst that ended stored ended first.
		on, now := b.on.Load(), monoNow()
		wait := b.ended.Load() + b.quiet - now
		if b.last != 0 {
			wait = max(wait, b.last+b.gap-now)
		}
		if on {
			wait = max(wait, b.quiet) // a burst is on: look again once it may be over
		} else if wait <= 0 {
			break
		}
		t := time.NewTimer(time.Duration(max(wait, int64(time.Millisecond))))
		select {
		case <-t.C:
		case <-s.quit:
			t.Stop()
			return
		}
	}
	// The idle runners' stacks grew with the burst's requests: stop them
	// (the next connections start new ones), and let them exit before
	// the collections free their stacks.
	s.stopIdleRunners()
	for deadline := monoNow() + int64(50*time.Millisecond); s.runners.Load() > s.serving.Load() && monoNow() < deadline; {
		time.Sleep(time.Millisecond)
	}
	// Pooled buffers (sessions, sync.Pool) outlive one collection: the
	// first makes them the pools' victims, the second (FreeOSMemory's)
	// frees them.
	runtime.GC()
	debug.FreeOSMemory()
	b.last = monoNow()
	b.releases.Add(1)
}
