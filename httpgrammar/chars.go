package httpgrammar

// Byte classes from RFC 9110 §5.6.2 (tchar), §5.5 (field values) and RFC
// 9112 §3.2 (request-target), as lookup tables so that a parser's inner
// loop is one load per byte.
var (
	tokenChars  [256]bool // tchar
	valueChars  [256]bool // field-vchar, SP, HTAB, obs-text
	targetChars [256]bool // visible ASCII except '#'
)

func init() {
	const tcharPunct = "!#$%&'*+-.^_`|~"
	for c := range 256 {
		b := byte(c)
		alnum := 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
		punct := false
		for i := range len(tcharPunct) {
			punct = punct || tcharPunct[i] == b
		}
		tokenChars[c] = alnum || punct
		valueChars[c] = b == '\t' || b >= ' ' && b != 0x7f
		targetChars[c] = b > ' ' && b < 0x7f && b != '#'
	}
}

// IsTokenChar reports whether c may appear in a token (RFC 9110 §5.6.2:
// tchar, the letters and digits of ASCII and !#$%&'*+-.^_`|~).
func IsTokenChar(c byte) bool { return tokenChars[c] }

// IsFieldValueChar reports whether c may appear in a field value (RFC 9110
// §5.5): visible ASCII, SP, HTAB, or obs-text (0x80–0xFF). CR, LF, NUL and
// the other control bytes may not.
func IsFieldValueChar(c byte) bool { return valueChars[c] }

// IsFieldValue reports whether v is a field value (RFC 9110 §5.5:
// field-value = *field-content): IsFieldValueChar bytes only, so no NUL,
// CR, LF or other control byte (HTAB aside), and no SP or HTAB first or
// last, which field-content does not allow (RFC 9113 §8.2.1 says the
// same of an HTTP/2 field value). The empty value is one. It is the one
// field-value check of both protocols: SplitFieldLine applies it to an
// HTTP/1.1 field line's value once the surrounding whitespace is trimmed,
// and the engine to each HTTP/2 field as HPACK decodes it.
func IsFieldValue[T ~string | ~[]byte](v T) bool {
	if len(v) == 0 {
		return true
	}
	if c := v[0]; c == ' ' || c == '\t' {
		return false
	}
	if c := v[len(v)-1]; c == ' ' || c == '\t' {
		return false
	}
	// Eight bytes at a time while a word has no control byte and no DEL
	// (0x7f): x has a byte below 0x20 iff (x-0x20*ones) &^ x & highs is
	// not zero (the "has a byte less than n" test, exact for n up to
	// 0x80), and a 0x7f iff x^(0x7f*ones) has a zero byte. A word with
	// either (an HTAB, the one control byte allowed, or a byte that is
	// not) is looked at byte by byte from there.
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(v); i += 8 {
		x := uint64(v[i]) | uint64(v[i+1])<<8 | uint64(v[i+2])<<16 | uint64(v[i+3])<<24 |
			uint64(v[i+4])<<32 | uint64(v[i+5])<<40 | uint64(v[i+6])<<48 | uint64(v[i+7])<<56
		y := x ^ 0x7f*ones
		if ((x-0x20*ones)&^x|(y-ones)&^y)&highs != 0 {
			break
		}
	}
	for ; i < len(v); i++ {
		if !valueChars[v[i]] {
			return false
		}
	}
	return true
}

// IsTargetChar reports whether c may appear in a request-target as it
// arrives on the wire (RFC 9112 §3.2): visible ASCII other than '#', which
// begins a fragment no client sends.
func IsTargetChar(c byte) bool { return targetChars[c] }

// IsToken reports whether s is a token (RFC 9110 §5.6.2): one or more
// tchar. Methods, field names, content codings and parameter names are
// tokens.
func IsToken[T ~string | ~[]byte](s T) bool {
	if len(s) == 0 {
		return false
	}
	for i := range len(s) {
		if !tokenChars[s[i]] {
			return false
		}
	}
	return true
}

// Unhex returns the value of the hexadecimal digit c (RFC 5234 HEXDIG, in
// either case), as chunk sizes and percent-encodings use it; ok is false
// for any other byte.
func Unhex(c byte) (v byte, ok bool) {
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
