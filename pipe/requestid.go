package pipe

import "log/slog"

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
	if len(id) > MaxRequestIDLen {
		return false
	}
	for _, b := range id {
		if b <= ' ' || b >= 0x7f {
			return false
		}
	}
	c.idLen = uint8(copy(c.idBuf[:], id))
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
