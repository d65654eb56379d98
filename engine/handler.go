package engine

import "os"

// Handler answers one request. It is called on the connection's goroutine;
// the Request and its slices are valid only until Serve returns.
//
// Serve may read r.Body and must write its response through w before
// returning. Returning without writing answers 200 with an empty body. A
// panic answers 500 (when nothing was sent yet) and closes that
// connection; the server keeps serving others.
//
// The engine does not tunnel CONNECT: the connection ends after the
// response to a CONNECT request. (A protocol switch, after an Upgrade
// request, is tunnelled by the handler itself: see Tunneler.) A 2xx response to CONNECT is sent without Content-Length
// or Transfer-Encoding (RFC 9110 §9.3.6 forbids them there), so its body,
// if any, is delimited by the close.
type Handler interface {
	Serve(w ResponseWriter, r *Request)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(w ResponseWriter, r *Request)

// Serve calls f(w, r).
func (f HandlerFunc) Serve(w ResponseWriter, r *Request) { f(w, r) }

// ResponseWriter composes a response. Headers and status may change until
// the first Write that does not fit the engine's buffer, the first Flush,
// or the handler's return, whichever comes first: then the header is
// committed. A ResponseWriter is used by one goroutine at a time and only
// until the handler returns.
type ResponseWriter interface {
	// Header returns the response header fields to modify.
	Header() *Header

	// WriteHeader sets the status code. A 1xx code (other than 101) is sent
	// at once as an interim response and may be followed by others; the
	// first code of 200 or more is final and later calls are ignored. A
	// 304 is sent without Content-Type and Content-Length (as net/http
	// does), so they may be set to describe the representation it stands
	// for, for filters that decide by them.
	WriteHeader(status int)

	// Write appends body bytes, implying status 200 if none was set. For a
	// HEAD request and for statuses without content (204, 304) the bytes
	// are counted but not sent. p is not retained after Write returns.
	Write(p []byte) (int, error)

	// WriteString is Write for a string, without a conversion.
	WriteString(s string) (int, error)

	// Flush commits the header and sends everything buffered so far.
	Flush() error
}

// BuffersWriter is implemented by ResponseWriters that can send several
// buffers of body bytes in one system call: on Linux, the engine's
// HTTP/1.1 ResponseWriter sends what it holds of the response (the
// header, say) and a large body's buffers in one sendmsg(2), where a
// Write of each would make a system call each. A store that keeps a body
// in pieces (a cache's chunks) sends it whole this way.
type BuffersWriter interface {
	// WriteBuffers writes the bytes of p's buffers in order, as one Write
	// of their concatenation would, and returns how many it wrote. Neither
	// p nor its buffers are kept or changed.
	WriteBuffers(p [][]byte) (int64, error)
}

// FileSender is implemented by ResponseWriters that can send file content
// without copying it through user space (sendfile(2) on Linux). The
// engine's ResponseWriter implements it.
type FileSender interface {
	// SendFile sends n bytes of f from offset as the body (or the rest of
	// the body). It does not use or move f's file offset, so one open file
	// may serve many concurrent requests. If no Content-Length was set, it
	// is set to n.
	SendFile(f *os.File, offset, n int64) error
}
