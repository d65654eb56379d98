package proxy

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluice-server/sluice/httpgrammar"
)

// The proxy's HTTP/2 client connection (h2ClientConn): one goroutine per
// connection reads its frames and hands them to their streams; a
// request's own goroutine encodes its head and writes it, with a small
// body known whole and its END_STREAM, in one write under the
// connection's write lock. Only a body that streams (unknown length, or
// larger than fits at once) has a goroutine of its own, which sends it
// as it comes, within the flow-control windows. The framing and HPACK
// are golang.org/x/net/http2's Framer (reading, which also decodes and
// checks header blocks, CONTINUATION included) and hpack.Encoder; frames
// are written by hand.

// The client's own settings.
const (
	// h2StreamWindow is each stream's receive window (the
	// SETTINGS_INITIAL_WINDOW_SIZE the client sends): the most response
	// body the upstream may send on a stream ahead of what the proxy
	// passed on, and so the bound on what a stream buffers. 4 MiB is
	// net/http's HTTP/2 client's figure. It must be large for two
	// reasons: a stream's throughput is at most a window per round
	// trip, and 4 MiB a round trip is 1 Gbit/s at 32 ms (the window is
	// credited back as each half of it is read, in Read); and an
	// HTTP/1.x client's request body is sent whole before its response
	// is read, so an upstream that answers as it reads (an echo, a
	// transform) may answer this much before it must wait for the proxy
	// to read. There is no config key: a smaller window costs
	// throughput and stalls such exchanges sooner, a larger one lets a
	// slow client pin more memory.
	h2StreamWindow = 4 << 20
	// h2ConnWindow is the connection's receive window (its initial 65535
	// raised at once by WINDOW_UPDATE), net/http's client's figure too.
	// 1 GiB is 256 streams' windows, more than max_streams' default of
	// 100 can fill, so the connection's window does not throttle
	// streams within theirs; what a connection buffers is bounded by
	// its streams' windows (max_streams × 4 MiB) and, past 256 streams,
	// by this.
	h2ConnWindow  = 1 << 30
	h2MaxFrame    = 16384 // SETTINGS_MAX_FRAME_SIZE (the default)
	h2SmallBody   = 16384 // a body known whole up to this size goes with its head
	h2PingEvery   = 30 * time.Second
	h2PingTimeout = 15 * time.Second
	h2DefaultConc = 100 // streams assumed allowed until the upstream's SETTINGS say
	h2MaxWindow   = 1<<31 - 1
)

// Errors of the client.
var (
	// errH2Refused is a stream the upstream did not process: refused
	// (REFUSED_STREAM), or above the last stream id of its GOAWAY. It is
	// safe to send again.
	errH2Refused = errors.New("proxy: the upstream did not process the stream (REFUSED_STREAM or GOAWAY)")
	errH2Closed  = errors.New("proxy: the HTTP/2 connection to the upstream closed")
	errH2Idle    = errors.New("proxy: the HTTP/2 connection to the upstream was idle")
	errH2Ping    = errors.New("proxy: the upstream did not answer a PING in time")
	errH2BadHead = errors.New("proxy: the upstream's response head is malformed")
	errH2BigHead = errors.New("proxy: the upstream's response head is too large")
	// errH2ManyFields and errH2ManyTrail are a response head and a
	// trailer section of more fields than max_header_count: the
	// HTTP/1.1 client's bound (parseResponseHead), which the byte bound
	// alone does not give: a head of 32 KiB, as
	// SETTINGS_MAX_HEADER_LIST_SIZE counts it (32 bytes a field besides
	// its name and value), holds 992 fields of a one-byte name and an
	// empty value.
	errH2ManyFields = errors.New("proxy: too many fields in the upstream's response head")
	errH2ManyTrail  = errors.New("proxy: too many fields in the upstream's trailer section")
	errH2ReqHead    = errors.New("proxy: the request head is larger than the upstream accepts")
)

// h2StreamError is a stream the upstream reset (RST_STREAM) with Code,
// or the client reset for a malformed response.
type h2StreamError struct {
	Code http2.ErrCode
	Err  error // what was wrong with the response, when the client reset it
}

func (e *h2StreamError) Error() string {
	if e.Err != nil {
		return e.Err.Error() + " (stream reset: " + e.Code.String() + ")"
	}
	return "proxy: the upstream reset the stream: " + e.Code.String()
}

func (e *h2StreamError) Unwrap() error { return e.Err }

// h2ClientConn is an HTTP/2 connection to an upstream. Its methods are
// safe for concurrent use. Lock order: wmu, then mu.
type h2ClientConn struct {
	nc      net.Conn
	fr      *http2.Framer // read by the reader goroutine only
	maxHead uint32        // our SETTINGS_MAX_HEADER_LIST_SIZE
	maxFlds int           // the most fields a response head or trailer section may have
	idleTO  time.Duration

	wmu  sync.Mutex // guards the writing of frames, and what follows
	wbuf []byte
	enc  *hpack.Encoder
	hbuf bytes.Buffer // the block enc writes

	mu         sync.Mutex
	streams    map[uint32]*h2Stream
	nextID     uint32
	maxConc    uint32 // the upstream's SETTINGS_MAX_CONCURRENT_STREAMS
	peerWindow int64  // the upstream's SETTINGS_INITIAL_WINDOW_SIZE
	peerFrame  uint32 // its SETTINGS_MAX_FRAME_SIZE
	peerList   uint32 // its SETTINGS_MAX_HEADER_LIST_SIZE (0: unbounded)
	sendWin    int64  // the connection's send window
	recvWin    int64  // what the upstream may still send on the connection
	recvCredit int64  // connection bytes consumed, not yet credited
	goAway     bool
	err        error // why the connection is unusable
	lastRead   time.Time
	pinged     bool          // a PING is out
	pingEvery  time.Duration // a PING goes after this long with nothing read
	pingTO     time.Duration // and c fails when nothing came this long after
	idle       *time.Timer
	ping       *time.Timer
	settings   chan struct{} // closed at the upstream's first SETTINGS
	gotSet     bool
	done       chan struct{} // closed when the reader ends
}

// h2Stream is one request's stream. Its fields are guarded by the
// connection's mu but for those set before it is shared.
type h2Stream struct {
	cc   *h2ClientConn
	id   uint32
	cond sync.Cond // on cc.mu: data, a window, the end

	sendWin    int64
	recvWin    int64 // what the upstream may still send
	recvCredit int64 // consumed, not yet credited
	data       []byte
	dataOff    int
	resp       *http.Response
	head       chan struct{} // closed when the head came or the stream failed
	headDone   bool
	contentLen int64 // the response's Content-Length, or -1
	received   int64
	remoteDone bool // END_STREAM received
	localDone  bool // END_STREAM sent
	err        error
	trailer    http.Header
	removed    bool
	isHead     bool
	stopCtx    func() bool
}

// newH2ClientConn starts HTTP/2 on nc (the preface and SETTINGS) and its
// reader, and waits until deadline for the upstream's SETTINGS. The
// response heads and trailer sections it accepts are bounded by maxHead
// bytes and maxFields fields each; it closes when idle for idleTO (0:
// never).
func newH2ClientConn(nc net.Conn, maxHead, maxFields int, idleTO time.Duration, deadline time.Time) (*h2ClientConn, error) {
	if maxHead <= 0 {
		maxHead = 64 << 10
	}
	if maxFields <= 0 {
		maxFields = DefaultMaxHeaderCount
	}
	cc := &h2ClientConn{
		nc:         nc,
		maxHead:    uint32(maxHead),
		maxFlds:    maxFields,
		idleTO:     idleTO,
		streams:    make(map[uint32]*h2Stream),
		nextID:     1,
		maxConc:    h2DefaultConc,
		peerWindow: 65535,
		peerFrame:  16384,
		sendWin:    65535,
		recvWin:    h2ConnWindow,
		lastRead:   time.Now(),
		pingEvery:  h2PingEvery,
		pingTO:     h2PingTimeout,
		settings:   make(chan struct{}),
		done:       make(chan struct{}),
	}
	cc.fr = http2.NewFramer(nil, bufio.NewReaderSize(nc, 16<<10))
	cc.fr.SetMaxReadFrameSize(h2MaxFrame)
	// The decoder's bound is looser than maxHead (a string past it is a
	// connection error, HPACK's): a head past maxHead fails its stream
	// alone (onHeaders), while memory stays bounded.
	cc.fr.MaxHeaderListSize = 4 * cc.maxHead
	cc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	cc.enc = hpack.NewEncoder(&cc.hbuf)

	b := append(cc.wbuf[:0], http2.ClientPreface...)
	b = appendFrameHeader(b, 3*6, http2.FrameSettings, 0, 0)
	b = appendSetting(b, http2.SettingEnablePush, 0)
	b = appendSetting(b, http2.SettingInitialWindowSize, h2StreamWindow)
	b = appendSetting(b, http2.SettingMaxHeaderListSize, uint32(maxHead))
	b = appendFrameHeader(b, 4, http2.FrameWindowUpdate, 0, 0)
	b = binary.BigEndian.AppendUint32(b, h2ConnWindow-65535)
	nc.SetDeadline(deadline)
	if _, err := nc.Write(b); err != nil {
		nc.Close()
		return nil, err
	}
	cc.wbuf = b[:0]
	go cc.readLoop()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-cc.settings:
	case <-cc.done:
	case <-t.C:
		cc.fail(errHeaderTimeoutSettings)
	}
	cc.mu.Lock()
	err := cc.err
	cc.mu.Unlock()
	if err != nil {
		<-cc.done
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	cc.mu.Lock()
	cc.ping = time.AfterFunc(cc.pingEvery, cc.checkAlive)
	cc.armIdleLocked()
	cc.mu.Unlock()
	return cc, nil
}

var errHeaderTimeoutSettings = errors.New("proxy: the upstream's HTTP/2 SETTINGS did not come in time")

// Err returns why c takes no more streams (failed, closing, idle), or
// nil.
func (c *h2ClientConn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && c.goAway {
		return errH2Refused
	}
	return c.err
}

// limit returns how many streams c may carry at once: the upstream's
// SETTINGS_MAX_CONCURRENT_STREAMS, or 0 once it takes no more.
func (c *h2ClientConn) limit() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.openLocked() {
		return 0
	}
	return int(c.maxConc)
}

// openLocked reports whether c may take a new stream (c.mu held): not
// failed, no GOAWAY, stream ids left.
func (c *h2ClientConn) openLocked() bool {
	return c.err == nil && !c.goAway && c.nextID <= 1<<31-1
}

// Close closes c; its streams fail.
func (c *h2ClientConn) Close() error {
	c.fail(errH2Closed)
	return nil
}

// fail makes c unusable with err (the first error stays), closes its
// socket, and fails its streams.
func (c *h2ClientConn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	for _, s := range c.streams {
		s.failLocked(c.err)
	}
	if c.ping != nil {
		c.ping.Stop()
	}
	if c.idle != nil {
		c.idle.Stop()
	}
	c.mu.Unlock()
	c.nc.Close()
}

// armIdleLocked starts the idle timer when c has no stream.
func (c *h2ClientConn) armIdleLocked() {
	if c.idleTO <= 0 || len(c.streams) > 0 || c.err != nil {
		return
	}
	if c.idle == nil {
		c.idle = time.AfterFunc(c.idleTO, func() {
			c.mu.Lock()
			idle := len(c.streams) == 0 && c.err == nil
			c.mu.Unlock()
			if idle {
				c.fail(errH2Idle) // acquire then gives its place back
			}
		})
		return
	}
	c.idle.Reset(c.idleTO)
}

// checkAlive sends a PING when nothing came for h2PingEvery, and closes
// c when the last one got no answer within h2PingTimeout.
func (c *h2ClientConn) checkAlive() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	since := time.Since(c.lastRead)
	switch {
	case c.pinged && since >= c.pingTO:
		c.mu.Unlock()
		c.fail(errH2Ping)
		return
	case c.pinged:
		c.ping.Reset(c.pingTO - since)
		c.mu.Unlock()
		return
	case since < c.pingEvery:
		c.ping.Reset(c.pingEvery - since)
		c.mu.Unlock()
		return
	}
	c.pinged = true
	c.lastRead = time.Now()
	c.ping.Reset(c.pingTO)
	c.mu.Unlock()
	// A write that holds the lock may be stuck (the upstream reads
	// nothing): the PING is then not sent, and its timeout ends c all
	// the same, closing the socket under that write.
	if c.wmu.TryLock() {
		var b [17]byte
		c.write(appendFrameHeader(b[:0], 8, http2.FramePing, 0, 0)[:17], true)
		c.wmu.Unlock()
	}
}

// write writes the frames in b (c.wmu held when locked is true); a
// failed write fails c.
func (c *h2ClientConn) write(b []byte, locked bool) error {
	if !locked {
		c.wmu.Lock()
		defer c.wmu.Unlock()
	}
	if _, err := c.nc.Write(b); err != nil {
		c.fail(err)
		return err
	}
	return nil
}

// h2Request is a request to send: its pseudo-header fields and the
// others (lower-case names), and its body: none, bytes known whole
// (small), or a reader streamed with its trailer fields at the end.
type h2Request struct {
	method, scheme, authority, path string
	fields                          []hpack.HeaderField
	body                            *h2BodyReader // nil: none
}

// roundTrip sends req on a new stream of c and returns the response
// once its head came. ctx ending (its cause) resets the stream. The
// response's Body must be closed, which resets the stream if it has not
// ended. An error wrapping errH2Refused means the upstream did not
// process the request.
func (c *h2ClientConn) roundTrip(ctx context.Context, req *h2Request) (*http.Response, error) {
	// A body known whole and small goes in the same write as the head.
	var small []byte
	whole := req.body == nil
	if req.body != nil {
		var err error
		if small, whole, err = req.body.takeWhole(); err != nil {
			return nil, err
		}
	}
	s := &h2Stream{cc: c, head: make(chan struct{}), contentLen: -1, isHead: req.method == http.MethodHead}
	s.cond.L = &c.mu
	s.stopCtx = context.AfterFunc(ctx, func() { s.reset(http2.ErrCodeCancel, context.Cause(ctx)) })

	c.wmu.Lock()
	c.mu.Lock()
	if !c.openLocked() || s.err != nil {
		cerr, serr := c.err, s.err
		s.removed = true
		c.mu.Unlock()
		c.wmu.Unlock()
		s.stopCtx()
		if serr != nil {
			return nil, serr // the call ended first
		}
		return nil, fmt.Errorf("%w: %w", errH2Refused, cmp.Or(cerr, errH2Closed))
	}
	s.id = c.nextID
	c.nextID += 2
	s.sendWin = c.peerWindow
	s.recvWin = h2StreamWindow
	c.streams[s.id] = s
	if c.idle != nil {
		c.idle.Stop()
	}
	peerFrame, peerList := int(c.peerFrame), c.peerList
	// The body goes now if the windows have room for it all.
	sendWhole := whole && int64(len(small)) <= min(s.sendWin, c.sendWin)
	if sendWhole {
		s.sendWin -= int64(len(small))
		c.sendWin -= int64(len(small))
	}
	c.mu.Unlock()

	// The head, in HEADERS and CONTINUATION frames.
	c.hbuf.Reset()
	size := uint32(0)
	field := func(name, value string) {
		size += uint32(len(name) + len(value) + 32)
		c.enc.WriteField(hpack.HeaderField{Name: name, Value: value})
	}
	field(":method", req.method)
	field(":scheme", req.scheme)
	field(":authority", req.authority)
	field(":path", req.path)
	for _, f := range req.fields {
		field(f.Name, f.Value)
	}
	if peerList > 0 && size > peerList {
		// The encoder's table has the fields, so the block goes (the
		// upstream's decoder must see it), and the stream is reset.
		c.wbuf = c.appendHeaders(c.wbuf[:0], s.id, c.hbuf.Bytes(), true, peerFrame)
		c.wbuf = appendRST(c.wbuf, s.id, http2.ErrCodeCancel)
		c.write(c.wbuf, true)
		c.wmu.Unlock()
		c.mu.Lock()
		s.failLocked(errH2ReqHead)
		c.removeLocked(s)
		c.mu.Unlock()
		return nil, errH2ReqHead
	}
	var tr []hpack.HeaderField
	if req.body != nil && sendWhole {
		tr = req.body.b.trailer
	}
	endStream := req.body == nil || sendWhole && len(small) == 0 && len(tr) == 0
	b := c.appendHeaders(c.wbuf[:0], s.id, c.hbuf.Bytes(), endStream, peerFrame)
	if sendWhole && !endStream {
		if len(tr) == 0 {
			b = appendData(b, s.id, small, peerFrame, true)
		} else {
			b = appendData(b, s.id, small, peerFrame, false)
			c.hbuf.Reset()
			for _, f := range tr {
				c.enc.WriteField(f)
			}
			b = c.appendHeaders(b, s.id, c.hbuf.Bytes(), true, peerFrame)
		}
		endStream = true
	}
	c.wbuf = b[:0]
	if endStream {
		c.mu.Lock()
		s.localDone = true
		c.mu.Unlock()
	}
	err := c.write(b, true)
	c.wmu.Unlock()
	if err != nil {
		s.close()
		if req.body == nil {
			// A head alone, cut or not, is no request the upstream
			// could have acted on.
			return nil, fmt.Errorf("%w: %w", errH2Refused, err)
		}
		return nil, err
	}
	if !endStream {
		go s.sendBody(req.body, small)
	}
	<-s.head
	c.mu.Lock()
	resp, err := s.resp, s.err
	c.mu.Unlock()
	if resp == nil {
		s.close()
		return nil, err
	}
	return resp, nil
}

// appendHeaders appends block as a HEADERS frame and CONTINUATION frames
// of at most maxFrame bytes each.
func (c *h2ClientConn) appendHeaders(b []byte, id uint32, block []byte, end bool, maxFrame int) []byte {
	typ := http2.FrameHeaders
	for first := true; first || len(block) > 0; first = false {
		n := min(len(block), maxFrame)
		var flags http2.Flags
		if first && end {
			flags |= http2.FlagHeadersEndStream
		}
		if n == len(block) {
			flags |= http2.FlagHeadersEndHeaders
		}
		b = appendFrameHeader(b, n, typ, flags, id)
		b = append(b, block[:n]...)
		block = block[n:]
		typ = http2.FrameContinuation
	}
	return b
}

// appendData appends p as DATA frames of at most maxFrame bytes, the
// last with END_STREAM when end is true.
func appendData(b []byte, id uint32, p []byte, maxFrame int, end bool) []byte {
	for first := true; first || len(p) > 0; first = false {
		n := min(len(p), maxFrame)
		var flags http2.Flags
		if end && n == len(p) {
			flags = http2.FlagDataEndStream
		}
		if n == 0 && !end {
			return b
		}
		b = appendFrameHeader(b, n, http2.FrameData, flags, id)
		b = append(b, p[:n]...)
		p = p[n:]
	}
	return b
}

func appendFrameHeader(b []byte, length int, t http2.FrameType, flags http2.Flags, id uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), byte(t), byte(flags),
		byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

func appendSetting(b []byte, id http2.SettingID, v uint32) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(id))
	return binary.BigEndian.AppendUint32(b, v)
}

func appendRST(b []byte, id uint32, code http2.ErrCode) []byte {
	b = appendFrameHeader(b, 4, http2.FrameRSTStream, 0, id)
	return binary.BigEndian.AppendUint32(b, uint32(code))
}

func appendWindowUpdate(b []byte, id uint32, n uint32) []byte {
	b = appendFrameHeader(b, 4, http2.FrameWindowUpdate, 0, id)
	return binary.BigEndian.AppendUint32(b, n)
}

// sendBody streams body on s (its own goroutine): DATA within the
// windows, then the trailer fields or an empty DATA with END_STREAM. A
// body that fails resets the stream.
func (s *h2Stream) sendBody(body *h2BodyReader, pending []byte) {
	defer func() {
		// The attempt's sending ended (an HTTP/1.x client's response
		// waits for it), unless another began.
		if body.current() {
			body.b.finish()
		}
	}()
	c := s.cc
	var buf []byte
	for {
		var p []byte
		var rerr error
		if len(pending) > 0 {
			p, pending = pending, nil
		} else {
			if buf == nil {
				buf = make([]byte, h2MaxFrame)
			}
			var n int
			n, rerr = body.Read(buf)
			p = buf[:n]
		}
		for len(p) > 0 {
			c.mu.Lock()
			for s.err == nil && !s.remoteDone && (s.sendWin <= 0 || c.sendWin <= 0) {
				s.cond.Wait()
			}
			if s.err != nil || s.remoteDone {
				// Reset, failed, or answered whole: the rest is not
				// wanted (RFC 9113 §8.1).
				end := s.err == nil && !s.removed
				if end {
					s.localDone = true
					c.removeLocked(s)
				}
				c.mu.Unlock()
				if end {
					var b [13]byte
					c.write(appendRST(b[:0], s.id, http2.ErrCodeNo), false)
				}
				return
			}
			n := int(min(int64(len(p)), s.sendWin, c.sendWin, int64(c.peerFrame)))
			s.sendWin -= int64(n)
			c.sendWin -= int64(n)
			c.mu.Unlock()
			c.wmu.Lock()
			c.mu.Lock()
			gone := s.err != nil || s.removed // reset meanwhile: no DATA after RST_STREAM
			c.mu.Unlock()
			if gone {
				c.wmu.Unlock()
				return
			}
			c.wbuf = appendData(c.wbuf[:0], s.id, p[:n], n, false)
			err := c.write(c.wbuf, true)
			c.wmu.Unlock()
			if err != nil {
				return
			}
			p = p[n:]
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			s.reset(http2.ErrCodeCancel, rerr)
			return
		}
	}
	c.wmu.Lock()
	c.mu.Lock()
	gone := s.err != nil || s.removed
	peerFrame := int(c.peerFrame)
	c.mu.Unlock()
	if gone {
		c.wmu.Unlock()
		return
	}
	if tr := body.b.trailer; len(tr) > 0 {
		c.hbuf.Reset()
		for _, f := range tr {
			c.enc.WriteField(f)
		}
		c.wbuf = c.appendHeaders(c.wbuf[:0], s.id, c.hbuf.Bytes(), true, peerFrame)
	} else {
		c.wbuf = appendData(c.wbuf[:0], s.id, nil, peerFrame, true)
	}
	err := c.write(c.wbuf, true)
	c.wmu.Unlock()
	if err == nil {
		c.mu.Lock()
		s.localDone = true
		if s.remoteDone && s.err == nil {
			c.removeLocked(s)
		}
		c.mu.Unlock()
	}
}

// failLocked ends s with err (the first error stays).
func (s *h2Stream) failLocked(err error) {
	if s.err == nil {
		s.err = err
	}
	if !s.headDone {
		s.headDone = true
		close(s.head)
	}
	s.cond.Broadcast()
}

// removeLocked takes s out of its connection's streams; the
// connection-level window its unread data held is credited back.
func (c *h2ClientConn) removeLocked(s *h2Stream) {
	if s.removed {
		return
	}
	s.removed = true
	delete(c.streams, s.id)
	if s.stopCtx != nil {
		s.stopCtx()
	}
	c.armIdleLocked()
}

// reset resets s (RST_STREAM code) unless it ended, failing it with err
// (nil: it is over as it should be).
func (s *h2Stream) reset(code http2.ErrCode, err error) {
	c := s.cc
	c.wmu.Lock()
	c.mu.Lock()
	if s.removed || s.id == 0 {
		if s.id == 0 {
			s.failLocked(err) // not sent yet: roundTrip sees it
		}
		c.mu.Unlock()
		c.wmu.Unlock()
		return
	}
	s.failLocked(err)
	c.removeLocked(s)
	c.mu.Unlock()
	var b [13]byte
	c.write(appendRST(b[:0], s.id, code), true)
	c.wmu.Unlock()
}

// close ends s when its response is done with: reset if either side
// has not ended.
func (s *h2Stream) close() {
	c := s.cc
	c.mu.Lock()
	done := s.removed || s.err != nil || s.remoteDone && s.localDone
	if done {
		c.removeLocked(s)
	}
	// Data not read is credited back to the connection.
	c.recvCredit += int64(len(s.data) - s.dataOff)
	s.data, s.dataOff = nil, 0
	c.mu.Unlock()
	if !done {
		s.reset(http2.ErrCodeCancel, errH2Closed)
	}
	c.creditConn()
}

// creditConn sends the connection's WINDOW_UPDATE once half its window
// was consumed.
func (c *h2ClientConn) creditConn() {
	c.mu.Lock()
	n := c.recvCredit
	if n < h2ConnWindow/2 || c.err != nil {
		c.mu.Unlock()
		return
	}
	c.recvCredit = 0
	c.recvWin += n
	c.mu.Unlock()
	var b [13]byte
	c.write(appendWindowUpdate(b[:0], 0, uint32(n)), false)
}

// h2RespBody is a response body: its stream's data as it comes.
type h2RespBody struct{ s *h2Stream }

// Read implements io.Reader; at io.EOF the trailer fields are in the
// response's Trailer.
func (b h2RespBody) Read(p []byte) (int, error) {
	s := b.s
	c := s.cc
	c.mu.Lock()
	for s.dataOff == len(s.data) && s.err == nil && !s.remoteDone {
		s.cond.Wait()
	}
	if s.dataOff == len(s.data) {
		err := s.err
		if err == nil {
			// Ended well.
			if s.trailer != nil {
				s.resp.Trailer = s.trailer
				s.trailer = nil
			}
			c.mu.Unlock()
			return 0, io.EOF
		}
		c.mu.Unlock()
		return 0, err
	}
	n := copy(p, s.data[s.dataOff:])
	s.dataOff += n
	if s.dataOff == len(s.data) {
		s.data, s.dataOff = s.data[:0], 0
	}
	s.recvCredit += int64(n)
	c.recvCredit += int64(n)
	var credit int64
	if s.recvCredit >= h2StreamWindow/2 && !s.remoteDone && !s.removed {
		credit, s.recvCredit = s.recvCredit, 0
		s.recvWin += credit
	}
	var conn int64
	if c.recvCredit >= h2ConnWindow/2 {
		conn, c.recvCredit = c.recvCredit, 0
		c.recvWin += conn
	}
	c.mu.Unlock()
	if credit > 0 || conn > 0 {
		var buf [26]byte
		w := buf[:0]
		if conn > 0 {
			w = appendWindowUpdate(w, 0, uint32(conn))
		}
		if credit > 0 {
			w = appendWindowUpdate(w, s.id, uint32(credit))
		}
		c.write(w, false)
	}
	return n, nil
}

// more reports whether more of the response has come, data or its
// end, so that a Read would not wait; false once the stream failed
// (what came before is then flushed, and the response seen cut).
func (b h2RespBody) more() bool {
	c := b.s.cc
	c.mu.Lock()
	defer c.mu.Unlock()
	return b.s.err == nil && (b.s.dataOff < len(b.s.data) || b.s.remoteDone)
}

// Close implements io.Closer: the stream is reset unless it ended.
func (b h2RespBody) Close() error {
	b.s.close()
	return nil
}

// readLoop reads c's frames until it fails, and hands them to their
// streams.
func (c *h2ClientConn) readLoop() {
	defer close(c.done)
	err := c.readFrames()
	c.mu.Lock()
	failed := c.err != nil
	c.mu.Unlock()
	if !failed && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		// A connection error of the upstream's: GOAWAY with its code.
		code := http2.ErrCodeProtocol
		var ce http2.ConnectionError
		if errors.As(err, &ce) {
			code = http2.ErrCode(ce)
		} else if errors.Is(err, http2.ErrFrameTooLarge) {
			code = http2.ErrCodeFrameSize
		}
		var b [17]byte
		w := appendFrameHeader(b[:0], 8, http2.FrameGoAway, 0, 0)
		w = binary.BigEndian.AppendUint32(w, 0)
		w = binary.BigEndian.AppendUint32(w, uint32(code))
		c.write(w, false)
	}
	c.fail(fmt.Errorf("%w: %w", errH2Closed, err))
}

// connError is a connection error (RFC 9113 §5.4.1).
func connError(code http2.ErrCode) error { return http2.ConnectionError(code) }

func (c *h2ClientConn) readFrames() error {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				// A malformed head (the decoder's checks): the stream
				// fails, 502; the connection goes on.
				c.streamFailed(se.StreamID, se.Code, errH2BadHead)
				continue
			}
			return err
		}
		c.mu.Lock()
		c.lastRead = time.Now()
		c.pinged = false
		first := !c.gotSet
		c.mu.Unlock()
		if first {
			if _, ok := f.(*http2.SettingsFrame); !ok {
				return connError(http2.ErrCodeProtocol) // §3.4: SETTINGS first
			}
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if err := c.onHeaders(f); err != nil {
				return err
			}
		case *http2.DataFrame:
			if err := c.onData(f); err != nil {
				return err
			}
		case *http2.SettingsFrame:
			if err := c.onSettings(f); err != nil {
				return err
			}
		case *http2.WindowUpdateFrame:
			if err := c.onWindowUpdate(f); err != nil {
				return err
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				var b [17]byte
				w := appendFrameHeader(b[:0], 8, http2.FramePing, http2.FlagPingAck, 0)
				w = append(w, f.Data[:]...)
				c.write(w, false)
			}
		case *http2.GoAwayFrame:
			c.onGoAway(f)
		case *http2.RSTStreamFrame:
			if err := c.onReset(f); err != nil {
				return err
			}
		case *http2.PushPromiseFrame:
			return connError(http2.ErrCodeProtocol) // push is off
		}
	}
}

// stream returns the open stream id, or nil; an id never opened is a
// connection error.
func (c *h2ClientConn) streamLocked(id uint32) (*h2Stream, error) {
	if id%2 == 0 || id >= c.nextID {
		return nil, connError(http2.ErrCodeProtocol)
	}
	return c.streams[id], nil
}

// streamFailed resets stream id for a malformed response.
func (c *h2ClientConn) streamFailed(id uint32, code http2.ErrCode, err error) {
	c.mu.Lock()
	s := c.streams[id]
	c.mu.Unlock()
	if s != nil {
		s.reset(code, &h2StreamError{Code: code, Err: err})
	}
}

func (c *h2ClientConn) onHeaders(f *http2.MetaHeadersFrame) error {
	c.mu.Lock()
	s, err := c.streamLocked(f.StreamID)
	if err != nil || s == nil {
		c.mu.Unlock()
		return err // (a stream reset: its head is dropped)
	}
	if s.remoteDone {
		c.mu.Unlock()
		return connError(http2.ErrCodeStreamClosed)
	}
	if s.headDone {
		// Trailer fields: END_STREAM, no pseudo-header field.
		if !f.StreamEnded() || f.PseudoValue("status") != "" || f.Truncated || headSize(f.Fields) > c.maxHead {
			c.mu.Unlock()
			c.streamFailed(f.StreamID, http2.ErrCodeProtocol, errH2BadHead)
			return nil
		}
		if n := len(f.Fields); n > c.maxFlds {
			c.mu.Unlock()
			c.streamFailed(f.StreamID, http2.ErrCodeCancel, fmt.Errorf("%w: %d, over max_header_count %d", errH2ManyTrail, n, c.maxFlds))
			return nil
		}
		tr := make(http.Header, len(f.Fields))
		for _, hf := range f.RegularFields() {
			k := http.CanonicalHeaderKey(hf.Name)
			tr[k] = append(tr[k], hf.Value)
		}
		s.trailer = tr
		c.endRemoteLocked(s)
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	if f.Truncated || headSize(f.Fields) > c.maxHead {
		c.streamFailed(f.StreamID, http2.ErrCodeCancel, errH2BigHead)
		return nil
	}
	if n := len(f.RegularFields()); n > c.maxFlds {
		c.streamFailed(f.StreamID, http2.ErrCodeCancel, fmt.Errorf("%w: %d, over max_header_count %d", errH2ManyFields, n, c.maxFlds))
		return nil
	}
	st := f.PseudoValue("status")
	code, perr := strconv.Atoi(st)
	if len(st) != 3 || perr != nil || code < 100 {
		c.streamFailed(f.StreamID, http2.ErrCodeProtocol, errH2BadHead)
		return nil
	}
	if code < 200 {
		if f.StreamEnded() || code == 101 {
			c.streamFailed(f.StreamID, http2.ErrCodeProtocol, errH2BadHead)
		}
		return nil // interim: the final head follows
	}
	regular := f.RegularFields()
	resp := &http.Response{
		Status:        st + " " + http.StatusText(code),
		StatusCode:    code,
		Proto:         "HTTP/2.0",
		ProtoMajor:    2,
		Header:        make(http.Header, len(regular)),
		ContentLength: -1,
	}
	for _, hf := range regular {
		k := http.CanonicalHeaderKey(hf.Name)
		resp.Header[k] = append(resp.Header[k], hf.Value)
	}
	cl := int64(-1)
	if v := resp.Header["Content-Length"]; len(v) == 1 {
		n, ok := httpgrammar.ParseContentLength(v[0])
		if !ok {
			c.streamFailed(f.StreamID, http2.ErrCodeProtocol, errH2BadHead)
			return nil
		}
		cl = n
	} else if len(v) > 1 {
		c.streamFailed(f.StreamID, http2.ErrCodeProtocol, errH2BadHead)
		return nil
	}
	for _, v := range resp.Header["Trailer"] {
		for name := range bytes.SplitSeq([]byte(v), []byte(",")) {
			if name = bytes.TrimSpace(name); len(name) > 0 {
				if resp.Trailer == nil {
					resp.Trailer = make(http.Header)
				}
				resp.Trailer[http.CanonicalHeaderKey(string(name))] = nil
			}
		}
	}
	if f.StreamEnded() {
		if !s.isHead && code != http.StatusNotModified {
			if cl > 0 {
				c.streamFailed(f.StreamID, http2.ErrCodeProtocol, errH2BadHead)
				return nil
			}
			cl = 0
		}
	}
	resp.ContentLength = cl
	c.mu.Lock()
	if s.removed {
		c.mu.Unlock()
		return nil
	}
	s.contentLen = cl
	resp.Body = h2RespBody{s}
	s.resp = resp
	s.headDone = true
	close(s.head)
	if f.StreamEnded() {
		c.endRemoteLocked(s)
	}
	c.mu.Unlock()
	return nil
}

// headSize is the size of fields as SETTINGS_MAX_HEADER_LIST_SIZE
// counts it (RFC 9113 §6.5.2).
func headSize(fields []hpack.HeaderField) uint32 {
	n := uint32(0)
	for _, f := range fields {
		n += f.Size()
	}
	return n
}

// endRemoteLocked records the upstream's END_STREAM on s.
func (c *h2ClientConn) endRemoteLocked(s *h2Stream) {
	if s.contentLen >= 0 && s.received != s.contentLen && !s.isHead && s.resp.StatusCode != 304 {
		s.failLocked(&h2StreamError{Code: http2.ErrCodeProtocol, Err: errH2BadHead})
		c.removeLocked(s)
		return
	}
	s.remoteDone = true
	s.cond.Broadcast()
	if s.localDone {
		c.removeLocked(s)
	}
}

func (c *h2ClientConn) onData(f *http2.DataFrame) error {
	n := int64(f.Length)
	c.mu.Lock()
	if n > c.recvWin {
		c.mu.Unlock()
		return connError(http2.ErrCodeFlowControl)
	}
	c.recvWin -= n
	s, err := c.streamLocked(f.StreamID)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	data := f.Data()
	if s == nil || s.err != nil {
		c.recvCredit += n // not for anyone: credited back at once
		c.mu.Unlock()
		c.creditConn()
		return nil
	}
	if !s.headDone || s.resp == nil || s.remoteDone {
		c.recvCredit += n
		c.mu.Unlock()
		if s.remoteDone {
			return connError(http2.ErrCodeStreamClosed)
		}
		c.streamFailed(f.StreamID, http2.ErrCodeProtocol, errH2BadHead)
		return nil
	}
	if n > s.recvWin {
		c.recvCredit += n
		c.mu.Unlock()
		c.streamFailed(f.StreamID, http2.ErrCodeFlowControl, errors.New("proxy: the upstream sent past the stream's window"))
		return nil
	}
	s.recvWin -= n
	c.recvCredit += n - int64(len(data)) // padding
	s.received += int64(len(data))
	if s.contentLen >= 0 && s.received > s.contentLen || s.isHead && len(data) > 0 {
		c.mu.Unlock()
		c.streamFailed(f.StreamID, http2.ErrCodeProtocol, errH2BadHead)
		return nil
	}
	if s.dataOff > 0 && len(s.data)+len(data) > cap(s.data) {
		m := copy(s.data, s.data[s.dataOff:])
		s.data, s.dataOff = s.data[:m], 0
	}
	s.data = append(s.data, data...)
	s.cond.Broadcast()
	if f.StreamEnded() {
		c.endRemoteLocked(s)
	}
	c.mu.Unlock()
	return nil
}

func (c *h2ClientConn) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	if err := f.ForeachSetting(func(st http2.Setting) error { return st.Valid() }); err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	err := f.ForeachSetting(func(st http2.Setting) error {
		switch st.ID {
		case http2.SettingMaxConcurrentStreams:
			c.maxConc = st.Val
		case http2.SettingInitialWindowSize:
			delta := int64(st.Val) - c.peerWindow
			c.peerWindow = int64(st.Val)
			for _, s := range c.streams {
				s.sendWin += delta
				if s.sendWin > h2MaxWindow {
					return connError(http2.ErrCodeFlowControl)
				}
				s.cond.Broadcast()
			}
		case http2.SettingMaxFrameSize:
			c.peerFrame = st.Val
		case http2.SettingMaxHeaderListSize:
			c.peerList = st.Val
		case http2.SettingHeaderTableSize:
			c.enc.SetMaxDynamicTableSizeLimit(st.Val)
		}
		return nil
	})
	if !c.gotSet {
		c.gotSet = true
		close(c.settings)
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	var b [9]byte
	return c.write(appendFrameHeader(b[:0], 0, http2.FrameSettings, http2.FlagSettingsAck, 0), true)
}

func (c *h2ClientConn) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.StreamID == 0 {
		c.sendWin += int64(f.Increment)
		if c.sendWin > h2MaxWindow {
			return connError(http2.ErrCodeFlowControl)
		}
		for _, s := range c.streams {
			s.cond.Broadcast()
		}
		return nil
	}
	s, err := c.streamLocked(f.StreamID)
	if err != nil || s == nil {
		return err
	}
	s.sendWin += int64(f.Increment)
	if s.sendWin > h2MaxWindow {
		c.mu.Unlock()
		c.streamFailed(f.StreamID, http2.ErrCodeFlowControl, errors.New("proxy: the upstream's window overflowed"))
		c.mu.Lock()
		return nil
	}
	s.cond.Broadcast()
	return nil
}

func (c *h2ClientConn) onGoAway(f *http2.GoAwayFrame) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.goAway = true
	for id, s := range c.streams {
		if id > f.LastStreamID {
			// Not processed: sent again elsewhere.
			s.failLocked(errH2Refused)
			c.removeLocked(s)
		}
	}
}

func (c *h2ClientConn) onReset(f *http2.RSTStreamFrame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.streamLocked(f.StreamID)
	if err != nil || s == nil {
		return err
	}
	if f.ErrCode == http2.ErrCodeRefusedStream {
		s.failLocked(errH2Refused)
	} else if f.ErrCode == http2.ErrCodeNo && s.remoteDone {
		// It answered whole and wants no more of the body.
		s.localDone = true
		s.cond.Broadcast()
	} else {
		s.failLocked(&h2StreamError{Code: f.ErrCode})
	}
	c.removeLocked(s)
	return nil
}
