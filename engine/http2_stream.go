package engine

import (
	"errors"
	"net/http"
	"runtime/debug"
	"sync"
)

// HTTP/2 streams (RFC 9113 §5.1): a stream's life from the header block
// that opens it, through its handler's run, to its close or reset.

// h2Stream is one HTTP/2 stream: its request, its request body as it
// arrives, and the ResponseWriter its handler answers through. Fields
// under "guarded by h.mu" are shared with the connection's reader; the
// rest belong to the handler's goroutine.
type h2Stream struct {
	runFn func() // st.run, bound once: the task runTask runs (see http2_runners.go)
	h     *h2Conn
	id    uint32

	req     Request
	arena   []byte // the request's field bytes
	pathBuf []byte
	refusal *ProtocolError // answered by the engine, not the handler

	// The response, composed by the handler's goroutine.
	hdr          Header
	status       int
	committed    bool
	isHead       bool
	noBody       bool
	continueSent bool
	declared     int64  // Content-Length sent, or -1
	written      int64  // body bytes the handler wrote
	out          []byte // body bytes not yet framed
	werr         error  // sticky write error
	consumed     int64  // request body bytes read
	maxBody      int64  // Limits.MaxBodyBytes as the request began
	pace         bodyPace
	sendPace     bodyPace       // the same rule for the windows the client grants the response
	bodyRefusal  *ProtocolError // the body was cut off (too slow, too large): answered unless the handler did

	// Guarded by h.mu.
	cond        sync.Cond // signalled when body bytes arrive or the stream ends
	body        []byte    // request body received and not yet read, from bodyOff
	bodyOff     int
	trailer     []Field
	received    int64 // request body bytes received
	sendWin     int64
	recvWin     int64
	unacked     int64  // body bytes read and not yet returned to the window
	remoteDone  bool   // the client's END_STREAM came (or the stream was reset)
	localDone   bool   // the server's END_STREAM was queued (or the stream was reset)
	endGen      uint64 // the write that takes the server's END_STREAM (h2Conn.wgen)
	handlerDone bool
	queued      bool
	err         error // why the stream ended early: reset, or the connection failed
	gone        chan struct{}
	goneClosed  bool
}

var errH2StreamReset = errors.New("http2: stream reset")

var h2StreamPool = sync.Pool{New: func() any {
	st := &h2Stream{out: make([]byte, 0, h2OutBufSize)}
	st.req.Fields = make([]Field, 0, 16)
	return st
}}

func newH2Stream(h *h2Conn, id uint32) *h2Stream {
	st := h2StreamPool.Get().(*h2Stream)
	st.h, st.id = h, id
	if st.runFn == nil {
		st.runFn = st.run
	}
	st.cond.L = &h.mu
	st.sendWin = h.peerWinLoad()
	st.recvWin = h2StreamWindow
	st.declared = -1
	st.hdr.reset()
	return st
}

// releaseH2Stream returns st to the pool once nothing refers to it.
func releaseH2Stream(st *h2Stream) {
	fields, arena, out, body, pathBuf := st.req.Fields[:0], st.arena[:0], st.out[:0], st.body[:0], st.pathBuf[:0]
	clear(st.req.Fields[:cap(st.req.Fields)])
	st.hdr.reset()
	hdr := st.hdr
	if cap(out) > 4*h2OutBufSize {
		out = make([]byte, 0, h2OutBufSize)
	}
	if cap(body) > h2StreamWindow {
		body = nil
	}
	*st = h2Stream{arena: arena, out: out, body: body, pathBuf: pathBuf, hdr: hdr, runFn: st.runFn}
	st.req.Fields = fields
	h2StreamPool.Put(st)
}

// run serves the stream on its own goroutine: the handler, or the
// engine's refusal; then it finishes the response.
func (st *h2Stream) run() {
	h := st.h
	h.unstarted.Add(-1)
	defer func() {
		if v := recover(); v != nil {
			st.recovered(v)
		}
		st.finish()
		h.mu.Lock()
		st.handlerDone = true
		switch {
		case st.err != nil:
			h.closeStreamLocked(st)
		case !st.localDone:
			// The response could not be completed (a file shorter than
			// said): the client must not wait for the rest.
			h.resetStreamLocked(st.id, st, h2InternalError)
		case !st.remoteDone:
			// §8.1: the response is complete while the client still
			// sends: it is asked to stop, without error.
			h.resetStreamLocked(st.id, st, h2NoError)
		default:
			h.closeStreamLocked(st)
		}
		h.handlerDoneLocked()
		h.flushSoonLocked()
		release := h.streams[st.id] != st
		h.mu.Unlock()
		if release {
			releaseH2Stream(st)
		}
	}()
	st.isHead = st.req.IsMethod("HEAD")
	st.noBody = st.isHead
	if v := h.srv.set.Load().serverValue; v == "" {
		st.hdr.hasServer = true // none at all
	}
	if st.refusal != nil {
		st.fail(st.refusal)
		return
	}
	h.h.Serve(st, &st.req)
	if st.bodyRefusal != nil && !st.committed {
		st.hdr.reset()
		st.out = st.out[:0]
		st.written, st.status, st.noBody = 0, 0, st.isHead
		st.fail(st.bodyRefusal)
	}
}

// recovered turns a handler panic into a 500, or, once the response has
// begun, into a reset stream, counting and logging it as the engine does
// for HTTP/1.x.
func (st *h2Stream) recovered(v any) {
	h := st.h
	h.srv.stats.panics.Add(1)
	if v != errAbortHandler {
		h.srv.logger().Error("handler panic", "remote", h.c.nc.RemoteAddr().String(),
			"target", string(st.req.Target), "panic", v, "stack", string(debug.Stack()))
	}
	if st.committed {
		h.mu.Lock()
		h.resetStreamLocked(st.id, st, h2InternalError)
		h.mu.Unlock()
		return
	}
	st.hdr.reset()
	st.out = st.out[:0]
	st.written, st.status, st.noBody = 0, 0, st.isHead
	Error(st, http.StatusInternalServerError, "internal server error")
}

// fail answers with the refusal e, and hands it to the server's
// OnRefused hook with a request line made of the method and :path.
func (st *h2Stream) fail(e *ProtocolError) {
	srv := st.h.srv
	if e.Status != 500 {
		srv.stats.refused.Add(1)
	}
	Error(st, e.Status, e.Msg)
	if hook := srv.OnRefused; hook != nil {
		r := &st.req
		line := make([]byte, 0, len(r.Method)+len(r.Target)+10)
		line = append(append(append(line, r.Method...), ' '), r.Target...)
		line = append(line, " HTTP/2.0"...)
		body := st.written
		if st.noBody {
			body = 0
		}
		hook(&Refusal{Status: e.Status, Reason: e.Msg, Line: line, Request: r, BodyBytes: body})
	}
}

// Gone implements GoneNotifier: the channel closes when the client
// resets the stream or the connection ends.
func (st *h2Stream) Gone() <-chan struct{} {
	h := st.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if st.gone == nil {
		st.gone = make(chan struct{})
		if st.err != nil && !st.handlerDone {
			close(st.gone)
			st.goneClosed = true
		}
	}
	return st.gone
}

// abortLocked ends the stream early with err: its reads and writes fail
// and its Gone channel closes.
func (st *h2Stream) abortLocked(err error) {
	if st.err == nil {
		st.err = err
	}
	if st.gone != nil && !st.goneClosed && !st.handlerDone {
		close(st.gone)
		st.goneClosed = true
	}
	st.cond.Broadcast()
	st.h.cond.Broadcast()
}

// wasReset reports whether the server reset stream id recently, under
// h.mu.
func (h *h2Conn) wasReset(id uint32) bool {
	for _, r := range h.reset {
		if r == id {
			return true
		}
	}
	return false
}

// resetStream sends RST_STREAM for stream id with code.
func (h *h2Conn) resetStream(id uint32, code h2ErrCode) {
	h.mu.Lock()
	h.resetStreamLocked(id, h.streams[id], code)
	h.mu.Unlock()
}

// resetStreamLocked sends RST_STREAM and closes st (nil for a stream the
// server holds nothing of).
func (h *h2Conn) resetStreamLocked(id uint32, st *h2Stream, code h2ErrCode) {
	if h.werr != nil {
		return
	}
	h.wbuf = appendRSTStream(h.wbuf, id, code)
	h.queueControl(h2FrameHeaderLen + 4)
	h.reset[h.resetAt] = id
	h.resetAt = (h.resetAt + 1) % len(h.reset)
	if st != nil {
		st.abortLocked(errH2StreamReset)
		h.closeStreamLocked(st)
	}
}

// endRemoteLocked records the client's END_STREAM.
func (h *h2Conn) endRemoteLocked(st *h2Stream) {
	st.remoteDone = true
	if st.localDone {
		h.closeStreamLocked(st)
	}
}

// closeStreamLocked forgets a stream both sides are done with (or that
// was reset): body bytes nobody will read go back to the connection's
// window. Its handler, if running, still counts until it returns.
func (h *h2Conn) closeStreamLocked(st *h2Stream) {
	if h.streams[st.id] != st {
		return
	}
	delete(h.streams, st.id)
	if st.err == nil && st.localDone {
		h.holdLocked(st)
	}
	st.remoteDone, st.localDone = true, true
	if len(st.body) > 0 {
		h.creditLocked(int64(len(st.body)))
		st.body = st.body[:0]
	}
	// A queued stream stays queued, and counts against the bound on
	// queued streams, until a handler slot frees (see open).
	h.setIdleLocked()
	h.cond.Broadcast()
}

// endBlock acts on a complete header block.
func (h *h2Conn) endBlock() error {
	b := &h.blk
	id := b.id
	h.mu.Lock()
	if st := h.streams[id]; st != nil {
		// Taken under the same hold of mu as the lookup: once mu is
		// let go, the stream's handler may finish, close the stream and
		// give it back to the pool.
		defer h.mu.Unlock()
		return h.trailerLocked(st)
	}
	newID := id > h.maxID
	if newID {
		h.maxID = id // under mu: GOAWAY, sent from any goroutine, names it
	}
	wasReset := !newID && h.wasReset(id) // reset is written under mu
	goingAway := h.goAway
	h.mu.Unlock()
	switch {
	case wasReset:
		return nil // the trailer of a stream the server reset: in flight
	case !newID:
		// §5.1.1: a stream id not above every one opened before.
		return h2ConnError(h2ProtocolError)
	case b.selfDep:
		h.resetStream(id, h2ProtocolError)
		return nil
	case goingAway:
		return nil // §6.8: streams after GOAWAY's last are not served
	}
	return h.open(id)
}

// open opens stream id with the request in the block just decoded, and
// starts its handler, or queues it while MaxStreams handlers run.
func (h *h2Conn) open(id uint32) error {
	b := &h.blk
	h.mu.Lock()
	// Streams whose last frame a write under way takes may have ended
	// for the client, which may open others in their place: the reader
	// waits for the write rather than refuse them.
	for h.holdOut > 0 && len(h.streams)+h.holdNext+h.holdOut >= h.lim.MaxStreams && h.werr == nil {
		h.readWait = true
		h.cond.Wait()
	}
	h.readWait = false
	nopen := len(h.streams) + h.holdNext + h.holdOut
	h.mu.Unlock()
	if nopen >= h.lim.MaxStreams {
		h.resetStream(id, h2RefusedStream) // §5.1.2
		return nil
	}
	st := newH2Stream(h, id)
	refusal, err := st.request(b)
	if err != nil {
		releaseH2Stream(st)
		h.resetStream(id, h2ProtocolError)
		return nil
	}
	st.refusal = refusal
	h.srv.stats.requests.Add(1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.werr != nil {
		releaseH2Stream(st)
		return nil
	}
	h.streams[id] = st
	h.settings = 0
	if b.endStream {
		st.remoteDone = true
	}
	h.setIdleLocked()
	if h.running < h.lim.MaxStreams {
		h.running++
		h.unstarted.Add(1)
		h.srv.runTask(st.runFn)
		return nil
	}
	// Rapid reset (CVE-2023-44487): a client that resets its streams at
	// once does not free handler slots, whose handlers run on; its new
	// streams wait for one, and a client that piles up too many is cut off.
	if len(h.queued) >= h2QueuedFactor*h.lim.MaxStreams {
		return h2ConnError(h2EnhanceYourCalm)
	}
	st.queued = true
	h.queued = append(h.queued, st)
	return nil
}

// handlerDone is called as a stream's handler returns: the next queued
// stream gets its slot.
func (h *h2Conn) handlerDoneLocked() {
	h.running--
	for len(h.queued) > 0 && h.werr == nil {
		st := h.queued[0]
		h.queued[0] = nil
		h.queued = h.queued[1:]
		st.queued = false
		if st.err != nil {
			releaseH2Stream(st) // reset while it waited
			continue
		}
		h.running++
		h.unstarted.Add(1)
		h.srv.runTask(st.runFn)
		break
	}
	h.setIdleLocked()
	h.cond.Broadcast()
}
