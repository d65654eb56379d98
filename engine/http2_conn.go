package engine

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"time"

	"golang.org/x/net/http2/hpack"

	"github.com/sluice-server/sluice/httpgrammar"
)

// The engine's HTTP/2 server (RFC 9113). One goroutine per connection
// reads and handles every frame (h2Conn.serve); each stream's request
// runs the connection's Handler on a goroutine of its own, with an
// engine Request built from the decoded header block and a ResponseWriter
// (h2Stream) that frames its response. Output from every stream and from
// the reader goes through one per-connection buffer (h2Conn.wbuf): a
// goroutine that adds to it writes it out unless another is writing
// already, which then writes what was added meanwhile too, so the frames
// of many streams leave in few writes; a handler that returns while
// others run defers its write until they had a chance to finish (see
// flushSoonLocked). The reader never writes itself
// (a client that does not read must not stop the server from reading):
// before it waits for input it hands what it queued to a goroutine.

// Flow-control windows the server offers: each stream may send this much
// unread body, the connection in all this much.
const (
	h2StreamWindow = 256 << 10
	h2ConnWindow   = 1 << 20
)

// Bounds on what a client can make the server queue.
const (
	h2MaxBuffered     = 64 << 10 // output queued before a stream's writes wait for it to drain
	h2MaxControl      = 10000    // frames the client made the server queue (PING acks, resets) without reading them
	h2QueuedFactor    = 4        // streams waiting for a handler slot, per MaxStreams, before ENHANCE_YOUR_CALM
	h2GoAwayLinger    = time.Second
	h2HeaderListSlack = 320 // SETTINGS_MAX_HEADER_LIST_SIZE is MaxHeaderBytes plus this (as net/http's)
)

// h2Conn is one HTTP/2 connection.
type h2Conn struct {
	c    *conn
	srv  *Server
	nc   net.Conn // reads return the bytes read before HTTP/2 began first
	lim  Limits   // as the connection began: its SETTINGS cannot change
	h    Handler
	idle bool // the timeout manager counts the connection idle

	// Used by the reader goroutine alone.
	rd          h2Reader
	dec         *hpack.Decoder
	blk         h2Block // the header block being received
	maxID       uint32  // the highest stream id the client opened
	maxList     int     // SETTINGS_MAX_HEADER_LIST_SIZE the server sent
	sawSettings bool

	mu      sync.Mutex
	cond    sync.Cond // signalled when windows open, output drains, or streams end
	streams map[uint32]*h2Stream
	running int         // handlers running, those of reset streams included
	queued  []*h2Stream // streams waiting for a handler slot
	reset   [16]uint32  // streams the server reset recently: their late frames are dropped
	resetAt int         // the next slot in reset
	enc     *hpack.Encoder
	encBuf  h2BlockBuf
	sendWin int64      // the connection's send window
	peerWin int64      // the client's SETTINGS_INITIAL_WINDOW_SIZE
	peerMax int        // the client's SETTINGS_MAX_FRAME_SIZE
	unacked int64      // body bytes consumed and not yet returned to the client's window
	recvWin int64      // what the client may still send on the connection
	wbuf    []byte     // frames to write
	spare   []byte     // the other output buffer, while wbuf is written
	boxes   [2]*[]byte // from h2OutPool while the connection is busy
	writing bool       // a goroutine is writing
	control int        // control frames queued since the last write ended
	ackDue  bool       // a SETTINGS ACK is in wbuf
	werr    error      // the connection failed: nothing more is written
	goAway  bool       // GOAWAY sent: no new streams
	lastID  uint32     // the last stream id GOAWAY said would be served
	closing bool       // the connection closes once its streams end

	lastLen     int64 // the last Content-Length sent, and its text
	lastLenText string
}

// h2BlockBuf collects the encoder's output.
type h2BlockBuf struct{ b []byte }

func (w *h2BlockBuf) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

var errH2Closed = errors.New("http2: connection closed")

// newH2Conn prepares c's HTTP/2 connection; nc returns pre first.
func newH2Conn(c *conn, nc net.Conn) *h2Conn {
	s := c.srv
	h := &h2Conn{
		c:       c,
		srv:     s,
		nc:      nc,
		lim:     *s.limits(),
		h:       c.h,
		streams: make(map[uint32]*h2Stream),
		recvWin: h2ConnWindow,
		sendWin: h2DefaultWindow,
		peerWin: h2DefaultWindow,
		peerMax: h2MinMaxFrameSize,
	}
	h.cond.L = &h.mu
	h.maxList = h.lim.MaxHeaderBytes + h2HeaderListSlack
	h.dec = hpack.NewDecoder(4096, h.emit)
	h.dec.SetMaxStringLength(h.maxList)
	h.enc = hpack.NewEncoder(&h.encBuf)
	h.rd = h2Reader{src: nc, idle: h.readIdle}
	return h
}

// readIdle reports whether the reader may drop its buffer while it waits:
// no stream is open and no header block is under way.
func (h *h2Conn) readIdle() bool {
	if h.blk.active {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.streams) == 0
}

// serve runs the connection until it ends, and returns once every handler
// it started has returned.
func (h *h2Conn) serve() {
	err := h.start()
	for err == nil {
		if !h.rd.buffered() {
			h.kick()
		}
		var fh h2FrameHeader
		var p []byte
		fh, p, err = h.rd.readFrame()
		if err == nil {
			err = h.handle(fh, p)
		}
	}
	var ce h2ConnError
	if errors.As(err, &ce) {
		h.mu.Lock()
		h.sendGoAway(h2ErrCode(ce))
		h.mu.Unlock()
		h.flush()
		h.nc.SetReadDeadline(time.Now().Add(h2GoAwayLinger))
		h.rd.discard()
	}
	h.rd.release()
	h.end()
}

// start sends the server's SETTINGS and reads the client's preface.
func (h *h2Conn) start() error {
	h.mu.Lock()
	b := h.wbuf
	b = appendFrameHeader(b, 4*6, h2Settings, 0, 0)
	for _, s := range [...][2]uint32{
		{h2SettingMaxConcurrentStreams, uint32(h.lim.MaxStreams)},
		{h2SettingInitialWindowSize, h2StreamWindow},
		{h2SettingMaxHeaderListSize, uint32(h.maxList)},
		{h2SettingEnablePush, 0},
	} {
		b = append(b, byte(s[0]>>8), byte(s[0]))
		b = appendUint32(b, s[1])
	}
	h.wbuf = appendWindowUpdate(b, 0, h2ConnWindow-h2DefaultWindow)
	h.mu.Unlock()
	h.kick()

	var pre [len(h2ClientPreface)]byte
	if _, err := io.ReadFull(h.nc, pre[:]); err != nil {
		return err
	}
	if string(pre[:]) != h2ClientPreface {
		return h2ConnError(h2ProtocolError)
	}
	return nil
}

// ready marks the connection as serving, once the client's preface and
// SETTINGS came: idle for the timeout manager until a stream opens.
func (h *h2Conn) ready() {
	h2 := h.c.h2.Load()
	h2.ready.Store(true)
	h.mu.Lock()
	h.setIdleLocked()
	h.mu.Unlock()
	if h2.want.Load() || h.srv.closing() {
		h.c.goAway()
	}
}

// setIdleLocked tells the timeout manager whether the connection is idle:
// no stream open and no handler running.
func (h *h2Conn) setIdleLocked() {
	idle := len(h.streams) == 0 && h.running == 0
	if idle == h.idle {
		return
	}
	h.idle = idle
	if idle {
		h.c.th.SetIdle()
		if h.closing || h.goAway {
			h.closing = true
			h.nc.SetReadDeadline(time.Now().Add(h2GoAwayLinger))
		}
	} else {
		h.c.th.Clear()
		h.takeBuffers()
	}
}

// end fails what is left of the connection, closes it, and waits for
// its handlers. The socket closes only once no write is under way and
// none can start: a write racing the close could reach the descriptor
// after it was reused by another connection.
func (h *h2Conn) end() {
	h.mu.Lock()
	if h.werr == nil {
		h.werr = errH2Closed
	}
	for _, st := range h.streams {
		st.abortLocked(errH2Closed)
	}
	h.queued = nil
	h.cond.Broadcast()
	// A write stuck on a client that does not read is cut short, and so
	// is TLS's close_notify, which Close sends.
	h.c.nc.SetWriteDeadline(aLongTimeAgo)
	for h.writing {
		h.cond.Wait()
	}
	h.mu.Unlock()
	h.c.nc.Close()
	h.mu.Lock()
	for h.running > 0 {
		h.cond.Wait()
	}
	h.mu.Unlock()
}

// goAwayGraceful sends GOAWAY NO_ERROR: the streams opened so far are
// served, later ones are not, and the connection closes once they end.
func (h *h2Conn) goAwayGraceful() {
	h.mu.Lock()
	h.sendGoAway(h2NoError)
	h.closing = true
	if h.idle {
		h.nc.SetReadDeadline(time.Now().Add(h2GoAwayLinger))
	}
	h.mu.Unlock()
	h.kick()
}

// sendGoAway queues GOAWAY with code, once for NO_ERROR (an error may
// follow a graceful one).
func (h *h2Conn) sendGoAway(code h2ErrCode) {
	if h.goAway && code == h2NoError {
		return
	}
	h.goAway = true
	h.lastID = h.maxID
	h.wbuf = appendGoAway(h.wbuf, h.lastID, code)
}

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

// handle handles one frame.
func (h *h2Conn) handle(fh h2FrameHeader, p []byte) error {
	if h.blk.active && fh.typ != h2Continuation {
		return h2ConnError(h2ProtocolError) // §6.10: a header block is not interrupted
	}
	if !h.sawSettings {
		if fh.typ != h2Settings || fh.has(h2FlagAck) {
			return h2ConnError(h2ProtocolError) // §3.4
		}
		h.sawSettings = true
		if err := h.handleSettings(fh, p); err != nil {
			return err
		}
		h.ready()
		return nil
	}
	switch fh.typ {
	case h2Data:
		return h.handleData(fh, p)
	case h2Headers:
		return h.handleHeaders(fh, p)
	case h2Continuation:
		return h.handleContinuation(fh, p)
	case h2Priority:
		return h.handlePriority(fh, p)
	case h2RSTStream:
		return h.handleRSTStream(fh, p)
	case h2Settings:
		return h.handleSettings(fh, p)
	case h2PushPromise:
		return h2ConnError(h2ProtocolError) // §8.4: clients do not push
	case h2Ping:
		return h.handlePing(fh, p)
	case h2GoAway:
		return h.handleGoAway(fh, p)
	case h2WindowUpdate:
		return h.handleWindowUpdate(fh, p)
	}
	return nil // §4.1: unknown frame types are ignored
}

func (h *h2Conn) handleSettings(fh h2FrameHeader, p []byte) error {
	if fh.streamID != 0 {
		return h2ConnError(h2ProtocolError)
	}
	if fh.has(h2FlagAck) {
		if len(p) != 0 {
			return h2ConnError(h2FrameSizeError)
		}
		return nil
	}
	if len(p)%6 != 0 {
		return h2ConnError(h2FrameSizeError)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for ; len(p) > 0; p = p[6:] {
		id, v := binary.BigEndian.Uint16(p), binary.BigEndian.Uint32(p[2:])
		switch id {
		case h2SettingHeaderTableSize:
			h.enc.SetMaxDynamicTableSize(min(v, 4096))
		case h2SettingEnablePush:
			if v > 1 {
				return h2ConnError(h2ProtocolError)
			}
		case h2SettingInitialWindowSize:
			if v > h2MaxWindow {
				return h2ConnError(h2FlowControlError)
			}
			delta := int64(v) - h.peerWin
			h.peerWin = int64(v)
			for _, st := range h.streams {
				st.sendWin += delta
				if st.sendWin > h2MaxWindow {
					return h2ConnError(h2FlowControlError)
				}
			}
			h.cond.Broadcast()
		case h2SettingMaxFrameSize:
			if v < h2MinMaxFrameSize || v > h2MaxMaxFrameSize {
				return h2ConnError(h2ProtocolError)
			}
			h.peerMax = int(v)
		}
	}
	// One acknowledgement per write for all the SETTINGS read before it:
	// a flood of them costs no memory.
	if !h.ackDue {
		h.ackDue = true
		h.wbuf = appendFrameHeader(h.wbuf, 0, h2Settings, h2FlagAck, 0)
	}
	return nil
}

func (h *h2Conn) handlePing(fh h2FrameHeader, p []byte) error {
	if fh.streamID != 0 {
		return h2ConnError(h2ProtocolError)
	}
	if len(p) != 8 {
		return h2ConnError(h2FrameSizeError)
	}
	if fh.has(h2FlagAck) {
		return nil
	}
	h.mu.Lock()
	h.wbuf = appendFrameHeader(h.wbuf, 8, h2Ping, h2FlagAck, 0)
	h.wbuf = append(h.wbuf, p...)
	h.queueControl()
	h.mu.Unlock()
	return nil
}

func (h *h2Conn) handleGoAway(fh h2FrameHeader, p []byte) error {
	if fh.streamID != 0 {
		return h2ConnError(h2ProtocolError)
	}
	if len(p) < 8 {
		return h2ConnError(h2FrameSizeError)
	}
	// The client opens no more streams: those open are finished, then
	// the connection closes.
	h.goAwayGraceful()
	return nil
}

func (h *h2Conn) handlePriority(fh h2FrameHeader, p []byte) error {
	if fh.streamID == 0 {
		return h2ConnError(h2ProtocolError)
	}
	if len(p) != 5 {
		h.resetStream(fh.streamID, h2FrameSizeError)
		return nil
	}
	if binary.BigEndian.Uint32(p)&(1<<31-1) == fh.streamID {
		h.resetStream(fh.streamID, h2ProtocolError) // §5.3.1: a stream cannot depend on itself
	}
	return nil // RFC 9113 deprecates the priority scheme: ignored
}

func (h *h2Conn) handleRSTStream(fh h2FrameHeader, p []byte) error {
	if fh.streamID == 0 {
		return h2ConnError(h2ProtocolError)
	}
	if len(p) != 4 {
		return h2ConnError(h2FrameSizeError)
	}
	if fh.streamID > h.maxID {
		return h2ConnError(h2ProtocolError) // §5.1: RST_STREAM on an idle stream
	}
	h.mu.Lock()
	if st := h.streams[fh.streamID]; st != nil {
		st.abortLocked(errH2StreamReset)
		h.closeStreamLocked(st)
	}
	h.mu.Unlock()
	return nil
}

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

// wasReset reports whether the server reset stream id recently.
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
	h.queueControl()
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

// handleHeaders starts a header block (RFC 9113 §6.2).
func (h *h2Conn) handleHeaders(fh h2FrameHeader, p []byte) error {
	id := fh.streamID
	if id == 0 || id%2 == 0 {
		return h2ConnError(h2ProtocolError) // §5.1.1: clients open odd streams
	}
	frag, err := unpad(fh, p)
	if err != nil {
		return h2ConnError(h2ProtocolError)
	}
	selfDep := false
	if fh.has(h2FlagPriority) {
		if len(frag) < 5 {
			return h2ConnError(h2FrameSizeError)
		}
		selfDep = binary.BigEndian.Uint32(frag)&(1<<31-1) == id
		frag = frag[5:]
	}
	h.blk.begin(id, fh.has(h2FlagEndStream))
	h.blk.selfDep = selfDep
	h.blk.maxFields = h.srv.limits().MaxHeaderCount
	return h.blockFragment(frag, fh.has(h2FlagEndHeaders))
}

// handleContinuation continues a header block (RFC 9113 §6.10).
func (h *h2Conn) handleContinuation(fh h2FrameHeader, p []byte) error {
	if !h.blk.active || fh.streamID != h.blk.id {
		return h2ConnError(h2ProtocolError)
	}
	return h.blockFragment(p, fh.has(h2FlagEndHeaders))
}

// blockFragment decodes a fragment of the header block; at its end it
// opens the stream (or takes the trailer).
func (h *h2Conn) blockFragment(frag []byte, end bool) error {
	b := &h.blk
	b.wire += len(frag)
	if b.wire > 2*h.maxList {
		// CVE-2024-27316: a block that keeps growing is not decoded on
		// and on for a request that is refused anyway.
		return h2ConnError(h2ProtocolError)
	}
	if _, err := h.dec.Write(frag); err != nil {
		return h2ConnError(h2CompressionError)
	}
	if !end {
		return nil
	}
	b.active = false
	if err := h.dec.Close(); err != nil {
		return h2ConnError(h2CompressionError)
	}
	h.dec.SetEmitEnabled(true)
	return h.endBlock()
}

// endBlock acts on a complete header block.
func (h *h2Conn) endBlock() error {
	b := &h.blk
	id := b.id
	h.mu.Lock()
	st := h.streams[id]
	newID := st == nil && id > h.maxID
	if newID {
		h.maxID = id // under mu: GOAWAY, sent from any goroutine, names it
	}
	goingAway := h.goAway
	h.mu.Unlock()
	switch {
	case st != nil:
		return h.trailer(st)
	case !newID && h.wasReset(id):
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

// trailer takes a header block on an open stream: the request's trailer
// section, which must end the stream (RFC 9113 §8.1).
func (h *h2Conn) trailer(st *h2Stream) error {
	b := &h.blk
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case st.remoteDone && st.localDone:
		// Closed, its handler not yet gone (§5.1: closed).
		return h2ConnError(h2StreamClosed)
	case st.remoteDone:
		h.resetStreamLocked(st.id, st, h2StreamClosed) // §5.1: half-closed (remote)
		return nil
	case !b.endStream || b.pseudo != 0 || b.malformed:
		h.resetStreamLocked(st.id, st, h2ProtocolError)
		return nil
	}
	if st.req.ContentLength >= 0 && st.received != st.req.ContentLength {
		h.resetStreamLocked(st.id, st, h2ProtocolError)
		return nil
	}
	if !b.tooBig {
		tr := make([]Field, len(b.fields))
		arena := append([]byte(nil), b.arena...)
		for i, f := range b.fields {
			tr[i] = Field{Name: arena[f.name[0]:f.name[1]:f.name[1]], Value: arena[f.value[0]:f.value[1]:f.value[1]]}
		}
		st.trailer = tr
	}
	h.endRemoteLocked(st)
	st.cond.Broadcast()
	return nil
}

// emit is the HPACK decoder's callback: it checks one field and adds it
// to the block (RFC 9113 §8.2, §8.3).
func (h *h2Conn) emit(f hpack.HeaderField) {
	b := &h.blk
	b.size += len(f.Name) + len(f.Value) + 32
	if b.size > h.maxList {
		b.tooBig = true
		h.dec.SetEmitEnabled(false) // decoded on (the table must stay in step), not kept
		return
	}
	name, value := f.Name, f.Value
	if len(name) > 0 && name[0] == ':' {
		if b.regular {
			b.malformed = true // §8.3: pseudo-header fields come first
			return
		}
		var bit uint8
		var slot *[2]int
		switch name {
		case ":method":
			bit, slot = h2Method, &b.method
		case ":scheme":
			bit, slot = h2Scheme, &b.scheme
		case ":path":
			bit, slot = h2Path, &b.path
		case ":authority":
			bit, slot = h2Authority, &b.authority
		default:
			b.malformed = true // unknown, or a response's (:status), or :protocol (not offered)
			return
		}
		if b.pseudo&bit != 0 {
			b.malformed = true
			return
		}
		b.pseudo |= bit
		*slot = b.add(value)
		return
	}
	b.regular = true
	if !h2ValidName(name) || !h2ValidValue(value) {
		b.malformed = true
		return
	}
	switch name {
	case "connection", "proxy-connection", "keep-alive", "transfer-encoding", "upgrade":
		b.malformed = true // §8.2.2: connection-specific
		return
	case "te":
		if value != "trailers" {
			b.malformed = true
			return
		}
	case "content-length":
		n, ok := httpgrammar.ParseContentLength(value)
		if !ok || b.clSeen && n != b.cl {
			b.malformed = true
			return
		}
		b.clSeen, b.cl = true, n
	case "host":
		b.host = len(b.fields)
	case "cookie":
		b.cookies++
	case "expect":
		addExpectations([]byte(value), &b.expectCont, &b.expectOther)
	}
	if len(b.fields) >= b.maxFields {
		b.tooMany = true
		return
	}
	b.fields = append(b.fields, h2FieldRef{b.addCanonical(name), b.add(value)})
}

// h2ValidName reports whether a field name is a lowercase token (RFC
// 9113 §8.2.1).
func h2ValidName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || !httpgrammar.IsTokenChar(c) {
			return false
		}
	}
	return true
}

// h2ValidValue reports whether a field value has no NUL, CR or LF and
// neither starts nor ends with whitespace (RFC 9113 §8.2.1).
func h2ValidValue(s string) bool {
	if s == "" {
		return true
	}
	if c := s[0]; c == ' ' || c == '\t' {
		return false
	}
	if c := s[len(s)-1]; c == ' ' || c == '\t' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == 0 || c == '\r' || c == '\n' {
			return false
		}
	}
	return true
}

// Pseudo-header field bits.
const (
	h2Method uint8 = 1 << iota
	h2Scheme
	h2Path
	h2Authority
)

// h2FieldRef is a field as [start, end) offsets of name and value in the
// block's arena.
type h2FieldRef struct{ name, value [2]int }

// h2Block is a header block as it is decoded: the fields' bytes in one
// arena, and what the checks found.
type h2Block struct {
	active    bool
	id        uint32
	endStream bool
	selfDep   bool
	wire      int // encoded bytes so far
	maxFields int // Limits.MaxHeaderCount as the block began
	size      int // decoded size, as SETTINGS_MAX_HEADER_LIST_SIZE counts it

	arena                           []byte
	fields                          []h2FieldRef
	method, scheme, path, authority [2]int
	pseudo                          uint8
	regular                         bool // a regular field came (no pseudo-header may follow)
	host                            int  // index in fields of host, or -1
	cookies                         int  // cookie fields
	clSeen                          bool
	cl                              int64
	expectCont, expectOther         bool
	malformed, tooBig, tooMany      bool
}

func (b *h2Block) begin(id uint32, endStream bool) {
	arena, fields := b.arena[:0], b.fields[:0]
	*b = h2Block{active: true, id: id, endStream: endStream, arena: arena, fields: fields, host: -1}
}

// addCanonical copies the lowercase field name s into the arena in the
// canonical form net/http gives names ("content-type" as
// "Content-Type"), as the engine handed HTTP/2 requests' fields to
// handlers when it served them through net/http, and returns its offsets.
func (b *h2Block) addCanonical(s string) [2]int {
	start := len(b.arena)
	upper := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if upper && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		upper = c == '-'
		b.arena = append(b.arena, c)
	}
	return [2]int{start, len(b.arena)}
}

// add copies s into the arena and returns its offsets.
func (b *h2Block) add(s string) [2]int {
	start := len(b.arena)
	b.arena = append(b.arena, s...)
	return [2]int{start, len(b.arena)}
}

// errH2Malformed marks a malformed request (RFC 9113 §8.1.1): its stream
// is reset with PROTOCOL_ERROR.
var errH2Malformed = errors.New("http2: malformed request")

// open opens stream id with the request in the block just decoded, and
// starts its handler, or queues it while MaxStreams handlers run.
func (h *h2Conn) open(id uint32) error {
	b := &h.blk
	h.mu.Lock()
	nopen := len(h.streams)
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
	if b.endStream {
		st.remoteDone = true
	}
	h.setIdleLocked()
	if h.running < h.lim.MaxStreams {
		h.running++
		go st.run()
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
		go st.run()
		break
	}
	h.setIdleLocked()
	h.cond.Broadcast()
}
