package components

import (
	"bytes"
	"net/netip"
	"strings"

	"github.com/sluice-server/sluice/httpgrammar"
)

// The URL grammar redirect needs to build a Location from request data
// (RFC 3986), and the look-alikes of "/" that browsers honour.

// redirectSchemeLen returns the length of the scheme s starts with
// (ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) followed by ':'), or 0.
func redirectSchemeLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return i
		default:
			return 0
		}
	}
	return 0
}

// redirectEscape appends s to b, percent-encoding every byte a URL path
// (or, with query, a query) may not hold as is (RFC 3986 §3.3, §3.4):
// all but unreserved, sub-delims, ':', '@', '/' (and '?' in a query).
// A path is decoded, so its every '%' is escaped; a query is raw, so a
// '%' that starts an escape there is kept. Nothing it appends is a control byte,
// a space, a backslash or a byte above 0x7e.
func redirectEscape(b, s []byte, query bool) []byte {
	const hex = "0123456789ABCDEF"
	for i, c := range s {
		switch {
		case redirectURLChar(c), c == '?' && query:
		case c == '%' && query && redirectDecodeAt(s, i) >= 0:
		default:
			b = append(b, '%', hex[c>>4], hex[c&15])
			continue
		}
		b = append(b, c)
	}
	return b
}

// redirectURLChar reports whether c is unreserved, a sub-delim, ':', '@'
// or '/': what a path may hold unescaped.
func redirectURLChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0
}

// redirectDecodeAt returns the octet the escape "%XX" at s[i:] stands
// for, or -1 where there is none.
func redirectDecodeAt(s []byte, i int) int {
	if i+2 >= len(s) || s[i] != '%' {
		return -1
	}
	hi, ok1 := httpgrammar.Unhex(s[i+1])
	lo, ok2 := httpgrammar.Unhex(s[i+2])
	if !ok1 || !ok2 {
		return -1
	}
	return int(hi<<4 | lo)
}

// redirectValidHost reports whether h can be the host of a URL as is:
// uri-host [ ":" port ] (RFC 3986 §3.2.2, §3.2.3), with a non-empty host
// that is an IP literal holding an IPv6 address, or a reg-name of
// unreserved characters, sub-delims and percent-encoded non-ASCII octets
// (what the engine admits in a Host field), and no userinfo. An HTTP/1.0
// request may have no host: "https://" with none reads, to a browser, the
// path that follows as the host.
func redirectValidHost(h []byte) bool {
	host, port := h, []byte(nil)
	if len(h) > 0 && h[0] == '[' {
		end := bytes.IndexByte(h, ']')
		if end < 0 {
			return false
		}
		if ip, err := netip.ParseAddr(string(h[1:end])); err != nil || !ip.Is6() || ip.Zone() != "" {
			return false
		}
		host, port = h[:end+1], h[end+1:]
		if len(port) > 0 {
			if port[0] != ':' {
				return false
			}
			port = port[1:]
		}
	} else {
		if i := bytes.IndexByte(h, ':'); i >= 0 {
			host, port = h[:i], h[i+1:]
		}
		for i := 0; i < len(host); i++ {
			switch c := host[i]; {
			case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			case strings.IndexByte("-._~!$&'()*+,;=", c) >= 0:
			case c == '%' && redirectDecodeAt(host, i) >= 0x80:
				i += 2
			default:
				return false
			}
		}
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(host) > 0
}

// redirectOneSlash turns the run of slashes and slash look-alikes that
// starts a relative Location into one "/": a Location starting with two
// is another host's to a browser ("//evil.com", and with a backslash,
// which browsers read as '/', "/\\evil.com"). The look-alikes are '\\'
// and the escapes of '/', '\\', tab, LF and CR, which a browser or a
// later decoder may turn into one or drop.
func redirectOneSlash(b []byte) []byte {
	i := 0
	for i < len(b) {
		if b[i] == '/' || b[i] == '\\' {
			i++
			continue
		}
		switch redirectDecodeAt(b, i) {
		case '/', '\\', '\t', '\n', '\r':
			i += 3
			continue
		}
		break
	}
	if i == 0 || i == 1 && b[0] == '/' {
		return b
	}
	b[0] = '/'
	return append(b[:1], b[i:]...)
}
