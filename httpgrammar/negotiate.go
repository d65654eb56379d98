package httpgrammar

// Negotiate chooses among offers, the server's representations in its
// order of preference, the one that list, a field value of Accept or
// Accept-Encoding (RFC 9110 §12.5.1, §12.5.3) or of another Accept-* field
// of the same shape, rates highest. It returns the offer's index, or -1
// when list rates no offer above zero. It does not allocate.
//
// An offer is a content coding ("gzip"), a media type ("text/html") or
// another token, compared under ASCII case folding. The weight list gives
// an offer is the q-value of the most specific element that matches it:
// the offer itself (with "x-gzip" and "x-compress" standing for "gzip" and
// "compress", RFC 9110 §8.4.1); else, for a media type, "type/*"; else
// "*/*" for a media type or "*" for a token. Among equally specific
// elements the highest q-value counts. An element matching nothing leaves
// the offer unacceptable (weight 0), with one exception: "identity", no
// coding, is acceptable at the lowest weight, 0.001, unless an element
// names it or "*" rates it (RFC 9110 §12.5.3).
//
// The tie-breaking rule: between offers of equal weight, the earlier offer
// wins. So a server that lists "identity" last prefers any coding the
// client rates as high as identity.
//
// The malformed-entry rule: an element whose name is not a token, "*",
// or a media range (token "/" token, or "type/*", "*/*"), or whose q
// parameter is not a qvalue ("q=2", "q=0.5x", "q= 1"), is ignored, as if
// it were not there; the rest of the list still counts. Parameters other
// than q are ignored. Empty elements are skipped. A list without usable
// elements, like an absent field, leaves only "identity" acceptable.
func Negotiate[T ~string | ~[]byte](list T, offers []string) int {
	best, bestQ := -1, 0
	for i, offer := range offers {
		if q := rate(list, offer); q > bestQ {
			best, bestQ = i, q
		}
	}
	return best
}

// Specificity of the element that matched an offer, as rate ranks it.
const (
	matchNone = iota
	matchAny  // "*" or "*/*"
	matchType // "type/*"
	matchSelf // the offer itself
)

// rate returns the weight, in thousandths, that list gives offer (see
// Negotiate).
func rate[T ~string | ~[]byte](list T, offer string) int {
	q, spec := 0, matchNone
	for elem, rest := NextElement(list); len(elem) > 0; elem, rest = NextElement(rest) {
		name, params := elem, elem[len(elem):]
		for i := range len(elem) {
			if elem[i] == ';' {
				name, params = TrimOWS(elem[:i]), elem[i+1:]
				break
			}
		}
		s := match(name, offer)
		if s == matchNone || s < spec {
			continue
		}
		w, ok := weight(params)
		if !ok {
			continue
		}
		if s > spec {
			q, spec = w, s
		} else {
			q = max(q, w)
		}
	}
	if spec == matchNone && EqualFold(offer, "identity") {
		return 1
	}
	return q
}

// match reports how specifically the element name matches offer, or
// matchNone when it does not or is malformed.
func match[T ~string | ~[]byte](name T, offer string) int {
	slash := 0
	for slash < len(name) && name[slash] != '/' {
		slash++
	}
	if slash == len(name) { // a token or "*"
		switch {
		case !IsToken(name):
			return matchNone
		case len(name) == 1 && name[0] == '*':
			if isMediaType(offer) {
				return matchNone
			}
			return matchAny
		case EqualFold(name, offer), isAlias(name, offer):
			return matchSelf
		}
		return matchNone
	}
	typ, sub := name[:slash], name[slash+1:]
	if !IsToken(typ) || !IsToken(sub) {
		return matchNone
	}
	star := len(sub) == 1 && sub[0] == '*'
	switch {
	case !isMediaType(offer):
		return matchNone
	case star && len(typ) == 1 && typ[0] == '*':
		return matchAny
	case star && len(offer) > len(typ) && offer[len(typ)] == '/' && EqualFold(typ, offer[:len(typ)]):
		return matchType
	case EqualFold(name, offer):
		return matchSelf
	}
	return matchNone
}

// isAlias reports whether name is the "x-" alias of the coding offer:
// "x-gzip" of "gzip", "x-compress" of "compress" (RFC 9110 §8.4.1).
func isAlias[T ~string | ~[]byte](name T, offer string) bool {
	return len(name) == len(offer)+2 && (EqualFold(offer, "gzip") || EqualFold(offer, "compress")) &&
		EqualFold(name[:2], "x-") && EqualFold(name[2:], offer)
}

// isMediaType reports whether offer is a media type (type/subtype) rather
// than a token.
func isMediaType(offer string) bool {
	for i := range len(offer) {
		if offer[i] == '/' {
			return true
		}
	}
	return false
}
