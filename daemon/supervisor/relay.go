//go:build linux

package supervisor

import (
	"sync"
	"time"
)

// relays are the master's fan-outs of one kind under way (purges,
// scrapes, the admin API's upstream calls), by the id each was given, so
// that a worker's answer reaches the fan-out waiting for it. The zero
// value is ready for use; safe for concurrent use.
type relays struct {
	mu      sync.Mutex
	next    uint64
	waiting map[uint64]chan relayReply
}

// relayReply is one target's answer to a fan-out (m), or, with gone,
// word that the target exited without one.
type relayReply struct {
	w    *worker
	m    message
	gone bool
}

// deliver hands a worker's answer to the fan-out waiting for it; an
// answer no fan-out waits for any more is dropped.
func (r *relays) deliver(w *worker, msg message) {
	r.mu.Lock()
	ch := r.waiting[msg.ID]
	r.mu.Unlock()
	if ch != nil {
		select {
		case ch <- relayReply{w: w, m: msg}:
		default:
		}
	}
}

// fanOut sends msg, its ID set to a new one of r's, to every target, and
// calls each, on fanOut's goroutine, with each target's first answer as
// it comes (or, with gone set, word that the target exited), until every
// target has answered or timeout is over. It returns how many targets
// did not answer in time. sendFailed, if not nil, is called with a
// target the message did not reach, from a goroutine of its own. fanOut
// blocks: it is not for Run's goroutine, which delivers the answers.
func (r *relays) fanOut(targets []*worker, msg message, timeout time.Duration, sendFailed func(*worker, error), each func(relayReply)) (missing int) {
	ch := make(chan relayReply, len(targets))
	r.mu.Lock()
	if r.waiting == nil {
		r.waiting = map[uint64]chan relayReply{}
	}
	r.next++
	id := r.next
	r.waiting[id] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.waiting, id)
		r.mu.Unlock()
	}()
	msg.ID = id
	done := make(chan struct{})
	defer close(done)
	for _, t := range targets {
		go func() {
			if err := send(t.ctl, msg, nil, time.Second); err != nil && sendFailed != nil {
				sendFailed(t, err)
			}
			select {
			case <-t.exited:
				ch <- relayReply{w: t, gone: true}
			case <-done:
			}
		}()
	}
	pending := map[*worker]bool{}
	for _, t := range targets {
		pending[t] = true
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for len(pending) > 0 {
		select {
		case a := <-ch:
			if pending[a.w] {
				delete(pending, a.w)
				each(a)
			}
		case <-timer.C:
			return len(pending)
		}
	}
	return 0
}

// others returns the workers a relay from w reaches: every ready one,
// serving, starting or draining, but w. It runs on Run's goroutine.
func (m *Master) others(w *worker) []*worker {
	var out []*worker
	for _, t := range m.serving(true) {
		if t != w {
			out = append(out, t)
		}
	}
	return out
}

// waiters are a worker's requests to the master (purges, scrapes) that
// await its answers, by the id each was given. The zero value is ready
// for use; safe for concurrent use.
type waiters struct {
	mu      sync.Mutex
	next    uint64
	waiting map[uint64]chan message
}

// add registers ch for the answers to a request under a new id; remove
// unregisters it.
func (ws *waiters) add(ch chan message) (id uint64, remove func()) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.waiting == nil {
		ws.waiting = map[uint64]chan message{}
	}
	ws.next++
	id = ws.next
	ws.waiting[id] = ch
	return id, func() {
		ws.mu.Lock()
		delete(ws.waiting, id)
		ws.mu.Unlock()
	}
}

// answer hands the master's answer m to the request waiting for it; an
// answer no request waits for, or one its channel has no room for, is
// dropped.
func (ws *waiters) answer(m message) {
	ws.mu.Lock()
	ch := ws.waiting[m.ID]
	ws.mu.Unlock()
	if ch != nil {
		select {
		case ch <- m:
		default:
		}
	}
}
