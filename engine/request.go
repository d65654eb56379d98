package engine

import (
	"crypto/tls"
	"io"
	"net"

	"github.com/sluice-server/sluice/httpgrammar"
)

// Field is one header or trailer field line: a name and a value with the
// surrounding whitespace removed. Both slices are views into the server's
// read buffer, valid only while the handler runs.
type Field struct {
	Name  []byte
	Value []byte
}

// Request is a parsed HTTP/1.x request, or an HTTP/2 stream's request
// (see NewRequest).
//
// Every byte slice in a Request is a view into the connection's read buffer:
// it is valid only until the handler returns, and must be copied to be
// kept longer. A Request must not be used from other goroutines after the
// handler returns. Body is safe to read from one goroutine at a time.
type Request struct {
	// Method is the request method, case-sensitive, e.g. "GET".
	Method []byte

	// Target is the request-target exactly as received (origin-form
	// "/a%20b?x=1", absolute-form "http://host/a", authority-form
	// "host:443" for CONNECT, or "*"). Use it (or RawPath) to pass the
	// request on unchanged, as a proxy does, or to log what was sent;
	// never to decide what the request may reach.
	Target []byte

	// RawPath is the path of Target exactly as received, still
	// percent-encoded and with any dot segments and repeated slashes.
	RawPath []byte

	// Path is the canonical path (RFC 3986 §6.2.2), the one every
	// decision is made on: the router matches it and components map it to
	// files, scripts and rules. It is RawPath percent-decoded, with
	// repeated slashes merged and "." and ".." segments removed (after
	// decoding, so "%2e%2e" is ".."); a path whose last segment was
	// empty, "." or ".." ends in '/'. It never contains "//", "/./" or
	// "/../", and never ends in "/." or "/..". A target with an encoded
	// '/' ("%2F"), a decoded NUL, or a ".." above the root is refused with
	// 400 before any handler runs. Path is "/" for an absolute-form
	// target without a path, "*" for asterisk-form and empty for
	// authority-form (CONNECT). docs/security.md has the rules in full.
	// Path may hold any other byte a percent-escape encodes (space, '?',
	// '%', control bytes, non-UTF-8): code that writes it into a header,
	// a log line or a page must escape it.
	//
	// Path is a view into the read buffer when it is spelled as received,
	// else into a per-connection buffer; either way it is valid only
	// until the handler returns.
	Path []byte

	// Query is the part of Target after '?', undecoded, without the '?'.
	Query []byte

	// Host is the authority of an absolute-form target (or of CONNECT's
	// authority-form), else the Host header field's value. With such a
	// target the received Host field is ignored (RFC 9112 §3.2.2): its
	// entry in Fields holds the target's authority too, so the two agree.
	Host []byte

	// ProtoMajor is the major version of HTTP: 1, 2 for a request that
	// came as an HTTP/2 stream, or 3 for an HTTP/3 one (served through
	// Server.Bridge). (A Request built by hand may leave it 0, meaning 1.)
	ProtoMajor int

	// ProtoMinor is the minor version of HTTP/1.x: 0 or 1 (higher minor
	// versions are served as 1.1); 1 for HTTP/2, which has every feature
	// of 1.1 that code testing ProtoMinor looks for.
	ProtoMinor int

	// Fields holds the header fields in the order received.
	Fields []Field

	// ContentLength is the body length from Content-Length; 0 when there
	// is no body; -1 when the body is chunked.
	ContentLength int64

	// Body reads the request body. It returns io.EOF at the end of the body
	// and never reads past it, so a pipelined next request stays intact.
	// A body over Limits.MaxBodyBytes fails with *http.MaxBytesError.
	Body io.Reader

	// Trailer holds the trailer fields of a chunked body once Body has
	// returned io.EOF. Its slices are owned by the Request.
	Trailer []Field

	// RemoteAddr is the client's address.
	RemoteAddr net.Addr

	// LocalAddr is the server address the request arrived on.
	LocalAddr net.Addr

	// TLS describes the TLS connection the request arrived on, as
	// crypto/tls reports it once the handshake is done (version, cipher
	// suite, server name, negotiated protocol); nil for a request over
	// plain TCP or a Unix socket. It is shared by every request of the
	// connection and must not be modified.
	TLS *tls.ConnectionState

	close       bool // client asked to close after this exchange
	expectCont  bool // Expect: 100-continue
	expectOther bool // Expect lists another expectation: refused with 417
	upgrade     bool // an Upgrade field: the handler may take the connection (Tunneler)
}

// Header returns the value of the first field named name (ASCII
// case-insensitive), or nil when there is none. It does not allocate.
func (r *Request) Header(name string) []byte {
	for i := range r.Fields {
		if httpgrammar.EqualFold(r.Fields[i].Name, name) {
			return r.Fields[i].Value
		}
	}
	return nil
}

// HeaderList returns the values of every field named name (ASCII
// case-insensitive) as one list, joined by ", " in order, as RFC 9110 §5.3
// says repeated field lines mean; nil when there is none. For a single
// field it returns that field's value without allocating; for several
// it returns a new slice. Use it for list-valued fields (If-None-Match,
// Accept-Encoding): a singleton field sent twice comes back as a list,
// which its parser then refuses, as it must (§5.5).
func (r *Request) HeaderList(name string) []byte {
	var first []byte
	n := 0
	for i := range r.Fields {
		if httpgrammar.EqualFold(r.Fields[i].Name, name) {
			if n == 0 {
				first = r.Fields[i].Value
			}
			n++
		}
	}
	if n <= 1 {
		return first
	}
	var b []byte
	for i := range r.Fields {
		if httpgrammar.EqualFold(r.Fields[i].Name, name) {
			if len(b) > 0 {
				b = append(b, ", "...)
			}
			b = append(b, r.Fields[i].Value...)
		}
	}
	return b
}

// IsMethod reports whether the request method is m (case-sensitive, as
// RFC 9110 §9.1 says methods are).
func (r *Request) IsMethod(m string) bool { return string(r.Method) == m }

// ProtoAtLeast11 reports whether the request is HTTP/1.1 or later.
func (r *Request) ProtoAtLeast11() bool { return r.ProtoMinor >= 1 || r.ProtoMajor > 1 }

// Proto returns the request's protocol as a request line names it:
// "HTTP/1.0", "HTTP/1.1", "HTTP/2.0" or "HTTP/3.0".
func (r *Request) Proto() string {
	switch {
	case r.ProtoMajor == 2:
		return "HTTP/2.0"
	case r.ProtoMajor == 3:
		return "HTTP/3.0"
	case r.ProtoMinor == 0:
		return "HTTP/1.0"
	}
	return "HTTP/1.1"
}

// WantsClose reports whether the client asked for the connection to close
// after this response (HTTP/1.1 "Connection: close", or HTTP/1.0 without
// "Connection: keep-alive").
func (r *Request) WantsClose() bool { return r.close }

// AddField appends the field name: value to r.Fields; the slices are
// kept, not copied. It is append(r.Fields, Field{name, value}) without
// the copy through the stack the compiler makes of such a literal (see
// grow), for the fields added to every request.
func (r *Request) AddField(name, value []byte) {
	f := grow(&r.Fields)
	f.Name, f.Value = name, value
}

// reset clears r for reuse, keeping the capacity of its slices.
func (r *Request) reset() {
	fields := r.Fields[:0]
	trailer := r.Trailer[:0]
	*r = Request{Fields: fields, Trailer: trailer}
}
