package engine

import "bytes"

// Byte classes from RFC 9110 §5.6.2 (token) and §5.5 (field values), as
// lookup tables so the parser's inner loops are one load per byte.
var (
	tokenChars  [256]bool // tchar
	valueChars  [256]bool // field-vchar / SP / HTAB / obs-text
	targetChars [256]bool // visible ASCII except '#': what a request-target may hold
)

func init() {
	for c := 0; c < 256; c++ {
		b := byte(c)
		isAlnum := 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
		tokenChars[c] = isAlnum || b != 0 && indexByte("!#$%&'*+-.^_`|~", b) >= 0
		valueChars[c] = b == '\t' || b >= ' ' && b != 0x7f
		targetChars[c] = b > ' ' && b < 0x7f && b != '#'
	}
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

// isToken reports whether b is a non-empty RFC 9110 token.
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !tokenChars[c] {
			return false
		}
	}
	return true
}

// trimOWS removes leading and trailing SP and HTAB (RFC 9110 §5.6.3).
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// hasToken reports whether the comma-separated list v contains tok, ASCII
// case-insensitively (for Connection and similar list fields).
func hasToken(v []byte, tok string) bool {
	for len(v) > 0 {
		var elem []byte
		if elem, v = nextElement(v); equalFold(elem, tok) {
			return true
		}
	}
	return false
}

// nextElement splits a comma-separated list (RFC 9110 §5.6.1) into its
// first element, without surrounding whitespace (empty for an empty
// element), and the rest after the comma.
func nextElement(v []byte) (elem, rest []byte) {
	i := bytes.IndexByte(v, ',')
	if i < 0 {
		return trimOWS(v), nil
	}
	return trimOWS(v[:i]), v[i+1:]
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
