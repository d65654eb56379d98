package clientaddr

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
)

// A Resolver finds the client address of a request, believing the proxy
// header only from trusted proxies. It is immutable after New and safe
// for concurrent use.
type Resolver struct {
	trusted   []netip.Prefix
	trustUnix bool   // a Unix-socket peer is a trusted proxy ("unix:")
	name      []byte // the header field to read when the peer is trusted
	forwarded bool   // header is RFC 7239 Forwarded
}

// New returns the Resolver that trusts the proxies listed in trusted
// (CIDRs or single addresses, IPv4 or IPv6, and "unix:" for a peer on a
// Unix socket) and reads the client address from their header field
// named header ("X-Forwarded-For" when empty; "Forwarded" for RFC 7239).
// Its errors start with the names config files give the two settings:
// `trusted_proxies: "x" is not an IP address or CIDR`,
// `client_ip_header: "X Y" is not a header name`.
func New(trusted []string, header string) (*Resolver, error) {
	if header == "" {
		header = "X-Forwarded-For"
	}
	if strings.ContainsAny(header, " \t:\r\n") {
		return nil, fmt.Errorf("client_ip_header: %q is not a header name", header)
	}
	ci := &Resolver{name: []byte(header), forwarded: strings.EqualFold(header, "Forwarded")}
	for _, s := range trusted {
		if strings.TrimSpace(s) == "unix:" {
			ci.trustUnix = true
			continue
		}
		p, err := ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("trusted_proxies: %w", err)
		}
		ci.trusted = append(ci.trusted, p)
	}
	return ci, nil
}

// ParsePrefix parses a CIDR ("10.0.0.0/8", "2001:db8::/32") or a
// single address (a /32 or /128), with spaces around it allowed.
// IPv4-mapped IPv6 forms are unmapped so they match the IPv4 addresses
// Addr returns. Host bits are masked off.
func ParsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%q is not an IP address or CIDR", s)
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP address or CIDR", s)
	}
	if a := p.Addr(); a.Is4In6() {
		if p.Bits() < 96 {
			return netip.Prefix{}, fmt.Errorf("%q: an IPv4-mapped prefix needs at least 96 bits", s)
		}
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// isTrusted reports whether a is one of the trusted proxies.
func (ci *Resolver) isTrusted(a netip.Addr) bool {
	for _, p := range ci.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Addr returns the client address of r, unmapped (an IPv4 client over an
// IPv6 socket is IPv4). It is the invalid Addr when the client has no IP
// address (a Unix-socket peer, unless it is trusted and names one). It
// allocates nothing for an IPv4 client.
func (ci *Resolver) Addr(r *engine.Request) netip.Addr {
	peer := peer(r.RemoteAddr)
	if !ci.trustedPeer(r.RemoteAddr, peer) {
		return peer
	}
	if ci.forwarded {
		return ci.walkForwarded(r, peer)
	}
	return ci.walkList(r, peer)
}

// TrustsPeer reports whether r's connection peer is one of the trusted
// proxies, whose client-address fields may be believed: a reverse proxy
// appends to the X-Forwarded-For or Forwarded it received only then, and
// replaces them otherwise. It does not allocate for a TCP peer.
func (ci *Resolver) TrustsPeer(r *engine.Request) bool {
	return ci.trustedPeer(r.RemoteAddr, peer(r.RemoteAddr))
}

// Peer returns the IP address of r's connection peer, unmapped; the
// invalid Addr for a peer without one (a Unix socket's).
func Peer(r *engine.Request) netip.Addr { return peer(r.RemoteAddr) }

// trustedPeer reports whether a connection's peer, whose IP address is
// peer (invalid if it has none), is a trusted proxy.
func (ci *Resolver) trustedPeer(a net.Addr, peer netip.Addr) bool {
	if peer.IsValid() {
		return ci.isTrusted(peer)
	}
	_, unix := a.(*net.UnixAddr)
	return unix && ci.trustUnix
}

// peer is the IP address of a connection's peer.
func peer(a net.Addr) netip.Addr {
	switch a := a.(type) {
	case *net.TCPAddr:
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	case nil:
		return netip.Addr{}
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// walkList reads comma-separated addresses from the right, over every
// field named ci.name from the last to the first.
func (ci *Resolver) walkList(r *engine.Request, client netip.Addr) netip.Addr {
	for i := len(r.Fields) - 1; i >= 0; i-- {
		f := &r.Fields[i]
		if !httpgrammar.EqualFold(f.Name, ci.name) {
			continue
		}
		v := f.Value
		for {
			j := bytes.LastIndexByte(v, ',')
			// Empty list elements are allowed (RFC 9110 §5.6.1).
			if elem := httpgrammar.TrimOWS(v[j+1:]); len(elem) > 0 {
				a, ok := parseNode(elem)
				if !ok {
					return client
				}
				client = a
				if !ci.isTrusted(a) {
					return a
				}
			}
			if j < 0 {
				break
			}
			v = v[:j]
		}
	}
	return client
}

// walkForwarded reads the for= parameters of RFC 7239 Forwarded fields
// from the right.
func (ci *Resolver) walkForwarded(r *engine.Request, client netip.Addr) netip.Addr {
	var buf [8][]byte
	nodes := buf[:0]
	for i := range r.Fields {
		f := &r.Fields[i]
		if httpgrammar.EqualFold(f.Name, ci.name) {
			nodes = forwardedFor(nodes, f.Value)
		}
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		a, ok := parseNode(nodes[i])
		if !ok {
			return client
		}
		client = a
		if !ci.isTrusted(a) {
			return a
		}
	}
	return client
}

// forwardedFor appends the for= value of every forwarded-element in
// v (RFC 7239 §4), unquoted; an element without for= contributes an empty
// value, which does not parse as an address and so ends the walk there.
func forwardedFor(nodes [][]byte, v []byte) [][]byte {
	var forVal []byte
	hasElem := false
	i := 0
	for i <= len(v) {
		// One pair: token "=" ( token / quoted-string ).
		for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
			i++
		}
		if i == len(v) {
			break
		}
		start := i
		for i < len(v) && v[i] != '=' && v[i] != ';' && v[i] != ',' {
			i++
		}
		name := httpgrammar.TrimOWS(v[start:i])
		var val []byte
		if i < len(v) && v[i] == '=' {
			i++
			if i < len(v) && v[i] == '"' {
				i++
				s := i
				for i < len(v) && v[i] != '"' {
					if v[i] == '\\' {
						i++ // quoted-pair; addresses never need one
					}
					i++
				}
				val = v[s:min(i, len(v))]
				if i < len(v) {
					i++ // closing quote
				}
			} else {
				s := i
				for i < len(v) && v[i] != ';' && v[i] != ',' {
					i++
				}
				val = httpgrammar.TrimOWS(v[s:i])
			}
		}
		if len(name) > 0 {
			hasElem = true
			if httpgrammar.EqualFold(name, "for") {
				forVal = val
			}
		}
		for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
			i++
		}
		if i < len(v) && v[i] == ';' {
			i++
			continue
		}
		// ',' or the end closes the element.
		if hasElem {
			nodes = append(nodes, forVal)
		}
		forVal, hasElem = nil, false
		i++
	}
	if hasElem {
		nodes = append(nodes, forVal)
	}
	return nodes
}

// parseNode parses an address as proxies write it: "192.0.2.1",
// "192.0.2.1:8080", "2001:db8::1", "[2001:db8::1]" or "[2001:db8::1]:8080".
func parseNode(b []byte) (netip.Addr, bool) {
	if len(b) > 0 && b[0] == '[' {
		end := bytes.IndexByte(b, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		if rest := b[end+1:]; len(rest) > 0 && (rest[0] != ':' || !digits(rest[1:])) {
			return netip.Addr{}, false
		}
		b = b[1:end]
	} else if i := bytes.IndexByte(b, ':'); i >= 0 && bytes.LastIndexByte(b, ':') == i {
		if !digits(b[i+1:]) {
			return netip.Addr{}, false
		}
		b = b[:i] // IPv4 with a port
	}
	if a, ok := parseIPv4(b); ok {
		return a, true
	}
	a, err := netip.ParseAddr(string(b))
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// parseIPv4 parses a dotted-quad IPv4 address without allocating (the
// common case behind proxies); anything else is left to netip.
func parseIPv4(b []byte) (netip.Addr, bool) {
	var ip [4]byte
	n, digits, val := 0, 0, 0
	for i := 0; i <= len(b); i++ {
		if i == len(b) || b[i] == '.' {
			if digits == 0 || n == 4 {
				return netip.Addr{}, false
			}
			ip[n] = byte(val)
			n, digits, val = n+1, 0, 0
			continue
		}
		c := b[i]
		if c < '0' || c > '9' || (digits == 1 && val == 0) {
			return netip.Addr{}, false // not a digit, or a leading zero
		}
		val = val*10 + int(c-'0')
		digits++
		if val > 255 {
			return netip.Addr{}, false
		}
	}
	if n != 4 {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4(ip), true
}

func digits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
