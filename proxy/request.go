package proxy

import (
	"bytes"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/sluice-server/sluice/clientaddr"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
)

// viaValue is this proxy's entry in Via (RFC 9110 §7.6.3), on requests
// and responses alike.
const viaValue = "1.1 sluice"

// maxConnectionOptions is how many connection options (the elements of
// a message's Connection fields) a message may have before gathering
// them allocates.
const maxConnectionOptions = 16

// appendOptions appends the elements of the Connection value v to dst.
func appendOptions(dst [][]byte, v []byte) [][]byte {
	for elem, rest := httpgrammar.NextElement(v); len(elem) > 0; elem, rest = httpgrammar.NextElement(rest) {
		dst = append(dst, elem)
	}
	return dst
}

// requestOptions appends the connection options of a request's fields
// to dst.
func requestOptions(dst [][]byte, fields []engine.Field) [][]byte {
	for i := range fields {
		if len(fields[i].Name) == 10 && httpgrammar.EqualFold(fields[i].Name, "connection") {
			dst = appendOptions(dst, fields[i].Value)
		}
	}
	return dst
}

// responseOptions appends the connection options of a response's fields
// to dst.
func responseOptions(dst [][]byte, fields []field) [][]byte {
	for _, f := range fields {
		if len(f.name) == 10 && httpgrammar.EqualFold(f.name, "connection") {
			dst = appendOptions(dst, f.value)
		}
	}
	return dst
}

// isHopByHop is httpgrammar.IsHopByHop with the message's connection
// options split once (see requestOptions), not again for each field.
func isHopByHop(name []byte, options [][]byte) bool {
	if httpgrammar.IsHopByHop(name) {
		return true
	}
	for _, o := range options {
		if httpgrammar.EqualFold(name, o) {
			return true
		}
	}
	return false
}

// dropOnRequest reports whether a request field is not passed upstream
// as received: hop-by-hop fields (RFC 9110 §7.6.1, with those the
// connection options name), and the framing, Host and Expect, which are
// written afresh.
func dropOnRequest(name []byte, options [][]byte) bool {
	if isHopByHop(name, options) {
		return true
	}
	switch len(name) {
	case 4:
		return httpgrammar.EqualFold(name, "host")
	case 6:
		return httpgrammar.EqualFold(name, "expect")
	case 14:
		return httpgrammar.EqualFold(name, "content-length")
	}
	return false
}

// peerCache is the client address an exchange last forwarded, formatted,
// with whether its resolver trusts it: the requests that follow mostly
// come from the same address (a client's next request; clients behind
// one proxy or NAT), whose lookup and formatting it saves.
type peerCache struct {
	resolver *clientaddr.Resolver
	addr     netip.Addr
	trusted  bool
	text     []byte // addr.AppendTo
}

// lookup returns whether res trusts the peer of r, whose address is peer,
// and peer formatted (nil if it is invalid: a Unix socket's), from the
// cache when it holds them.
func (c *peerCache) lookup(res *clientaddr.Resolver, r *engine.Request, peer netip.Addr) (trusted bool, text []byte) {
	if !peer.IsValid() {
		return res.TrustsPeer(r), nil
	}
	if c.resolver != res || c.addr != peer {
		c.resolver, c.addr, c.trusted = res, peer, res.TrustsPeer(r)
		c.text = peer.AppendTo(c.text[:0])
	}
	return c.trusted, c.text
}

// appendRequestHead composes the head of the request sent upstream for r
// into b: the method, the target (with StripPrefix removed), the Host the
// options choose, the end-to-end fields, the forwarding fields, Via, and
// the framing of the body. expect adds "Expect: 100-continue"; upgrade,
// the client's Upgrade value, asks the upstream to switch protocols.
// pc caches the client's address (see peerCache).
func (p *Proxy) appendRequestHead(b []byte, r *engine.Request, up *host, expect bool, upgrade []byte, pc *peerCache) []byte {
	b = append(b, r.Method...)
	b = append(b, ' ')
	b = p.appendTarget(b, r)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	switch p.host {
	case "", HostClient:
		b = append(b, r.Host...)
	case HostUpstream:
		b = append(b, up.Authority...)
	default:
		b = append(b, p.host...)
	}
	b = append(b, "\r\n"...)

	var optBuf [maxConnectionOptions][]byte
	conn := requestOptions(optBuf[:0], r.Fields)
	peer := clientaddr.Peer(r)
	trusted, peerText := pc.lookup(p.resolver, r, peer)
	var xff, fwd []byte // the received values, when passed on
	teTrailers := false
	for i := range r.Fields {
		f := &r.Fields[i]
		if dropOnRequest(f.Name, conn) {
			// TE is hop-by-hop; its "trailers" alone goes on (below).
			if len(f.Name) == 2 && httpgrammar.EqualFold(f.Name, "te") && httpgrammar.HasToken(f.Value, "trailers") {
				teTrailers = true
			}
			continue
		}
		if p.forwarded != ForwardedNone {
			if claim, alias := proxyClaim(f.Name); claim {
				if alias || !trusted {
					continue // a client's claim, not believed
				}
				// Appended to below, as one list.
				if p.forwarded == ForwardedXFF && httpgrammar.EqualFold(f.Name, "x-forwarded-for") {
					xff = appendList(xff, f.Value)
					continue
				}
				if p.forwarded == ForwardedRFC7239 && httpgrammar.EqualFold(f.Name, "forwarded") {
					fwd = appendList(fwd, f.Value)
					continue
				}
				// Anything else passes as received: the trusted proxy
				// saw the client.
			}
		}
		b = appendField(b, f.Name, f.Value)
	}
	switch p.forwarded {
	case ForwardedXFF:
		b = append(b, "X-Forwarded-For: "...)
		if len(xff) > 0 {
			b = append(b, xff...)
			b = append(b, ", "...)
		}
		if peer.IsValid() {
			b = append(b, peerText...)
		} else {
			b = append(b, "unknown"...)
		}
		b = append(b, "\r\n"...)
		if !trusted || r.Header("X-Forwarded-Proto") == nil {
			b = append(b, "X-Forwarded-Proto: "...)
			b = append(b, scheme(r)...)
			b = append(b, "\r\n"...)
		}
		if !trusted || r.Header("X-Forwarded-Host") == nil {
			b = appendField(b, []byte("X-Forwarded-Host"), r.Host)
		}
	case ForwardedRFC7239:
		b = append(b, "Forwarded: "...)
		if len(fwd) > 0 {
			b = append(b, fwd...)
			b = append(b, ", "...)
		}
		b = appendForwardedElement(b, peer, peerText, scheme(r), r.Host)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Via: "+viaValue+"\r\n"...)
	if expect {
		b = append(b, "Expect: 100-continue\r\n"...)
	}
	// A client that accepts trailers has the upstream told so (RFC 9110
	// §10.1.4), as net/http's ReverseProxy does: some upstreams (gRPC)
	// send them only then. TE is named in Connection, as the RFC asks of
	// its sender.
	switch {
	case upgrade != nil && teTrailers:
		b = append(b, "Connection: Upgrade, TE\r\nTE: trailers\r\n"...)
	case upgrade != nil:
		b = append(b, "Connection: Upgrade\r\n"...)
	case teTrailers:
		b = append(b, "Connection: TE\r\nTE: trailers\r\n"...)
	}
	if upgrade != nil {
		b = appendField(b, []byte("Upgrade"), upgrade)
	}
	switch {
	case r.ContentLength < 0:
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	case r.ContentLength > 0 || r.Header("Content-Length") != nil:
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, r.ContentLength, 10)
		b = append(b, "\r\n"...)
	}
	return append(b, "\r\n"...)
}

// proxyClaims are the names, in lower case, of the fields by which a
// proxy tells its upstream about the client or the request the client
// sent, besides the X-Forwarded-* family (proxyPrefix): backends believe
// them (X-Real-IP for the client's address, as nginx's realip module and
// many frameworks read it; X-Client-IP, Client-IP and True-Client-IP
// likewise; X-Original-URL and X-Rewrite-URL for the path, which IIS's
// URL rewriting and Symfony read in place of the request line's).
var proxyClaims = [...]string{"forwarded", "x-real-ip", "client-ip", "x-client-ip", "true-client-ip", "x-original-url", "x-rewrite-url"}

// proxyPrefix begins every X-Forwarded-* name: -For, -Proto, -Host, and
// the others backends read (-Port, -Prefix, -Server, -Ssl, -Uri).
const proxyPrefix = "x-forwarded-"

// proxyClaim reports whether name is the name of a field by which a proxy
// tells its upstream about the client (proxyClaims, the X-Forwarded-*
// family), spelt with dashes or, alias, with an underscore for one or
// more of them (X_Forwarded_For, X_Real_IP). While the proxy forwards, a
// claim passes only from a trusted proxy, and an alias never: a backend
// that maps field names to CGI-style variables (HTTP_X_FORWARDED_FOR:
// WSGI, Rack, FastCGI bridges) would read it as the field spelt with
// dashes.
func proxyClaim(name []byte) (claim, alias bool) {
	// Checked for every field of every proxied request: the length and
	// the first letter turn nearly every other name away at once.
	if len(name) < len("client-ip") {
		return false, false
	}
	switch name[0] | 0x20 {
	case 'x':
		if len(name) > len(proxyPrefix) {
			if ok, a := foldSeparators(name[:len(proxyPrefix)], proxyPrefix); ok {
				return true, a || bytes.IndexByte(name[len(proxyPrefix):], '_') >= 0
			}
		}
	case 'f', 'c', 't':
	default:
		return false, false
	}
	for _, c := range proxyClaims {
		if len(c) == len(name) {
			if ok, a := foldSeparators(name, c); ok {
				return true, a
			}
		}
	}
	return false, false
}

// foldSeparators reports whether name is lower, a lower-case name of
// the same length, but for case and underscores for dashes, and whether
// it had an underscore so.
func foldSeparators(name []byte, lower string) (same, underscore bool) {
	for i := range len(lower) {
		// name[i]|0x20 folds an ASCII letter to lower case; of the token
		// characters, only the letters fold onto one.
		switch {
		case name[i]|0x20 == lower[i]:
		case lower[i] == '-' && name[i] == '_':
			underscore = true
		default:
			return false, false
		}
	}
	return true, underscore
}

func appendField(b, name, value []byte) []byte {
	b = append(b, name...)
	b = append(b, ": "...)
	b = append(b, value...)
	return append(b, "\r\n"...)
}

func appendList(list, v []byte) []byte {
	if len(list) > 0 {
		list = append(list, ", "...)
	}
	return append(list, v...)
}

// upgradeOf returns the Upgrade value of a request that asks to switch
// protocols (RFC 9110 §7.8: Upgrade, named by Connection) and may be
// tunnelled: one without a body. Nil otherwise: the fields are then
// dropped as hop-by-hop, and the request served as any other.
//
// The h2c protocol is left out of the value (nil if nothing else is
// left). RFC 9113 §3.1 deprecates upgrading to it, and a tunnel to an
// upstream that still does would carry a client's HTTP/2 requests past
// this proxy's routing and filters ("h2c smuggling").
func upgradeOf(r *engine.Request) []byte {
	if r.ContentLength != 0 || r.ProtoMinor == 0 {
		return nil
	}
	v := r.Header("Upgrade")
	if len(v) == 0 {
		return nil
	}
	for i := range r.Fields {
		if httpgrammar.EqualFold(r.Fields[i].Name, "connection") && httpgrammar.HasToken(r.Fields[i].Value, "upgrade") {
			return withoutH2C(v)
		}
	}
	return nil
}

// withoutH2C returns the Upgrade list v without its h2c elements: v
// itself if it has none, nil if nothing else is left.
func withoutH2C(v []byte) []byte {
	if !httpgrammar.HasToken(v, "h2c") {
		return v
	}
	var rest []byte
	for p, tail := httpgrammar.NextElement(v); len(p) > 0; p, tail = httpgrammar.NextElement(tail) {
		if !httpgrammar.EqualFold(p, "h2c") {
			rest = appendList(rest, p)
		}
	}
	return rest
}

// switchedAsAsked reports whether a 101 response's fields name in
// Upgrade the protocols it switches to, each one the request offered in
// asked: RFC 9110 §7.8 has a server send Upgrade with a 101 and switch
// only to a protocol the client indicated. Anything else is not the
// tunnel the client asked for, and is not passed on.
func switchedAsAsked(fields []field, asked []byte) bool {
	named := false
	for _, f := range fields {
		if !httpgrammar.EqualFold(f.name, "upgrade") {
			continue
		}
		for p, rest := httpgrammar.NextElement(f.value); len(p) > 0; p, rest = httpgrammar.NextElement(rest) {
			if !offered(asked, p) {
				return false
			}
			named = true
		}
	}
	return named
}

// offered reports whether the Upgrade list asked holds the protocol p,
// compared as tokens are, without regard to case.
func offered(asked, p []byte) bool {
	for a, rest := httpgrammar.NextElement(asked); len(a) > 0; a, rest = httpgrammar.NextElement(rest) {
		if httpgrammar.EqualFold(a, p) {
			return true
		}
	}
	return false
}

// scheme is the scheme the client used: https over TLS, else http.
func scheme(r *engine.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// appendForwardedElement appends an RFC 7239 forwarded-element for a
// client at peer (formatted: text) that asked for host over proto: for,
// proto and host.
func appendForwardedElement(b []byte, peer netip.Addr, text []byte, proto string, host []byte) []byte {
	b = append(b, "for="...)
	switch {
	case !peer.IsValid():
		b = append(b, "unknown"...)
	case peer.Is6():
		b = append(b, `"[`...)
		b = append(b, text...)
		b = append(b, `]"`...)
	default:
		b = append(b, text...)
	}
	b = append(b, ";proto="...)
	b = append(b, proto...)
	if len(host) > 0 {
		// A Host value has no '"' or '\\' (the engine checked it).
		b = append(b, `;host="`...)
		b = append(b, host...)
		b = append(b, '"')
	}
	return b
}

// appendTarget appends the request-target sent upstream: origin-form
// (an absolute-form target loses its scheme and authority), as received
// unless StripPrefix applies; then the canonical path without the prefix,
// escaped again, and the query as received.
func (p *Proxy) appendTarget(b []byte, r *engine.Request) []byte {
	if len(r.RawPath) == 1 && r.RawPath[0] == '*' {
		return append(b, '*')
	}
	if p.stripPrefix != "" {
		// The prefix is whole segments: /api strips /api and /api/x,
		// not /apix.
		if rest, ok := strings.CutPrefix(string(r.Path), p.stripPrefix); ok && (rest == "" || rest[0] == '/') {
			if rest == "" {
				rest = "/"
			}
			b = append(b, (&url.URL{Path: rest}).EscapedPath()...)
			if len(r.Query) > 0 {
				b = append(b, '?')
				b = append(b, r.Query...)
			}
			return b
		}
	}
	b = append(b, r.RawPath...)
	if len(r.Query) > 0 || hasEmptyQuery(r.Target) {
		b = append(b, '?')
		b = append(b, r.Query...)
	}
	return b
}

// hasEmptyQuery reports whether target ends in a '?' with nothing after.
func hasEmptyQuery(target []byte) bool {
	return len(target) > 0 && target[len(target)-1] == '?'
}
