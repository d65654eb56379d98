package engine

import (
	"encoding/binary"
	"errors"
	"io"
	"sync"
)

// HTTP/2 framing (RFC 9113 §4, §6): the frame types, flags, error codes
// and settings the engine's server uses, a reader of frames from a
// connection and functions appending frames to an output buffer.

type h2FrameType uint8

const (
	h2Data         h2FrameType = 0x0
	h2Headers      h2FrameType = 0x1
	h2Priority     h2FrameType = 0x2
	h2RSTStream    h2FrameType = 0x3
	h2Settings     h2FrameType = 0x4
	h2PushPromise  h2FrameType = 0x5
	h2Ping         h2FrameType = 0x6
	h2GoAway       h2FrameType = 0x7
	h2WindowUpdate h2FrameType = 0x8
	h2Continuation h2FrameType = 0x9
)

// Frame flags.
const (
	h2FlagEndStream  = 0x1 // DATA, HEADERS
	h2FlagAck        = 0x1 // SETTINGS, PING
	h2FlagEndHeaders = 0x4 // HEADERS, CONTINUATION
	h2FlagPadded     = 0x8 // DATA, HEADERS
	h2FlagPriority   = 0x20
)

// h2ErrCode is an HTTP/2 error code (RFC 9113 §7).
type h2ErrCode uint32

const (
	h2NoError            h2ErrCode = 0x0
	h2ProtocolError      h2ErrCode = 0x1
	h2InternalError      h2ErrCode = 0x2
	h2FlowControlError   h2ErrCode = 0x3
	h2SettingsTimeout    h2ErrCode = 0x4
	h2StreamClosed       h2ErrCode = 0x5
	h2FrameSizeError     h2ErrCode = 0x6
	h2RefusedStream      h2ErrCode = 0x7
	h2Cancel             h2ErrCode = 0x8
	h2CompressionError   h2ErrCode = 0x9
	h2ConnectError       h2ErrCode = 0xa
	h2EnhanceYourCalm    h2ErrCode = 0xb
	h2InadequateSecurity h2ErrCode = 0xc
	h2HTTP11Required     h2ErrCode = 0xd
)

// Settings identifiers (RFC 9113 §6.5.2).
const (
	h2SettingHeaderTableSize      = 0x1
	h2SettingEnablePush           = 0x2
	h2SettingMaxConcurrentStreams = 0x3
	h2SettingInitialWindowSize    = 0x4
	h2SettingMaxFrameSize         = 0x5
	h2SettingMaxHeaderListSize    = 0x6
)

const (
	h2FrameHeaderLen  = 9
	h2MinMaxFrameSize = 1 << 14   // the default and least SETTINGS_MAX_FRAME_SIZE
	h2MaxMaxFrameSize = 1<<24 - 1 // the largest
	h2MaxWindow       = 1<<31 - 1 // the largest flow-control window (§6.9.1)
	h2DefaultWindow   = 65535     // every window's initial size (§6.9.2)
)

// h2ClientPreface is what an HTTP/2 client sends first (RFC 9113 §3.4).
const h2ClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// h2ConnError is a connection error (RFC 9113 §5.4.1): the connection
// ends with GOAWAY carrying the code.
type h2ConnError h2ErrCode

func (e h2ConnError) Error() string { return "http2: connection error " + h2ErrCode(e).String() }

func (c h2ErrCode) String() string {
	names := [...]string{"NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR",
		"SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL",
		"COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY",
		"HTTP_1_1_REQUIRED"}
	if int(c) < len(names) {
		return names[c]
	}
	return "unknown"
}

// h2FrameHeader is a frame's nine-octet header (RFC 9113 §4.1).
type h2FrameHeader struct {
	length   uint32
	typ      h2FrameType
	flags    uint8
	streamID uint32
}

func (h h2FrameHeader) has(flag uint8) bool { return h.flags&flag != 0 }

// h2ReadBufSize is the size of a connection's read buffer: a frame of the
// largest size the server accepts (SETTINGS_MAX_FRAME_SIZE, left at its
// default) with its header, and room for the next frames.
const h2ReadBufSize = 32 << 10

var h2ReadBufPool = sync.Pool{New: func() any { b := make([]byte, h2ReadBufSize); return &b }}

// h2Reader reads frames from a connection. It holds a pooled buffer only
// while there is something to read: before it waits for the next frame
// with nothing buffered and the connection idle (idle reports it), it
// gives the buffer back and waits with a few bytes of its own, so an idle
// connection keeps no read buffer.
type h2Reader struct {
	src  io.Reader
	buf  *[]byte // nil while idle
	r, w int
	idle func() bool
}

// errH2FrameSize reports a frame larger than the server's
// SETTINGS_MAX_FRAME_SIZE.
var errH2FrameSize = h2ConnError(h2FrameSizeError)

// readFrame returns the next frame's header and payload; the payload is a
// view into the reader's buffer, valid until the next call.
func (rd *h2Reader) readFrame() (h2FrameHeader, []byte, error) {
	if err := rd.need(h2FrameHeaderLen); err != nil {
		return h2FrameHeader{}, nil, err
	}
	b := (*rd.buf)[rd.r:]
	fh := h2FrameHeader{
		length:   uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]),
		typ:      h2FrameType(b[3]),
		flags:    b[4],
		streamID: binary.BigEndian.Uint32(b[5:9]) & (1<<31 - 1),
	}
	if fh.length > h2MinMaxFrameSize {
		return fh, nil, errH2FrameSize
	}
	n := h2FrameHeaderLen + int(fh.length)
	if err := rd.need(n); err != nil {
		return fh, nil, err
	}
	p := (*rd.buf)[rd.r+h2FrameHeaderLen : rd.r+n]
	rd.r += n
	return fh, p, nil
}

// buffered reports whether a whole frame is buffered (so reading it will
// not wait).
func (rd *h2Reader) buffered() bool {
	if rd.buf == nil || rd.w-rd.r < h2FrameHeaderLen {
		return false
	}
	b := (*rd.buf)[rd.r:]
	length := int(b[0])<<16 | int(b[1])<<8 | int(b[2])
	return rd.w-rd.r >= h2FrameHeaderLen+length
}

// need reads until n bytes are buffered at r.
func (rd *h2Reader) need(n int) error {
	for rd.w-rd.r < n {
		if rd.r == rd.w && rd.idle() {
			rd.release()
			var small [h2FrameHeaderLen]byte
			m, err := rd.src.Read(small[:])
			if m == 0 {
				if err == nil {
					err = io.ErrNoProgress
				}
				return err
			}
			rd.acquire()
			rd.w = copy(*rd.buf, small[:m])
			continue
		}
		rd.acquire()
		if rd.r+n > len(*rd.buf) {
			rd.w = copy(*rd.buf, (*rd.buf)[rd.r:rd.w])
			rd.r = 0
		}
		m, err := rd.src.Read((*rd.buf)[rd.w:])
		rd.w += m
		if m == 0 {
			if err == nil {
				err = io.ErrNoProgress
			}
			return err
		}
	}
	return nil
}

func (rd *h2Reader) acquire() {
	if rd.buf == nil {
		rd.buf = h2ReadBufPool.Get().(*[]byte)
		rd.r, rd.w = 0, 0
	}
}

func (rd *h2Reader) release() {
	if rd.buf != nil {
		h2ReadBufPool.Put(rd.buf)
		rd.buf = nil
		rd.r, rd.w = 0, 0
	}
}

// discard reads and drops whatever arrives until the read fails (the
// client closes, or a deadline set on the connection passes).
func (rd *h2Reader) discard() {
	rd.acquire()
	for {
		if _, err := rd.src.Read(*rd.buf); err != nil {
			return
		}
	}
}

// appendFrameHeader appends a frame header for a payload of length bytes.
func appendFrameHeader(b []byte, length int, typ h2FrameType, flags uint8, streamID uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), byte(typ), flags,
		byte(streamID>>24), byte(streamID>>16), byte(streamID>>8), byte(streamID))
}

func appendUint32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func appendRSTStream(b []byte, id uint32, code h2ErrCode) []byte {
	b = appendFrameHeader(b, 4, h2RSTStream, 0, id)
	return appendUint32(b, uint32(code))
}

func appendWindowUpdate(b []byte, id uint32, incr uint32) []byte {
	b = appendFrameHeader(b, 4, h2WindowUpdate, 0, id)
	return appendUint32(b, incr)
}

func appendGoAway(b []byte, lastID uint32, code h2ErrCode) []byte {
	b = appendFrameHeader(b, 8, h2GoAway, 0, 0)
	b = appendUint32(b, lastID)
	return appendUint32(b, uint32(code))
}

// appendData appends a DATA frame carrying p.
func appendData(b []byte, id uint32, p []byte, end bool) []byte {
	var flags uint8
	if end {
		flags = h2FlagEndStream
	}
	b = appendFrameHeader(b, len(p), h2Data, flags, id)
	return append(b, p...)
}

// appendHeaderBlock appends a header block as a HEADERS frame followed
// by as many CONTINUATION frames as frames of maxFrame bytes need.
func appendHeaderBlock(b []byte, id uint32, block []byte, end bool, maxFrame int) []byte {
	typ := h2Headers
	var flags uint8
	if end {
		flags = h2FlagEndStream
	}
	for {
		n := min(len(block), maxFrame)
		f := flags
		if n == len(block) {
			f |= h2FlagEndHeaders
		}
		b = appendFrameHeader(b, n, typ, f, id)
		b = append(b, block[:n]...)
		block = block[n:]
		if len(block) == 0 {
			return b
		}
		typ, flags = h2Continuation, 0
	}
}

// errH2Padding is a padded frame whose padding is as long as its payload.
var errH2Padding = errors.New("http2: padding too long")

// unpad returns a padded frame's content without its padding (RFC 9113
// §6.1).
func unpad(fh h2FrameHeader, p []byte) ([]byte, error) {
	if !fh.has(h2FlagPadded) {
		return p, nil
	}
	if len(p) == 0 || int(p[0]) >= len(p) {
		return nil, errH2Padding
	}
	return p[1 : len(p)-int(p[0])], nil
}
