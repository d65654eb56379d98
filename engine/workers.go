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
// request each) was 7% of the server's CPU. So a goroutine that has
// finished a connection waits, as a worker, for the next one the accept
// loop hands over.
//
// Idle workers form a stack: the most recently idle is handed the next
// connection (its stack is warm in the cache), and those at the bottom,
// unused for workerIdleTime, are stopped by the reaper. At most
// maxIdleWorkers wait, so a burst of connections leaves no crowd of
// goroutines with grown stacks behind. Keep-alive connections do not hold
// a worker while they are idle: their wait moves to a fresh goroutine with
// a minimal stack after the first exchange (see conn.waitForRequest), and
// the worker returns to the stack.
const (
	maxIdleWorkers = 256
	workerIdleTime = 2 * time.Second
)

// A worker is an idle goroutine waiting for a connection on its channel;
// nil tells it to exit.
type worker struct {
	next chan *conn // capacity 1: handing over never blocks
	idle int64      // when it became idle, on the timeout manager's clock
}

// workersStarted counts worker goroutines started, for tests.
var workersStarted atomic.Int64

// startConn serves c on the most recently idle worker, or on a new
// goroutine that becomes a worker when c ends.
func (s *Server) startConn(c *conn) {
	s.workerMu.Lock()
	if n := len(s.idleWorkers); n > 0 {
		w := s.idleWorkers[n-1]
		s.idleWorkers[n-1] = nil
		s.idleWorkers = s.idleWorkers[:n-1]
		s.workerMu.Unlock()
		w.next <- c
		return
	}
	s.workerMu.Unlock()
	workersStarted.Add(1)
	go s.work(c)
}

// work serves c, then the connections startConn hands over, until the
// reaper or a full stack of idle workers ends it, or the server stops.
func (s *Server) work(c *conn) {
	w := &worker{next: make(chan *conn, 1)}
	for c != nil {
		c.serve()
		w.idle = s.tm.Now()
		s.workerMu.Lock()
		if s.shuttingDown() || len(s.idleWorkers) >= maxIdleWorkers {
			s.workerMu.Unlock()
			return
		}
		s.idleWorkers = append(s.idleWorkers, w)
		s.workerMu.Unlock()
		c = <-w.next
	}
}

// reapWorkers stops the workers idle for longer than workerIdleTime, every
// workerIdleTime, and all of them once the server stops. It also sweeps
// the expired answers of residentFiles.
func (s *Server) reapWorkers() {
	t := time.NewTicker(workerIdleTime)
	defer t.Stop()
	for {
		stop := false
		select {
		case <-t.C:
		case <-s.quit:
			stop = true
		}
		residentFiles.sweep(s.tm.Now())
		old := s.tm.Now() - int64(workerIdleTime)
		s.workerMu.Lock()
		n := 0
		for n < len(s.idleWorkers) && (stop || s.idleWorkers[n].idle < old) {
			s.idleWorkers[n].next <- nil
			n++
		}
		s.idleWorkers = append(s.idleWorkers[:0], s.idleWorkers[n:]...)
		clear(s.idleWorkers[len(s.idleWorkers) : len(s.idleWorkers)+n])
		s.workerMu.Unlock()
		if stop {
			return
		}
	}
}

// idleWorkerCount returns the number of idle workers.
func (s *Server) idleWorkerCount() int {
	s.workerMu.Lock()
	defer s.workerMu.Unlock()
	return len(s.idleWorkers)
}
