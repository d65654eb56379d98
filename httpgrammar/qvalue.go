package httpgrammar

// QValue parses a qvalue (RFC 9110 §12.4.2): "0" or "1" with up to three
// decimals, as thousandths (0–1000). It refuses anything else, such as
// "1.5", "0.0001", " 0.5" or "-1", and does not allocate.
func QValue[T ~string | ~[]byte](s T) (q int, ok bool) {
	if len(s) == 0 || len(s) > 5 || (s[0] != '0' && s[0] != '1') {
		return 0, false
	}
	q = int(s[0]-'0') * 1000
	if len(s) > 1 {
		if s[1] != '.' {
			return 0, false
		}
		scale := 100
		for i := 2; i < len(s); i++ {
			c := s[i]
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

// weight reads the weight among the parameters of a list element (what
// follows its first ';'): the value of the first parameter named q, in
// thousandths, or 1000 when there is none (RFC 9110 §12.4.2: weight = OWS
// ";" OWS "q=" qvalue). Other parameters are skipped unread. ok is false
// when the q parameter's value is not a qvalue ("q=2", "q= 0.5").
func weight[T ~string | ~[]byte](params T) (q int, ok bool) {
	for len(params) > 0 {
		i := 0
		for i < len(params) && params[i] != ';' {
			i++
		}
		p := TrimOWS(params[:i])
		if i < len(params) {
			i++
		}
		params = params[i:]
		eq := 0
		for eq < len(p) && p[eq] != '=' {
			eq++
		}
		if eq < len(p) && EqualFold(TrimOWS(p[:eq]), "q") {
			return QValue(p[eq+1:])
		}
	}
	return 1000, true
}
