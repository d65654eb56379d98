package httpgrammar

import "bytes"

// The outcomes of NextField that are not a broken rule of the
// grammar: the caller reads more, or refuses the message as too large.
const (
	// ErrIncomplete reports that the buffer ends before the line does:
	// read more and scan again from the same position.
	ErrIncomplete SyntaxError = "incomplete line"
	// ErrSectionTooLarge reports that the section does not end within
	// its bound.
	ErrSectionTooLarge SyntaxError = "header section too large"
)

// NextField scans the line at buf[pos:] of a header section (RFC 9112
// §5) that must end before buf[limit], as strictly as the engine reads a
// request and the proxy a response. crlf says how the message's first
// line ended: every line of the section must end the same way, CRLF or a
// bare LF (RFC 9112 §2.2; a mix is how messages are smuggled, §11.2).
//
// It returns, with a nil error, either the name and value of a field line
// (split and checked by SplitFieldLine, whose errors it returns) or, for
// the empty line that ends the section, a nil name; next is where the
// following line starts. Otherwise it returns ErrIncomplete (buf ends
// first), ErrSectionTooLarge, ErrBareCR, ErrMixedEOL, ErrObsFold (a line
// starting with whitespace: obsolete line folding, §5.2, refused without
// waiting for the rest of the line) or an error of SplitFieldLine.
//
// name and value are views into buf, which NextField only reads; it does
// not allocate, and it is safe for concurrent use. It scans and splits in
// one call because it is on the engine's per-request path: a call per
// line costs less than two.
func NextField(buf []byte, pos, limit int, crlf bool) (name, value []byte, next int, err error) {
	if pos >= len(buf) {
		return nil, nil, pos, incompleteOrTooLarge(pos, limit)
	}
	if c := buf[pos]; c == '\n' || c == '\r' {
		// The empty line that ends the section.
		if c == '\r' {
			if pos+1 >= len(buf) {
				return nil, nil, pos, incompleteOrTooLarge(pos, limit)
			}
			if buf[pos+1] != '\n' {
				return nil, nil, pos, ErrBareCR
			}
			pos++
		}
		if (c == '\r') != crlf {
			return nil, nil, pos, ErrMixedEOL
		}
		pos++
		if pos > limit {
			return nil, nil, pos, ErrSectionTooLarge
		}
		return nil, nil, pos, nil
	} else if c == ' ' || c == '\t' {
		return nil, nil, pos, ErrObsFold
	}
	lf := bytes.IndexByte(buf[pos:], '\n')
	if lf < 0 {
		if i := bytes.IndexByte(buf[pos:], '\r'); i >= 0 && pos+i < len(buf)-1 {
			return nil, nil, pos, ErrBareCR
		}
		return nil, nil, pos, incompleteOrTooLarge(len(buf), limit)
	}
	line := buf[pos : pos+lf]
	next = pos + lf + 1
	if next > limit {
		return nil, nil, pos, ErrSectionTooLarge
	}
	// line is not empty: its first byte is neither CR nor LF.
	if hasCR := line[len(line)-1] == '\r'; hasCR != crlf {
		if hasCR && len(line) > 1 && line[len(line)-2] == '\r' {
			return nil, nil, pos, ErrBareCR // "\r\r\n"
		}
		return nil, nil, pos, ErrMixedEOL
	} else if hasCR {
		line = line[:len(line)-1]
	}
	name, value, err = SplitFieldLine(line)
	return name, value, next, err
}

// incompleteOrTooLarge is ErrIncomplete while end, where the section has
// reached, is before limit, and ErrSectionTooLarge after.
func incompleteOrTooLarge(end, limit int) error {
	if end >= limit {
		return ErrSectionTooLarge
	}
	return ErrIncomplete
}
