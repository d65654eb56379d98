// Package clientaddr finds the address of a request's client, which the
// components ipfilter, ratelimit, htaccess and log act on. It reads only
// the request, and imports nothing above the engine.
//
// By default the client is the TCP peer. When the server sits behind
// reverse proxies, list them as trusted (a component's trusted_proxies
// option: CIDRs or single addresses, IPv4 or IPv6, and "unix:" for
// proxies connecting over a Unix socket, as nginx's set_real_ip_from
// spells it). Only when the peer is one of them is the proxy header
// believed, and then it is read from the right — the end the trusted
// proxies appended to — skipping every address that is itself a trusted
// proxy. The first address that is not trusted is the client; if every
// address is trusted, the leftmost is. An entry that does not parse as an
// address ("unknown", an obfuscated "_hidden" node, junk) ends the walk:
// the last trusted hop before it is taken as the client, since nothing to
// its left can be vouched for.
//
// The header is named by a component's client_ip_header option:
//
//   - "X-Forwarded-For" (the default): comma-separated addresses, several
//     fields joined in order; "X-Real-IP" and similar single-address
//     headers are read the same way.
//   - "Forwarded" (RFC 7239): the for= parameter of each forwarded-element,
//     quoted or not, with an optional port ("[2001:db8::1]:4711").
//
// Only one header is read. Believing both would let a client spoof its
// address through whichever header its proxy passes along untouched.
//
// A client without an IP address — a Unix-socket peer not trusted with
// "unix:", or one whose trusted proxy names no address — gets the
// invalid netip.Addr: it matches only "all" in ipfilter and htaccess, and
// ratelimit puts all such clients in one bucket.
package clientaddr
