package engine

import (
	"encoding/binary"
	"os"
	"time"
)

// HTTP/2 flow control (RFC 9113 §5.2, §6.9): the windows the server
// offers and returns as request bodies are read, DATA as it arrives,
// and the windows the client grants, which the responses' DATA waits for.

// Flow-control windows the server offers: each stream may send this much
// unread body, the connection in all this much.
const (
	h2StreamWindow = 256 << 10
	h2ConnWindow   = 1 << 20
)

func (h *h2Conn) handleWindowUpdate(fh h2FrameHeader, p []byte) error {
	if len(p) != 4 {
		return h2ConnError(h2FrameSizeError)
	}
	incr := int64(binary.BigEndian.Uint32(p) & (1<<31 - 1))
	h.mu.Lock()
	defer h.mu.Unlock()
	if fh.streamID == 0 {
		if incr == 0 {
			return h2ConnError(h2ProtocolError)
		}
		h.sendWin += incr
		if h.sendWin > h2MaxWindow {
			return h2ConnError(h2FlowControlError)
		}
		h.cond.Broadcast()
		return nil
	}
	if fh.streamID > h.maxID {
		return h2ConnError(h2ProtocolError) // §5.1: on an idle stream
	}
	st := h.streams[fh.streamID]
	if st == nil {
		return nil // closed: a late update
	}
	if incr == 0 {
		h.resetStreamLocked(st.id, st, h2ProtocolError)
		return nil
	}
	st.sendWin += incr
	if st.sendWin > h2MaxWindow {
		h.resetStreamLocked(st.id, st, h2FlowControlError)
		return nil
	}
	h.cond.Broadcast()
	return nil
}

func (h *h2Conn) handleData(fh h2FrameHeader, p []byte) error {
	if fh.streamID == 0 {
		return h2ConnError(h2ProtocolError)
	}
	if fh.streamID > h.maxID {
		return h2ConnError(h2ProtocolError) // §5.1: DATA on an idle stream
	}
	data, err := unpad(fh, p)
	if err != nil {
		return h2ConnError(h2ProtocolError)
	}
	n := int64(len(p)) // padding included: the whole payload is flow controlled (§6.9)
	h.mu.Lock()
	defer h.mu.Unlock()
	if n > h.recvWin {
		return h2ConnError(h2FlowControlError)
	}
	h.recvWin -= n
	st := h.streams[fh.streamID]
	if st == nil || st.remoteDone {
		// Closed, or half-closed (remote): the bytes go back to the
		// connection's window, and the stream is refused unless the
		// server reset it itself, when frames in flight are expected.
		h.creditLocked(n)
		if st != nil {
			h.resetStreamLocked(st.id, st, h2StreamClosed)
		} else if !h.wasReset(fh.streamID) {
			h.resetStreamLocked(fh.streamID, nil, h2StreamClosed)
		}
		return nil
	}
	if n > st.recvWin {
		h.creditLocked(n)
		h.resetStreamLocked(st.id, st, h2FlowControlError)
		return nil
	}
	st.recvWin -= n
	if pad := n - int64(len(data)); pad > 0 {
		h.creditStreamLocked(st, pad)
	}
	st.received += int64(len(data))
	if st.req.ContentLength >= 0 && st.received > st.req.ContentLength {
		h.creditLocked(int64(len(data)))
		h.resetStreamLocked(st.id, st, h2ProtocolError) // §8.1.1: more than Content-Length
		return nil
	}
	if st.handlerDone {
		h.creditLocked(int64(len(data)))
	} else {
		st.appendBodyLocked(data)
	}
	if fh.has(h2FlagEndStream) {
		if st.req.ContentLength >= 0 && st.received != st.req.ContentLength {
			h.resetStreamLocked(st.id, st, h2ProtocolError)
			return nil
		}
		h.endRemoteLocked(st)
	}
	st.cond.Broadcast()
	return nil
}

// creditLocked returns n bytes to the client's connection window once
// enough have been consumed to be worth a WINDOW_UPDATE.
func (h *h2Conn) creditLocked(n int64) {
	h.unacked += n
	if h.unacked >= h2ConnWindow/4 && h.werr == nil {
		h.wbuf = appendWindowUpdate(h.wbuf, 0, uint32(h.unacked))
		h.recvWin += h.unacked
		h.unacked = 0
	}
}

// creditStreamLocked returns n consumed bytes to a stream's window and
// the connection's.
func (h *h2Conn) creditStreamLocked(st *h2Stream, n int64) {
	h.creditLocked(n)
	if st.remoteDone {
		return
	}
	st.unacked += n
	if st.unacked >= h2StreamWindow/4 && h.werr == nil {
		h.wbuf = appendWindowUpdate(h.wbuf, st.id, uint32(st.unacked))
		st.recvWin += st.unacked
		st.unacked = 0
	}
}

func (h *h2Conn) peerWinLoad() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.peerWin
}

// dataLocked appends p as DATA frames, as the windows allow. A client
// that keeps a window shut for WriteTimeout takes none of the response,
// as a client that stops reading does on HTTP/1.x: the stream is reset.
// So is one that opens its windows slower than a request body must
// arrive (BodyTimeout and MinBodyRate, judged by st.sendPace over the
// time spent waiting for a window): a client granting a byte at a time
// would otherwise hold the stream, and its handler, without end.
func (st *h2Stream) dataLocked(p []byte, end bool) error {
	h := st.h
	var stalled *time.Timer // set while waiting for a window
	var paced *time.Timer   // set while waiting, for the pace's deadline
	defer func() {
		if stalled != nil {
			stalled.Stop()
		}
		if paced != nil {
			paced.Stop()
		}
	}()
	var stallEnd time.Time
	waiting := false // a wait for a window is under way (st.sendPace.wait)
	for {
		if err := st.waitRoomLocked(); err != nil {
			return err
		}
		n := int64(min(len(p), h.peerMax))
		n = min(n, st.sendWin, h.sendWin)
		if n <= 0 && len(p) > 0 {
			if !h.writing && len(h.wbuf) > 0 {
				h.flushLocked()
				continue
			}
			wt := h.srv.limits().WriteTimeout
			switch {
			case stalled == nil:
				stallEnd = time.Now().Add(wt)
				stalled = time.AfterFunc(wt, func() {
					h.mu.Lock()
					h.cond.Broadcast()
					h.mu.Unlock()
				})
			case !time.Now().Before(stallEnd):
				h.resetStreamLocked(st.id, st, h2Cancel)
				return os.ErrDeadlineExceeded
			}
			if st.sendPace.window > 0 { // the rate is on
				now := h.srv.tm.Now()
				if waiting {
					st.sendPace.got(now, 0) // the wait so far
				}
				waiting = true
				deadline := st.sendPace.wait(now)
				if deadline <= now {
					h.resetStreamLocked(st.id, st, h2Cancel)
					return os.ErrDeadlineExceeded
				}
				if paced == nil {
					paced = time.AfterFunc(time.Duration(deadline-now), func() {
						h.mu.Lock()
						h.cond.Broadcast()
						h.mu.Unlock()
					})
				} else {
					paced.Reset(time.Duration(deadline - now))
				}
			}
			h.cond.Wait()
			continue
		}
		if stalled != nil {
			stalled.Stop()
			stalled = nil
		}
		if waiting {
			waiting = false
			st.sendPace.got(h.srv.tm.Now(), 0)
			paced.Stop()
		}
		st.sendPace.add(int(n))
		last := end && int(n) == len(p)
		h.wbuf = appendData(h.wbuf, st.id, p[:n], last)
		st.sendWin -= n
		h.sendWin -= n
		p = p[n:]
		if len(p) == 0 {
			if last {
				st.endLocalLocked()
			}
			return nil
		}
	}
}
