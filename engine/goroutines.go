package engine

import (
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
	s.runnerMu.Lock()
	if n := len(s.idleRunners); n > 0 {
		w := s.idleRunners[n-1]
		s.idleRunners[n-1] = nil
		s.idleRunners = s.idleRunners[:n-1]
		s.runnerMu.Unlock()
		w.next <- c
		return
	}
	s.runnerMu.Unlock()
	runnersStarted.Add(1)
	go s.runConns(c)
}

// runConns serves c, then the connections startConn hands over, until the
// reaper or a full stack of idle runners ends it, or the server stops.
func (s *Server) runConns(c *conn) {
	w := &runner{next: make(chan *conn, 1)}
	for c != nil {
		c.serve()
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
		if stop {
			return
		}
	}
}

// idleRunnerCount returns the number of idle runners.
func (s *Server) idleRunnerCount() int {
	s.runnerMu.Lock()
	defer s.runnerMu.Unlock()
	return len(s.idleRunners)
}
