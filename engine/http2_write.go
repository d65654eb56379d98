package engine

import (
	"errors"
	"runtime"
	"sync"
	"time"
)

// HTTP/2 output: one buffer per connection that every stream and the
// reader append frames to, written by whichever goroutine finds no write
// under way, and given back to a pool while the connection is idle.

// kick writes what is queued on a goroutine of its own, unless a write is
// under way (which writes it too).
func (h *h2Conn) kick() {
	h.mu.Lock()
	start := !h.writing && len(h.wbuf) > 0 && h.werr == nil
	if start {
		h.writing = true
	}
	h.mu.Unlock()
	if start {
		go h.writeClaimed(false)
	}
}

// writeClaimed writes what is queued for a caller that set h.writing
// (so that nothing else writes meanwhile), first yielding if yield is
// set, and wakes those waiting for the write. It runs on a goroutine of
// its own.
func (h *h2Conn) writeClaimed(yield bool) {
	if yield {
		runtime.Gosched()
	}
	h.mu.Lock()
	h.writing = false
	h.flushLocked()
	h.cond.Broadcast()
	h.mu.Unlock()
}

// flushSoonLocked writes what a handler that returned queued: at once if
// no other handler of the connection runs, else on a goroutine that
// first lets those that can run now finish theirs, so that the responses
// of a client's concurrent requests leave in one write rather than one
// each.
func (h *h2Conn) flushSoonLocked() {
	if h.writing || len(h.wbuf) == 0 || h.werr != nil {
		return
	}
	if h.running == 0 {
		h.flushLocked()
		return
	}
	h.writing = true // what is queued meanwhile waits for this write
	go h.writeClaimed(true)
}

// flush writes what is queued unless another goroutine is writing.
func (h *h2Conn) flush() {
	h.mu.Lock()
	h.flushLocked()
	h.mu.Unlock()
}

// flushLocked writes wbuf, and what is added to it meanwhile, unless
// another goroutine is writing; it is called, and returns, with mu held.
func (h *h2Conn) flushLocked() {
	for len(h.wbuf) > 0 && !h.writing && h.werr == nil {
		h.writing = true
		b := h.wbuf
		h.wbuf, h.spare = h.spare[:0], nil
		h.ackDue = false
		h.mu.Unlock()
		h.nc.SetWriteDeadline(time.Now().Add(h.srv.limits().WriteTimeout))
		_, err := h.nc.Write(b)
		h.mu.Lock()
		h.writing = false
		h.control = 0
		if cap(b) <= 4*h2MaxBuffered {
			h.spare = b[:0]
		}
		if err != nil {
			h.failLocked(err)
		}
		h.cond.Broadcast()
	}
	if len(h.wbuf) == 0 && !h.writing && h.idle && h.boxes[0] != nil {
		// An idle connection keeps no output buffers.
		for i, b := range [2][]byte{h.wbuf, h.spare} {
			if cap(b) == 0 || cap(b) > h2MaxBuffered {
				b = make([]byte, 0, h2OutBufStart)
			}
			*h.boxes[i] = b[:0]
			h2OutPool.Put(h.boxes[i])
			h.boxes[i] = nil
		}
		h.wbuf, h.spare = nil, nil
	}
}

// h2OutBufStart is the capacity of a pooled output buffer.
const h2OutBufStart = 16 << 10

var h2OutPool = sync.Pool{New: func() any { b := make([]byte, 0, h2OutBufStart); return &b }}

// takeBuffers gives a connection that stops being idle its two output
// buffers from the pool.
func (h *h2Conn) takeBuffers() {
	if h.boxes[0] != nil || h.writing {
		return
	}
	for i := range h.boxes {
		h.boxes[i] = h2OutPool.Get().(*[]byte)
	}
	h.wbuf = append(*h.boxes[0], h.wbuf...)
	h.spare = *h.boxes[1]
}

// failLocked ends the connection after a write failed: every stream's
// writes and reads fail, and the reader stops.
func (h *h2Conn) failLocked(err error) {
	if h.werr != nil {
		return
	}
	h.werr = err
	h.wbuf = h.wbuf[:0]
	for _, st := range h.streams {
		st.abortLocked(err)
	}
	h.c.nc.SetReadDeadline(aLongTimeAgo)
	h.cond.Broadcast()
}

// queueControl queues a frame the reader answers with; a client that
// makes the server queue too many without reading them is cut off.
func (h *h2Conn) queueControl() {
	h.control++
	if h.control > h2MaxControl {
		h.failLocked(errors.New("http2: too many control frames queued"))
	}
}
