package httpgrammar

// IsHopByHop reports whether the field called name is hop-by-hop (RFC 9110
// §7.6.1), for a proxy to drop before forwarding a message: Connection,
// Proxy-Connection, Keep-Alive, TE, Transfer-Encoding, Upgrade, or a field
// that one of connection, the values of the message's Connection fields,
// names. Names compare under ASCII case folding. It does not allocate.
func IsHopByHop[T ~string | ~[]byte](name T, connection ...T) bool {
	// The fields that describe one connection rather than the message,
	// which a proxy must not forward whether or not Connection names
	// them (Proxy-Connection and Keep-Alive are not standard but are sent
	// by older clients), told by length first: most names have none of
	// their lengths.
	switch len(name) {
	case 2:
		if EqualFold(name, "TE") {
			return true
		}
	case 7:
		if EqualFold(name, "Upgrade") {
			return true
		}
	case 10:
		if EqualFold(name, "Connection") || EqualFold(name, "Keep-Alive") {
			return true
		}
	case 16:
		if EqualFold(name, "Proxy-Connection") {
			return true
		}
	case 17:
		if EqualFold(name, "Transfer-Encoding") {
			return true
		}
	}
	for _, v := range connection {
		for elem, rest := NextElement(v); len(elem) > 0; elem, rest = NextElement(rest) {
			if EqualFold(elem, name) {
				return true
			}
		}
	}
	return false
}
