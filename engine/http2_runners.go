package engine

import (
	"sync"
	"sync/atomic"
)

// HTTP/2's goroutines are reused, as connection goroutines are (see
// goroutines.go): a stream's handler grows its goroutine's stack (a proxy's
// HTTP/2 client and its header encoding, a template), and so does a write
// through TLS, and a fresh goroutine per stream or per write grows it
// again, copying it frame by frame, every time: 10% of the CPU of a gRPC
// call proxied to an HTTP/2 upstream was stack copying. A goroutine that
// has run a task (a stream's handler, a connection's write) waits, as a
// task runner, for the next task of any connection; the most recently idle
// is handed the next, and the reaper stops those idle for longer than
// runnerIdleTime.
//
// How many may wait follows the load: as many as ran at once at the peak of
// the reaper's last period, and at least maxIdleRunners. A fixed bound
// below the streams in flight (100 connections of 10 streams each keep
// about a thousand tasks going) made the runners beyond it exit each time
// the load dipped and new ones start, with small stacks, when it rose
// again: 4% of the CPU of h2load -c100 -m10 on a static file was stack
// growth. A peak that does not come again is let go a period later.

// taskRunner is a goroutine kept for reuse: while idle it waits for a
// task on its channel; nil tells it to exit.
type taskRunner struct {
	next chan func() // capacity 1: handing over never blocks
	idle int64       // when it became idle, on the timeout manager's clock
}

// taskRunnersStarted counts task runner goroutines started, for tests.
var taskRunnersStarted atomic.Int64

// taskRunners are a server's idle task runners.
type taskRunners struct {
	mu   sync.Mutex
	idle []*taskRunner // the most recently idle last
	busy int           // tasks running
	peak int           // the most tasks running at once since the last reap
	keep int           // how many may wait: the last period's peak
}

// runTask runs f on the most recently idle task runner, or on a new
// goroutine that becomes one when f returns. f must be bound once (a
// stream's or a connection's), so that a call allocates nothing.
func (s *Server) runTask(f func()) {
	p := &s.taskRunners
	p.mu.Lock()
	p.busy++
	p.peak = max(p.peak, p.busy)
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.next <- f
		return
	}
	p.mu.Unlock()
	taskRunnersStarted.Add(1)
	go s.runTasks(f)
}

// runTasks runs f, then the tasks runTask hands over, until the reaper or
// a full stack of idle runners ends it, or the server stops.
func (s *Server) runTasks(f func()) {
	p := &s.taskRunners
	w := &taskRunner{next: make(chan func(), 1)}
	for f != nil {
		f()
		w.idle = s.tm.Now()
		p.mu.Lock()
		p.busy--
		if s.shuttingDown() || len(p.idle) >= max(p.keep, maxIdleRunners) {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, w)
		p.mu.Unlock()
		f = <-w.next
	}
}

// reap stops the runners idle since before old, or all of them if all,
// and starts a new period of the peak's count.
func (p *taskRunners) reap(old int64, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keep, p.peak = p.peak, p.busy
	n := 0
	for n < len(p.idle) && (all || p.idle[n].idle < old) {
		p.idle[n].next <- nil
		n++
	}
	p.idle = append(p.idle[:0], p.idle[n:]...)
	clear(p.idle[len(p.idle) : len(p.idle)+n])
}

// count returns the number of idle task runners.
func (p *taskRunners) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}
