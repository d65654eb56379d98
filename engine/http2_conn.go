package engine

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2/hpack"
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
//
// What is queued is bounded, whatever the frames: a handler waits before
// it queues HEADERS, DATA or trailers while h2MaxBuffered or more is
// queued; a stream keeps its place under MaxStreams until its last frame
// is written, not merely queued; and the reader does not read on while
// h2MaxBuffered or more is queued (readerKick), so that a client that does
// not read stops the server reading, as on HTTP/1.x, and holds at most
// twice h2MaxBuffered (what is queued, and the write under way) and a
// frame or header block more. The frames the server answers a client's
// own with (PING acknowledgements, RST_STREAM) are bounded apart, by
// h2MaxControl, past which the connection is cut off (queueControl).

// h2Conn is one HTTP/2 connection.
type h2Conn struct {
	c    *conn
	srv  *Server
	nc   net.Conn // reads return the bytes read before HTTP/2 began first
	lim  Limits   // as the connection began: its SETTINGS cannot change
	h    Handler
	idle bool // the timeout manager counts the connection idle

	// Handlers handed to a task runner that have not begun to run: they
	// are runnable, so a write that waits for them waits for no I/O.
	unstarted atomic.Int32

	// Used by the reader goroutine alone.
	rd          h2Reader
	dec         *hpack.Decoder
	blk         h2Block // the header block being received
	maxID       uint32  // the highest stream id the client opened
	maxList     int     // SETTINGS_MAX_HEADER_LIST_SIZE the server sent
	sawSettings bool
	settings    int // SETTINGS frames and entries since the client last opened a stream

	mu        sync.Mutex
	cond      sync.Cond // signalled when windows open, output drains, or streams end
	streams   map[uint32]*h2Stream
	running   int         // handlers running, those of reset streams included
	queued    []*h2Stream // streams waiting for a handler slot
	reset     [16]uint32  // streams the server reset recently: their late frames are dropped
	resetAt   int         // the next slot in reset
	enc       *h2Encoder
	encBuf    h2BlockBuf
	writeSoon func()     // writeClaimed(true), bound once: flushSoonLocked's task
	writeNow  func()     // writeClaimed(false), bound once: kickLocked's task
	sendWin   int64      // the connection's send window
	peerWin   int64      // the client's SETTINGS_INITIAL_WINDOW_SIZE
	peerMax   int        // the client's SETTINGS_MAX_FRAME_SIZE
	unacked   int64      // body bytes consumed and not yet returned to the client's window
	recvWin   int64      // what the client may still send on the connection
	wbuf      []byte     // frames to write
	spare     []byte     // the other output buffer, while wbuf is written
	boxes     [2]*[]byte // from h2OutPool while the connection is busy
	writing   bool       // a goroutine is writing
	control   int        // control frames queued since the last write ended
	ctlBytes  int        // the bytes of those frames in wbuf
	ackDue    bool       // a SETTINGS ACK is in wbuf
	werr      error      // the connection failed: nothing more is written
	goAway    bool       // GOAWAY sent: no new streams
	lastID    uint32     // the last stream id GOAWAY said would be served
	closing   bool       // the connection closes once its streams end
	inflight  int        // the bytes of the write under way
	wgen      uint64     // frames queued now leave with the wgen-th write
	holdNext  int        // streams ended whose last frame is in wbuf: their slots are not free yet
	holdOut   int        // streams ended whose last frame is in the write under way
	readWait  bool       // the reader waits for the output to drain before it reads on
	roomWait  int        // handlers waiting for room in the output (waitRoomLocked)

	lastLen     int64 // the last Content-Length sent, and its text
	lastLenText string
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
		wgen:    1,
	}
	h.cond.L = &h.mu
	h.maxList = h.lim.MaxHeaderBytes + h2HeaderListSlack
	h.dec = hpack.NewDecoder(4096, h.emit)
	h.dec.SetMaxStringLength(h.maxList)
	h.enc = newH2Encoder(&h.encBuf)
	h.writeSoon = func() { h.writeClaimed(true) }
	h.writeNow = func() { h.writeClaimed(false) }
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
			h.readerKick()
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
	h.queueControl(h2FrameHeaderLen + 8)
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
