package engine

import (
	"bytes"
	"net/netip"
	"strings"

	"github.com/sluice-server/sluice/httpgrammar"
)

// parseHead parses one request head (request line and header section) at
// the start of buf into req, appending to req.Fields. It returns the number
// of bytes consumed, or errNeedMore when buf ends before the head does, or
// a *ProtocolError for a request to refuse.
//
// Every slice stored in req points into buf, except Path when it differs
// from RawPath: the canonical path (see canonicalPath) is written into
// *pathBuf, which is grown as needed. parseHead never allocates otherwise.
func parseHead(buf []byte, req *Request, lim *Limits, pathBuf *[]byte) (int, error) {
	start := skipEmptyLines(buf)
	pos := start
	lf := bytes.IndexByte(buf[pos:], '\n')
	if lf < 0 {
		return 0, partialLineError(buf[pos:], lim)
	}
	line := buf[pos : pos+lf]
	pos += lf + 1
	// RFC 9112 §2.2 lets a recipient take a bare LF for CRLF. We do, but
	// only for a head that ends every line the same way as its request
	// line: a bare LF among CRLFs (or the reverse) is how a request is
	// smuggled past an intermediary that does not split lines at a bare LF
	// (RFC 9112 §11.2), so such a head is refused.
	crlf := len(line) > 0 && line[len(line)-1] == '\r'
	if crlf {
		line = line[:len(line)-1]
	}
	if err := parseRequestLine(line, req, lim, pathBuf); err != nil {
		return 0, err
	}

	var h headFields
	limit := start + lim.MaxHeaderBytes
	for {
		// The line scanner the proxy reads responses with, too: it
		// refuses bare CR, obs-fold and mixed line ends, bounds the head
		// at limit, and splits the field line (httpgrammar.SplitFieldLine).
		name, value, next, err := httpgrammar.NextField(buf, pos, limit, crlf)
		if err != nil {
			return 0, refusalOf(err)
		}
		pos = next
		if name == nil {
			break
		}
		if len(req.Fields) >= lim.MaxHeaderCount {
			return 0, errTooManyFields
		}
		req.AddField(name, value)
		// The fields that frame the request or steer the connection; the
		// switch on the name's length keeps the others cheap.
		err = nil
		switch len(name) {
		case 4:
			if httpgrammar.EqualFold(name, "host") {
				err = h.host(req, value)
			}
		case 6:
			if httpgrammar.EqualFold(name, "expect") {
				h.expect(value)
			}
		case 7:
			if httpgrammar.EqualFold(name, "upgrade") {
				req.upgrade = true
			}
		case 10:
			if httpgrammar.EqualFold(name, "connection") {
				h.connection(value)
			}
		case 14:
			if httpgrammar.EqualFold(name, "content-length") {
				err = h.contentLength(req, value)
			}
		case 17:
			if httpgrammar.EqualFold(name, "transfer-encoding") {
				err = h.transferEncoding(value)
			}
		}
		if err != nil {
			return 0, err
		}
	}
	err := h.apply(req)
	if err != nil && err != errExpectation {
		return 0, err
	}
	return pos, err
}

// skipEmptyLines returns the length of the empty lines at the start of
// buf: RFC 9112 §2.2 says a server SHOULD ignore empty lines before the
// request line.
func skipEmptyLines(buf []byte) int {
	pos := 0
	for pos < len(buf) && (buf[pos] == '\n' || buf[pos] == '\r' && pos+1 < len(buf) && buf[pos+1] == '\n') {
		if buf[pos] == '\r' {
			pos++
		}
		pos++
	}
	return pos
}

// parseRequestLine parses "method SP request-target SP HTTP-version"
// (RFC 9112 §3), with exactly one SP between the parts.
func parseRequestLine(line []byte, req *Request, lim *Limits, pathBuf *[]byte) error {
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 {
		if bytes.IndexByte(line, '\r') >= 0 {
			return errBareCR
		}
		return errRequestLine
	}
	method := line[:sp1]
	if !httpgrammar.IsToken(method) {
		return errMethod
	}
	rest := line[sp1+1:]
	sp2 := bytes.IndexByte(rest, ' ')
	if sp2 < 0 {
		if len(rest) > lim.MaxTargetBytes {
			return errTargetTooLong
		}
		return errRequestLine
	}
	if sp2 == 0 {
		return errRequestLine
	}
	target, version := rest[:sp2], rest[sp2+1:]
	if len(target) > lim.MaxTargetBytes {
		return errTargetTooLong
	}
	minor, err := parseVersion(version)
	if err != nil {
		if bytes.IndexByte(version, '\r') >= 0 {
			return errBareCR
		}
		return err
	}
	req.Method = method
	req.Target = target
	req.ProtoMajor, req.ProtoMinor = 1, minor
	return parseTarget(target, req, pathBuf)
}

// parseVersion parses "HTTP/1.x" and returns x, capped at 1.
func parseVersion(v []byte) (int, error) {
	if len(v) != 8 || string(v[:5]) != "HTTP/" || v[6] != '.' ||
		v[5] < '0' || v[5] > '9' || v[7] < '0' || v[7] > '9' {
		return 0, errVersion
	}
	if v[5] != '1' {
		return 0, errHTTPVersion
	}
	if v[7] == '0' {
		return 0, nil
	}
	return 1, nil
}

// parseTarget classifies the request-target (RFC 9112 §3.2) and fills in
// RawPath, Path, Query and, for absolute-form, Host. Path is the canonical
// form of RawPath, for origin-form and absolute-form alike; asterisk-form
// and authority-form have no path to make canonical.
func parseTarget(t []byte, req *Request, pathBuf *[]byte) error {
	for _, c := range t {
		if !httpgrammar.IsTargetChar(c) {
			return errTarget
		}
	}
	isConnect := string(req.Method) == "CONNECT"
	switch {
	case isConnect:
		// authority-form = uri-host ":" port (RFC 9112 §3.2.3), nothing
		// else: no userinfo, path, query or fragment.
		if !validAuthorityForm(t) {
			return errTarget
		}
		req.Host = t
		req.RawPath, req.Path = t[:0], t[:0]
		return nil
	case t[0] == '/':
		// origin-form
	case len(t) == 1 && t[0] == '*':
		if string(req.Method) != "OPTIONS" {
			return errTarget
		}
		req.RawPath, req.Path = t, t
		return nil
	default:
		// absolute-form: http or https only.
		var rest, slash []byte
		switch {
		case len(t) > 7 && httpgrammar.EqualFold(t[:7], "http://"):
			rest, slash = t[7:], t[6:7]
		case len(t) > 8 && httpgrammar.EqualFold(t[:8], "https://"):
			rest, slash = t[8:], t[7:8]
		default:
			return errTarget
		}
		end := len(rest)
		if i := bytes.IndexAny(rest, "/?"); i >= 0 {
			end = i
		}
		// RFC 9110 §4.2.1: a non-empty host; §4.2.4: no userinfo (which
		// splitHostPort refuses with its '@').
		authority := rest[:end]
		if host, _, ok := splitHostPort(authority); !ok || len(host) == 0 {
			return errTarget
		}
		req.Host = authority
		t = rest[end:]
		if len(t) == 0 || t[0] == '?' {
			// An empty path is "/" (RFC 9110 §4.2.3): the one after
			// "http:/", so that Path, too, is a view into the buffer.
			req.RawPath, req.Path = slash, slash
			if len(t) > 0 {
				req.Query = t[1:]
			}
			return nil
		}
	}
	rawPath := t
	if q := bytes.IndexByte(t, '?'); q >= 0 {
		rawPath, req.Query = t[:q], t[q+1:]
	}
	req.RawPath = rawPath
	if !needsCanonical(rawPath) {
		req.Path = rawPath
		return nil
	}
	p, err := canonicalPath((*pathBuf)[:0], rawPath)
	*pathBuf = p
	if err != nil {
		return err
	}
	req.Path = p
	return nil
}

// parseContentLength parses 1*DIGIT into a non-negative int64
// (httpgrammar.ParseContentLength).
func parseContentLength(v []byte) (int64, bool) { return httpgrammar.ParseContentLength(v) }

// validHost reports whether v is uri-host [ ":" port ] (RFC 3986 §3.2.2,
// §3.2.3), the form of a Host field value (RFC 9112 §3.2). The host may be
// empty (RFC 9112 §3.2: "Host:" when the target has no authority).
func validHost(v []byte) bool {
	_, _, ok := splitHostPort(v)
	return ok
}

// validAuthorityForm reports whether t is uri-host ":" port with a
// non-empty host (RFC 9112 §3.2.3).
func validAuthorityForm(t []byte) bool {
	host, port, ok := splitHostPort(t)
	return ok && len(host) > 0 && port != nil
}

// splitHostPort splits uri-host [ ":" port ] into the host and the port
// (nil when there is no ":"), and reports whether v has that form: host is
// an IP-literal holding an IPv6 address, or a reg-name (which includes
// IPv4 addresses) of unreserved, sub-delims and pct-encoded non-ASCII
// octets with no empty label (as nginx, stricter than RFC 3986); port is
// *DIGIT. There is no userinfo.
func splitHostPort(v []byte) (host, port []byte, ok bool) {
	host = v
	if len(v) > 0 && v[0] == '[' {
		end := bytes.IndexByte(v, ']')
		if end < 0 || !validIPLiteral(v[1:end]) {
			return nil, nil, false
		}
		host = v[:end+1]
		if rest := v[end+1:]; len(rest) > 0 {
			if rest[0] != ':' {
				return nil, nil, false
			}
			port = rest[1:]
		}
	} else {
		if i := bytes.IndexByte(v, ':'); i >= 0 {
			host, port = v[:i], v[i+1:]
		}
		for i := 0; i < len(host); i++ {
			switch hostByte[host[i]] {
			case hostPlain:
			case hostDot:
				// No empty label: not ".a", "a..b" or "." (a name's
				// one trailing dot, "a.", is its absolute form). Some
				// backend could trim dots that routing did not, and read
				// another host than the one the request was routed by.
				if i == 0 || host[i-1] == '.' {
					return nil, nil, false
				}
			case hostPct:
				// pct-encoded, and only for the octets of a UTF-8
				// character (RFC 3986 §3.2.2): never "%00" or "%2F".
				if i+2 >= len(host) {
					return nil, nil, false
				}
				if hi, ok := httpgrammar.Unhex(host[i+1]); !ok || hi < 8 {
					return nil, nil, false
				}
				if _, ok := httpgrammar.Unhex(host[i+2]); !ok {
					return nil, nil, false
				}
				i += 2
			default:
				return nil, nil, false
			}
		}
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return nil, nil, false
		}
	}
	return host, port, true
}

// Classes of a byte of a host that is not an IP literal, in hostByte.
const (
	hostRefused = iota
	hostPlain   // a letter, a digit, or one of "-_~!$&'()*+,;="
	hostDot
	hostPct
)

// hostByte is the class of each byte in a host (splitHostPort).
var hostByte = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			strings.IndexByte("-_~!$&'()*+,;=", byte(c)) >= 0:
			t[c] = hostPlain
		case c == '.':
			t[c] = hostDot
		case c == '%':
			t[c] = hostPct
		}
	}
	return t
}()

// validIPLiteral reports whether a, the inside of "[...]", is an IPv6
// address, optionally with an RFC 6874 zone ("%25" zone). IPvFuture is
// refused: RFC 3986 §3.2.2 says to answer an unknown version flag with an
// error.
func validIPLiteral(a []byte) bool {
	if i := bytes.Index(a, []byte("%25")); i >= 0 {
		zone := a[i+3:]
		if len(zone) == 0 {
			return false
		}
		for _, c := range zone {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~%", c) >= 0) {
				return false
			}
		}
		a = a[:i]
	}
	if len(a) < 2 || len(a) > 45 || bytes.IndexByte(a, ':') < 0 {
		return false
	}
	addr, err := netip.ParseAddr(string(a))
	return err == nil && addr.Is6() && addr.Zone() == ""
}

// partialLineError decides, for a request line with no LF yet, whether to
// wait for more bytes or refuse it: 414 once the target received so far is
// over the limit (whatever the method's length), 400 once the line could
// not fit in a head anyway.
func partialLineError(line []byte, lim *Limits) error {
	if sp := bytes.IndexByte(line, ' '); sp > 0 {
		target := line[sp+1:]
		if sp2 := bytes.IndexByte(target, ' '); sp2 >= 0 {
			target = target[:sp2]
		}
		if len(target) > lim.MaxTargetBytes {
			return errTargetTooLong
		}
	}
	if hasBareCR(line) {
		return errBareCR
	}
	if len(line) < lim.MaxHeaderBytes {
		return errNeedMore
	}
	return errRequestLine
}

// hasBareCR reports whether partial, the start of a line whose LF has not
// arrived, holds a CR that cannot be part of its line ending: one before
// its last byte. Every CR in a head must be (RFC 9112 §2.2), so such a
// line is refused at once rather than after the rest of the head.
func hasBareCR(partial []byte) bool {
	i := bytes.IndexByte(partial, '\r')
	return i >= 0 && i < len(partial)-1
}
