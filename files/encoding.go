package files

import "github.com/sluice-server/sluice/accept"

// negotiate picks the representation of the file e for an Accept-Encoding
// field value ae (nil when absent): one of e's precompressed variants, or
// e itself (identity), as RFC 9110 §12.5.3 describes. A coding is
// acceptable with the q-value given for it (gzip also as "x-gzip"), else
// with the q-value of "*"; identity is acceptable unless refused by
// "identity;q=0", or by "*;q=0" without an entry of its own. The variant
// with the highest q-value wins, the server's order deciding ties, and it
// is chosen over identity unless identity has a higher q-value. When
// nothing is acceptable the original is sent, as RFC 7231 §5.3.4 advised:
// an error page would help no one.
//
// negotiate does not allocate.
func negotiate(ae []byte, e *entry) *entry {
	if ae == nil || len(e.variants) == 0 {
		return e
	}
	best, bestQ := e, 0
	for _, v := range e.variants {
		if q := codingQ(ae, v.encoding); q > bestQ {
			best, bestQ = v, q
		}
	}
	if best == e {
		return e
	}
	if idQ := codingQ(ae, "identity"); idQ > bestQ {
		return e
	}
	return best
}

// codingQ returns the q-value, in thousandths, that the Accept-Encoding
// value ae gives coding (see negotiate). A malformed element is skipped.
func codingQ(ae []byte, coding string) int {
	q, star := -1, -1
	for rest := ae; len(rest) > 0; {
		var elem []byte
		elem, rest = nextListElement(rest)
		name, params := elem, []byte(nil)
		for i, c := range elem {
			if c == ';' {
				name, params = trimOWS(elem[:i]), elem[i+1:]
				break
			}
		}
		if len(name) == 0 {
			continue
		}
		eq, ok := parseQ(params)
		if !ok {
			continue
		}
		switch {
		case asciiEqualFold(name, coding),
			coding == "gzip" && asciiEqualFold(name, "x-gzip"):
			q = max(q, eq)
		case len(name) == 1 && name[0] == '*':
			star = max(star, eq)
		}
	}
	switch {
	case q >= 0:
		return q
	case coding == "identity":
		if star == 0 {
			return 0
		}
		return 1 // acceptable, but below any explicit coding of q > 0.001
	case star >= 0:
		return star
	}
	return 0
}

// parseQ reads the weight among the parameters of a list element ("q=0.5",
// RFC 9110 §12.4.2), in thousandths; 1000 when there is none. Other
// parameters are ignored.
func parseQ(params []byte) (int, bool) {
	for len(params) > 0 {
		var p []byte
		p, params = cutByte(params, ';')
		p = trimOWS(p)
		if len(p) < 2 || p[0]|0x20 != 'q' || p[1] != '=' {
			continue
		}
		return accept.QValue(p[2:])
	}
	return 1000, true
}

func cutByte(b []byte, sep byte) (before, after []byte) {
	for i, c := range b {
		if c == sep {
			return b[:i], b[i+1:]
		}
	}
	return b, nil
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}
