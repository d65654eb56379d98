package httpgrammar

// SplitFieldLine splits a field line of a header or trailer section,
// without its line ending, into its name and its value with the
// surrounding whitespace trimmed (RFC 9112 §5: field-name ":" OWS
// field-value OWS), and checks both: the name is a token, with no
// whitespace before the colon, and the value is a field value
// (IsFieldValue, the check HTTP/2 fields get too). Its errors are
// ErrNoColon, ErrSpaceBeforeColon, ErrFieldName, ErrFieldValue and, for
// a CR, ErrBareCR. name and value are views into line; it does not
// allocate.
func SplitFieldLine(line []byte) (name, value []byte, err error) {
	// The name's tchars, then its colon: one pass over the name, where
	// finding the colon and then checking the name took two.
	colon := 0
	for colon < len(line) && tokenChars[line[colon]] {
		colon++
	}
	if colon > 0 && colon < len(line) && line[colon] == ':' {
		return splitValue(line, colon)
	}
	colon = -1
	for i, c := range line {
		if c == ':' {
			colon = i
			break
		}
	}
	if colon < 0 {
		for _, c := range line {
			if c == '\r' {
				return nil, nil, ErrBareCR
			}
		}
		return nil, nil, ErrNoColon
	}
	name = line[:colon]
	if !IsToken(name) {
		if len(name) > 0 && (name[len(name)-1] == ' ' || name[len(name)-1] == '\t') {
			return nil, nil, ErrSpaceBeforeColon
		}
		return nil, nil, ErrFieldName
	}
	return splitValue(line, colon)
}

// splitValue is SplitFieldLine's end for a line whose name, before the
// colon at colon, is a token.
func splitValue(line []byte, colon int) (name, value []byte, err error) {
	name = line[:colon]
	value = TrimOWS(line[colon+1:])
	if !IsFieldValue(value) {
		for _, c := range value {
			if !valueChars[c] {
				if c == '\r' {
					return nil, nil, ErrBareCR
				}
				break
			}
		}
		return nil, nil, ErrFieldValue
	}
	return name, value, nil
}

// ParseContentLength parses a Content-Length field value (RFC 9110 §8.6:
// 1*DIGIT) into a non-negative int64. It refuses signs, whitespace,
// lists (even of equal values: a recipient compares repeated field lines
// itself) and values above math.MaxInt64.
func ParseContentLength[T ~string | ~[]byte](v T) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	const maxInt64 = 1<<63 - 1
	var n int64
	for i := range len(v) {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (maxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}
