package engine

import (
	"encoding/binary"
	"io"
	"time"
)

// HTTP/2 settings and limits: the server's SETTINGS and the client's
// preface (RFC 9113 §3.4, §6.5), the client's SETTINGS as they change
// what the server sends, and the bounds on what a client can make the
// server hold.

// Bounds on what a client can make the server queue.
const (
	h2MaxBuffered     = 64 << 10 // output queued before a stream's writes wait for it to drain
	h2MaxControl      = 10000    // frames the client made the server queue (PING acks, resets) without reading them
	h2QueuedFactor    = 4        // streams waiting for a handler slot, per MaxStreams, before ENHANCE_YOUR_CALM
	h2GoAwayLinger    = time.Second
	h2HeaderListSlack = 320  // SETTINGS_MAX_HEADER_LIST_SIZE is MaxHeaderBytes plus this (as net/http's)
	h2MaxSettings     = 1000 // SETTINGS frames and entries between two streams the client opens
)

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

func (h *h2Conn) handleSettings(fh h2FrameHeader, p []byte) error {
	if fh.streamID != 0 {
		return h2ConnError(h2ProtocolError)
	}
	// A SETTINGS flood costs the server several times what other frames
	// of its size do (each entry is applied under the connection's lock,
	// a window size to every open stream): a client gets h2MaxSettings
	// frames and entries between two streams it opens, far more than any
	// client sends, and is cut off past them.
	h.settings += 1 + len(p)/6
	if h.settings > h2MaxSettings {
		return h2ConnError(h2EnhanceYourCalm)
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
