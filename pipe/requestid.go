package pipe

import (
	"encoding/binary"
	"log/slog"
)

// MaxRequestIDLen is the longest request ID a Conn holds (see
// SetRequestID).
const MaxRequestIDLen = 128

// SetRequestID records id as the request's ID, copied into the Conn (no
// allocation), for the components that pass it on or log it (see
// RequestID). An id longer than MaxRequestIDLen, or holding a byte that
// is not visible ASCII, is refused: it returns false and the ID is left
// unchanged. An empty id clears it. Whoever sets it (the request_id stage
// of a config file) has chosen between the client's value and a made one;
// a component only reads it.
func (c *Conn) SetRequestID(id []byte) bool {
	if len(id) > MaxRequestIDLen || !visibleASCII(id) {
		return false
	}
	c.idLen = uint8(copy(c.idBuf[:], id))
	return true
}

// visibleASCII reports whether every byte of b is visible ASCII (0x21 to
// 0x7e). It tests eight bytes at a time: a word x has a byte below 0x21
// iff (x-0x21*ones) &^ x & highs is not zero (the "has a byte less than
// n" test, exact for n up to 0x80), and, when it has no byte of 0x80 or
// more (x & highs), a byte of 0x7f iff x+ones carries into a high bit.
func visibleASCII(b []byte) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if ((x-0x21*ones)&^x|x|(x+ones))&highs != 0 {
			return false
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// RequestID returns the request's ID (see SetRequestID), or nil when it
// has none. The slice is the Conn's: valid until the request ends, and not
// to be modified. It holds only visible ASCII, so it may be written into a
// header as it is; a log line or a page still escapes it as usual.
func (c *Conn) RequestID() []byte {
	if c.idLen == 0 {
		return nil
	}
	return c.idBuf[:c.idLen]
}

// RequestIDAttr returns the request's ID as the slog attribute
// "request_id", for every log line about the request, or the empty Attr
// (which slog's handlers leave out) when it has none. It allocates the
// string: it is for the paths that log, not for every request.
func (c *Conn) RequestIDAttr() slog.Attr {
	if c.idLen == 0 {
		return slog.Attr{}
	}
	return slog.String("request_id", string(c.idBuf[:c.idLen]))
}
