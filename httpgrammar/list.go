package httpgrammar

// TrimOWS removes leading and trailing optional whitespace, SP and HTAB
// (RFC 9110 §5.6.3), from s.
func TrimOWS[T ~string | ~[]byte](s T) T {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// NextElement splits a field list (RFC 9110 §5.6.1: elements separated by
// commas, with optional whitespace around them) into its first non-empty
// element, without the whitespace, and the rest after that element's
// comma. Empty elements (", ,") are skipped, as the RFC says a recipient
// must; elem is empty only when the list has no element left, and rest is
// then empty too. Commas are not looked for inside quoted strings: an
// element holding a quoted comma is split there.
//
// The loop over a list is
//
//	for elem, rest := NextElement(v); len(elem) > 0; elem, rest = NextElement(rest) {
//		…
//	}
func NextElement[T ~string | ~[]byte](v T) (elem, rest T) {
	for len(v) > 0 {
		i := 0
		for i < len(v) && v[i] != ',' {
			i++
		}
		elem = TrimOWS(v[:i])
		if i < len(v) {
			v = v[i+1:]
		} else {
			v = v[len(v):]
		}
		if len(elem) > 0 {
			return elem, v
		}
	}
	return v, v
}

// HasToken reports whether the field list v has an element equal to tok
// under ASCII case folding, as Connection, Vary or Upgrade are read. An
// element with parameters ("gzip;q=1") does not equal its bare token.
func HasToken[T ~string | ~[]byte](v T, tok string) bool {
	for elem, rest := NextElement(v); len(elem) > 0; elem, rest = NextElement(rest) {
		if EqualFold(elem, tok) {
			return true
		}
	}
	return false
}
