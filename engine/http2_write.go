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
	h.kickLocked()
	h.mu.Unlock()
}

// kickLocked is kick for a caller that holds mu.
func (h *h2Conn) kickLocked() {
	if !h.writing && len(h.wbuf) > 0 && h.werr == nil {
		h.writing = true
		h.srv.runTask(h.writeNow)
	}
}

// readerKick is kick for the reader before it reads: while h2MaxBuffered
// or more is queued (the control frames queueControl bounds apart), it
// first waits until a write takes the queue (or the connection fails), so
// that a client that does not read cannot make the server queue without
// end the responses of the streams it would open, nor the WINDOW_UPDATEs
// and other frames the reader queues. The write it waits for needs only
// that the client read: a client that reads however slowly, and sends its
// WINDOW_UPDATEs meanwhile, is read again as soon as the write has taken
// the queue (what waits for a window is never queued).
func (h *h2Conn) readerKick() {
	h.mu.Lock()
	for len(h.wbuf)-h.ctlBytes >= h2MaxBuffered && h.werr == nil {
		h.kickLocked()
		if !h.readWait {
			h.readWait = true
			h.srv.stats.h2ReadStalls.Add(1)
		}
		h.cond.Wait()
	}
	h.readWait = false
	h.kickLocked()
	h.mu.Unlock()
}

// writeClaimed writes what is queued for a caller that set h.writing
// (so that nothing else writes meanwhile), first yielding if yield is
// set, and wakes those waiting for the write. It runs on a task runner.
//
// Yielding once is not enough to let the connection's other handlers
// finish: a goroutine that yields goes to the scheduler's global queue,
// which it serves every 61st time it picks one, while a hundred
// connections of ten streams each keep a thousand runnable, so the
// responses a client asked for together left in two or three writes,
// each a TLS record and a send(2) (the largest cost of a small
// response). The writer yields again while a handler of the connection
// was handed to a runner and has not begun (such a handler waits for
// nothing but the CPU), at most h2WriteYields times; a handler that has
// begun and waits for I/O does not hold it back, and handlers that keep
// the CPU busy hold it back for h2WriteYieldTime at most, and a time
// slice.
func (h *h2Conn) writeClaimed(yield bool) {
	if yield {
		runtime.Gosched()
		if h.unstarted.Load() > 0 {
			start := time.Now()
			for i := 0; i < h2WriteYields && h.unstarted.Load() > 0 && time.Since(start) < h2WriteYieldTime; i++ {
				runtime.Gosched()
			}
		}
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
	h.srv.runTask(h.writeSoon)
}

// h2WriteYields and h2WriteYieldTime bound the times, and the time, a
// write yields to the connection's handlers that have not begun (see
// writeClaimed). A thousand small responses take about 2.5 ms of a core.
const (
	h2WriteYields    = 64
	h2WriteYieldTime = 5 * time.Millisecond
)

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
		h.ctlBytes = 0
		h.inflight = len(b)
		h.wgen++
		h.holdOut, h.holdNext = h.holdNext, 0
		h.ackDue = false
		h.mu.Unlock()
		h.nc.SetWriteDeadline(time.Now().Add(h.srv.limits().WriteTimeout))
		_, err := h.nc.Write(b)
		h.mu.Lock()
		h.writing = false
		h.inflight, h.holdOut = 0, 0 // the streams that ended in b free their slots
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
	h.ctlBytes, h.holdNext = 0, 0
	for _, st := range h.streams {
		st.abortLocked(err)
	}
	h.c.nc.SetReadDeadline(aLongTimeAgo)
	h.cond.Broadcast()
}

// waitRoomLocked waits, before a handler queues a frame of its stream,
// until less than h2MaxBuffered is queued, writing the queue itself if
// no write is under way; it fails if the stream or the connection does
// (a write that takes nothing for WriteTimeout fails the connection).
func (st *h2Stream) waitRoomLocked() error {
	h := st.h
	for {
		if err := st.errLocked(); err != nil {
			return err
		}
		if len(h.wbuf) < h2MaxBuffered {
			return nil
		}
		h.roomWait++
		if !h.writing {
			h.flushLocked()
		} else {
			h.cond.Wait()
		}
		h.roomWait--
	}
}

// endLocalLocked records that the stream's last frame is queued, and
// closes the stream if the client's END_STREAM came: its slot frees
// once the write that takes the frame is done (see holdLocked), though
// its handler may still be returning.
func (st *h2Stream) endLocalLocked() {
	st.localDone = true
	st.endGen = st.h.wgen
	if st.remoteDone {
		st.h.closeStreamLocked(st)
	}
}

// holdLocked keeps the slot of a stream that ends with its last frame
// not yet written, until the write that takes it is done: a client that
// does not read the responses cannot open streams without end.
func (h *h2Conn) holdLocked(st *h2Stream) {
	switch {
	case st.endGen == h.wgen:
		h.holdNext++
	case st.endGen+1 == h.wgen && h.inflight > 0:
		h.holdOut++
	}
}

// queueControl counts a frame of n bytes just queued that the server
// answers a client's frame with (a PING acknowledgement, RST_STREAM); a
// client that makes the server queue too many without reading them is
// cut off. They do not stop the reader (see readerKick): this bound
// does, more firmly.
func (h *h2Conn) queueControl(n int) {
	h.control++
	h.ctlBytes += n
	if h.control > h2MaxControl {
		h.failLocked(errors.New("http2: too many control frames queued"))
	}
}
