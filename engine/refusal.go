package engine

import "bytes"

// Refusal describes a request the engine answered itself, without
// calling the Handler: a head it could not parse or would not accept
// (400, 413, 414, 417, 431, 501, 505), or one that did not arrive in time
// (408). A Server hands one to its OnRefused hook, typically to write an
// access-log line for requests the handler, and so any log component in
// it, never saw.
//
// Everything a Refusal points to belongs to the connection and is valid
// only while the hook runs: copy what you keep.
type Refusal struct {
	// Status is the status code of the response sent.
	Status int

	// Reason is the short reason the response's body gives.
	Reason string

	// Line is the request line as received, without its line end, or as
	// much of it as arrived (empty if none did); for an HTTP/2 stream,
	// which has none, the method, :path and "HTTP/2.0" joined by spaces. These are the client's
	// raw bytes: any byte but LF may be in them, so they must be escaped
	// before they are written anywhere.
	Line []byte

	// Request holds what the engine parsed before it refused: Method,
	// Target and ProtoMinor once the request line was read (Method is nil
	// until then), and the header fields read before the error, in
	// Fields. RemoteAddr and LocalAddr are set. Its Body must not be read.
	Request *Request

	// BodyBytes is the length of the response's body (0 for a HEAD
	// request).
	BodyBytes int64
}

// refused hands a refusal to the server's OnRefused hook, if it has one:
// e is the refusal, head the request's bytes from its start (as far as
// they arrived), body the length of the response's body. It is called
// before the response is sent, so that whatever the hook records is
// recorded before the client can see the response.
func (c *conn) refused(e *ProtocolError, head []byte, body int64) {
	hook := c.srv.OnRefused
	if hook == nil {
		return
	}
	req := &c.s.req
	req.RemoteAddr, req.LocalAddr = c.nc.RemoteAddr(), c.nc.LocalAddr()
	hook(&Refusal{
		Status:    e.Status,
		Reason:    e.Msg,
		Line:      requestLine(head),
		Request:   req,
		BodyBytes: body,
	})
}

// requestLine returns the first line of head without its line end,
// skipping the empty lines a client may send before a request (RFC 9112
// §2.2).
func requestLine(head []byte) []byte {
	head = head[skipEmptyLines(head):]
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	return bytes.TrimSuffix(head, []byte("\r"))
}
