package engine

import (
	"sync/atomic"
	"time"
)

// Connection goroutines are reused. A goroutine serving a request grows
// its stack (parsing, the handler, a file send); the runtime grows a
// stack by copying it, walking every frame, several times from the
// initial 2 KiB. A fresh goroutine per connection pays that on every
// connection, which for short connections ("Connection: close", one
// request each) cost several microseconds, about a tenth of the server's
// CPU per request. So a goroutine that has finished a connection waits,
// as a worker, for the next one the accept loop hands over.
//
// Idle workers are bounded in number (maxIdleWorkers) and in time
// (workerIdleTime): a burst of connections leaves no crowd of goroutines
// with grown stacks behind. Keep-alive connections do not hold a worker
// while they are idle: their wait moves to a fresh goroutine with a
// minimal stack after the first exchange (see conn.waitForRequest), and
// the worker returns to the pool.
const (
	maxIdleWorkers = 256
	workerIdleTime = 2 * time.Second
)

// workersStarted counts worker goroutines started, for tests.
var workersStarted atomic.Int64

// startConn serves c on an idle worker if one is waiting, else on a new
// goroutine that becomes a worker when c ends.
func (s *Server) startConn(c *conn) {
	select {
	case s.handoff <- c:
	default:
		workersStarted.Add(1)
		go s.work(c)
	}
}

// work serves c, then further connections handed over by startConn, until
// it has waited workerIdleTime for one, enough workers are idle, or the
// server stops.
func (s *Server) work(c *conn) {
	var t *time.Timer
	for {
		c.serve()
		if s.shuttingDown() {
			return
		}
		if s.idleWorkers.Add(1) > maxIdleWorkers {
			s.idleWorkers.Add(-1)
			return
		}
		if t == nil {
			t = time.NewTimer(workerIdleTime)
		} else {
			t.Reset(workerIdleTime)
		}
		select {
		case c = <-s.handoff:
			s.idleWorkers.Add(-1)
		case <-t.C:
			s.idleWorkers.Add(-1)
			return
		case <-s.quit:
			s.idleWorkers.Add(-1)
			t.Stop()
			return
		}
	}
}
