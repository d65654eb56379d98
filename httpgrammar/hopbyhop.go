package httpgrammar

// hopByHop are the fields that describe one connection rather than the
// message (RFC 9110 §7.6.1), which a proxy must not forward whether or
// not Connection names them. Proxy-Connection and Keep-Alive are not
// standard but are sent by older clients.
var hopByHop = [...]string{"Connection", "Proxy-Connection", "Keep-Alive", "TE", "Transfer-Encoding", "Upgrade"}

// IsHopByHop reports whether the field called name is hop-by-hop (RFC 9110
// §7.6.1), for a proxy to drop before forwarding a message: Connection,
// Proxy-Connection, Keep-Alive, TE, Transfer-Encoding, Upgrade, or a field
// that one of connection, the values of the message's Connection fields,
// names. Names compare under ASCII case folding. It does not allocate.
func IsHopByHop[T ~string | ~[]byte](name T, connection ...T) bool {
	for _, h := range hopByHop {
		if EqualFold(name, h) {
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
