// Package accept holds the pieces of HTTP content negotiation (RFC 9110
// §12) that several components share.
package accept

// QValue parses a qvalue (RFC 9110 §12.4.2): "0" or "1" with up to three
// decimals, as thousandths (0–1000). It refuses anything else, such as
// "1.5", "0.0001" or "-1", and does not allocate.
func QValue(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 5 || (b[0] != '0' && b[0] != '1') {
		return 0, false
	}
	q := int(b[0]-'0') * 1000
	if len(b) > 1 {
		if b[1] != '.' {
			return 0, false
		}
		scale := 100
		for _, c := range b[2:] {
			if c < '0' || c > '9' {
				return 0, false
			}
			q += int(c-'0') * scale
			scale /= 10
		}
	}
	if q > 1000 {
		return 0, false
	}
	return q, true
}
