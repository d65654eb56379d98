package httpgrammar

// TransferCodings accumulates the Transfer-Encoding field lines of a
// message (RFC 9112 §6.1) and judges the list as a whole. Repeated lines
// are one list (RFC 9110 §5.3). The zero value is an empty list; a
// TransferCodings belongs to one message and one goroutine.
type TransferCodings struct {
	chunked     int  // times "chunked" was listed
	lastChunked bool // the last coding listed was "chunked"
	unknown     bool // some other coding was listed
}

// Add reads the list of one Transfer-Encoding field line. It fails with
// ErrTEMalformed for a line that lists nothing or an element that is not
// a transfer-coding (token *( OWS ";" OWS transfer-parameter )).
func (s *TransferCodings) Add(v []byte) error {
	nonEmpty := false
	// Empty list elements are skipped (RFC 9110 §5.6.1).
	for item, rest := NextElement(v); len(item) > 0; item, rest = NextElement(rest) {
		nonEmpty = true
		if EqualFold(item, "chunked") {
			s.chunked++
			s.lastChunked = true
			continue
		}
		name := item
		for j, c := range item {
			if c == ';' {
				name = TrimOWS(item[:j])
				break
			}
		}
		if !IsToken(name) {
			return ErrTEMalformed
		}
		s.unknown = true
		s.lastChunked = false
	}
	if !nonEmpty {
		return ErrTEMalformed
	}
	return nil
}

// Verdict judges the whole list for a recipient that decodes chunked and
// nothing else: chunked must be the last coding (else ErrTENotChunked:
// the message cannot be framed, RFC 9112 §6.3), listed once
// (ErrTEChunkedTwice, RFC 9112 §7), and the only one (ErrTEUnknown).
func (s *TransferCodings) Verdict() error {
	switch {
	case s.chunked > 1:
		return ErrTEChunkedTwice
	case !s.lastChunked:
		return ErrTENotChunked
	case s.unknown:
		return ErrTEUnknown
	}
	return nil
}

// ParseChunkLine parses a chunk-size line without its CRLF (RFC 9112
// §7.1, §7.1.1: chunk-size [ chunk-ext ]) and returns the size. Leading
// zeros are allowed; a size above math.MaxInt64 or with no digit fails
// with ErrChunkSize, and extensions that do not follow the grammar (with
// whitespace only where it puts BWS) with ErrChunkExt. Extensions are
// checked, then ignored.
func ParseChunkLine(line []byte) (int64, error) {
	var size int64
	i := 0
	for ; i < len(line); i++ {
		d, ok := Unhex(line[i])
		if !ok {
			break
		}
		if size >= 1<<59 { // size<<4 would overflow int64
			return 0, ErrChunkSize
		}
		size = size<<4 | int64(d)
	}
	if i == 0 {
		return 0, ErrChunkSize
	}
	if !validChunkExt(line[i:]) {
		return 0, ErrChunkExt
	}
	return size, nil
}

// validChunkExt checks *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] ).
// Whitespace is allowed only where that grammar puts BWS: whitespace that
// ends the line (after the size, a name or a value) is refused.
func validChunkExt(s []byte) bool {
	skip := func(b []byte) []byte {
		for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
			b = b[1:]
		}
		return b
	}
	token := func() bool {
		n := 0
		for n < len(s) && tokenChars[s[n]] {
			n++
		}
		s = s[n:]
		return n > 0
	}
	for len(s) > 0 {
		s = skip(s)
		if len(s) == 0 || s[0] != ';' {
			return false
		}
		s = skip(s[1:])
		if !token() {
			return false
		}
		if r := skip(s); len(r) > 0 && r[0] == '=' {
			s = skip(r[1:])
			if len(s) > 0 && s[0] == '"' {
				if s = quotedStringRest(s[1:]); s == nil {
					return false
				}
			} else if !token() {
				return false
			}
		}
	}
	return true
}

// quotedStringRest consumes the rest of a quoted-string after its opening
// quote and returns what follows it, or nil if it is malformed.
func quotedStringRest(s []byte) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return s[i+1:]
		case c == '\\':
			i++
			if i == len(s) || !valueChars[s[i]] {
				return nil
			}
		case !valueChars[c]:
			return nil
		}
	}
	return nil
}
