package upstream

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Upstreams from DNS. An upstream written dns+SCHEME://NAME:PORT is every
// address NAME's A and AAAA records give, at PORT; one written
// srv+SCHEME://_SERVICE._PROTO.NAME is every target of NAME's SRV records
// (those of the lowest priority), at the port and in proportion to the
// weight each record gives, addressed by the A and AAAA records of the
// target. SCHEME is the transport's (http or https for the proxy, tcp
// for FastCGI): each address becomes the host SCHEME://ADDR:PORT, whose
// Authority (its Host field, its TLS server name) is the name resolved.
//
// The records are looked up again when their TTL runs out, bounded by
// DNSConfig.MinInterval and MaxInterval; a failed lookup (no answer, an
// error, or no record) keeps the hosts of the last good one and is tried
// again sooner, backing off from MinInterval to MaxInterval. The hosts
// that stay keep their *Host (pool, health); those added and removed are
// logged. The lookups are this package's own small DNS client (over
// golang.org/x/net/dns/dnsmessage, UDP then TCP when the answer is
// truncated): net.Resolver gives neither the TTLs nor the SRV records'
// additional addresses.

// Defaults of DNSConfig.
const (
	DefaultDNSMinInterval = time.Second
	DefaultDNSMaxInterval = time.Minute
)

// dnsTimeout bounds one query to one server; a variable for the tests.
var dnsTimeout = 2 * time.Second

// DNSConfig configures the lookups of a Group's upstreams from DNS.
type DNSConfig struct {
	// Resolver is the address (host:port, port 53 if absent) of the DNS
	// server asked; empty: the nameservers of /etc/resolv.conf, in turn.
	Resolver string
	// MinInterval and MaxInterval bound the time between two lookups of
	// a name: its records' TTL, or after a failure a delay doubling from
	// MinInterval.
	MinInterval, MaxInterval time.Duration
}

// dnsTarget is an upstream from DNS, as written.
type dnsTarget struct {
	spec   string // as written: "dns+http://app.internal:8080"
	srv    bool
	scheme string // "http", "https", "tcp"
	name   string // fully qualified, with the final dot
	port   string // dns+ only
}

// IsDNS reports whether an upstream is one from DNS (dns+ or srv+).
func IsDNS(name string) bool {
	return strings.HasPrefix(name, "dns+") || strings.HasPrefix(name, "srv+")
}

// parseDNSTarget reads an upstream from DNS: dns+SCHEME://NAME[:PORT]
// (PORT defaults by scheme: 80 for http, 443 for https) or
// srv+SCHEME://_SERVICE._PROTO.NAME. check tells whether SCHEME://ADDR:PORT
// is a host the transport accepts.
func parseDNSTarget(s string, check func(name string) error) (dnsTarget, error) {
	t := dnsTarget{spec: s}
	kind, rest, _ := strings.Cut(s, "+")
	t.srv = kind == "srv"
	scheme, hostport, ok := strings.Cut(rest, "://")
	if !ok || scheme == "" || hostport == "" || strings.ContainsAny(hostport, "/?#@ \t\\") {
		return t, fmt.Errorf("upstream %q: want dns+SCHEME://name:port (A and AAAA records) or srv+SCHEME://_service._proto.name (SRV records), SCHEME as the other upstreams' (http, https; tcp for FastCGI)", s)
	}
	t.scheme = scheme
	host := hostport
	if t.srv {
		if _, port, err := net.SplitHostPort(hostport); err == nil {
			return t, fmt.Errorf("upstream %q: SRV records give the port: write %s+%s://%s", s, kind, scheme, strings.TrimSuffix(hostport, ":"+port))
		}
		if !strings.HasPrefix(host, "_") {
			return t, fmt.Errorf("upstream %q: an SRV name starts with _service._proto, such as srv+%s://_http._tcp.%s", s, scheme, host)
		}
	} else {
		h, port, err := net.SplitHostPort(hostport)
		switch {
		case err == nil:
			host, t.port = h, port
		case scheme == "http":
			t.port = "80"
		case scheme == "https":
			t.port = "443"
		default:
			return t, fmt.Errorf("upstream %q: no port: write %s:PORT", s, s)
		}
		if n, err := strconv.ParseUint(t.port, 10, 16); err != nil || n == 0 {
			return t, fmt.Errorf("upstream %q: port %q: want 1 to 65535", s, t.port)
		}
		if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
			return t, fmt.Errorf("upstream %q: %s is an address, not a name to look up: write %s://%s", s, host, scheme, hostport)
		}
	}
	if !validDNSName(host) {
		return t, fmt.Errorf("upstream %q: %q is not a DNS name (letters, digits, - and _, dot-separated)", s, host)
	}
	t.name = host
	if !strings.HasSuffix(t.name, ".") {
		t.name += "."
	}
	if err := check(scheme + "://127.0.0.1:80"); err != nil {
		return t, fmt.Errorf("upstream %q: the scheme after %s+ is the transport's, as for its other upstreams: %v", s, kind, err)
	}
	return t, nil
}

// validDNSName reports whether s is a host name: labels of letters,
// digits, '-' and '_', separated by dots, a final dot allowed.
func validDNSName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := range len(label) {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// resolvedHost is one host a dnsTarget's records give.
type resolvedHost struct {
	name      string // SCHEME://ADDR:PORT
	authority string // the name resolved, with the port
	weight    int
}

// dnsClient asks DNS servers, each in turn until one answers.
type dnsClient struct {
	servers []string // host:port
	timeout time.Duration
}

// newDNSClient returns the client of resolver (host[:port]), or, empty,
// of the nameservers of /etc/resolv.conf.
func newDNSClient(resolver string) (*dnsClient, error) {
	c := &dnsClient{timeout: dnsTimeout}
	if resolver != "" {
		addr, err := resolverAddr(resolver)
		if err != nil {
			return nil, err
		}
		c.servers = []string{addr}
		return c, nil
	}
	f, err := os.Open("/etc/resolv.conf")
	if err == nil {
		c.servers = parseResolvConf(f)
		f.Close()
	}
	if len(c.servers) == 0 {
		c.servers = []string{"127.0.0.1:53"} // as the C library does without one
	}
	return c, nil
}

// resolverAddr reads a resolver's address: host:port, or host (port 53).
func resolverAddr(s string) (string, error) {
	if h, port, err := net.SplitHostPort(s); err == nil {
		if n, err := strconv.ParseUint(port, 10, 16); err == nil && n > 0 && h != "" {
			return s, nil
		}
		return "", fmt.Errorf("resolver %q: want an address such as 10.0.0.2 or 10.0.0.2:53", s)
	}
	if _, err := netip.ParseAddr(s); err != nil && !validDNSName(s) {
		return "", fmt.Errorf("resolver %q: want an address such as 10.0.0.2 or 10.0.0.2:53", s)
	}
	return net.JoinHostPort(s, "53"), nil
}

// parseResolvConf returns the nameservers a resolv.conf lists, as
// host:port.
func parseResolvConf(r io.Reader) []string {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "nameserver" {
			continue
		}
		a, err := netip.ParseAddr(f[1])
		if err != nil {
			continue
		}
		out = append(out, netip.AddrPortFrom(a, 53).String())
	}
	return out
}

// errNoRecords reports an answer without the records asked for.
var errNoRecords = errors.New("no records")

// lookup returns the hosts t's records give now, and the least TTL of
// the records used.
func (c *dnsClient) lookup(ctx context.Context, t *dnsTarget) ([]resolvedHost, time.Duration, error) {
	port := t.port
	if !t.srv {
		addrs, ttl, err := c.addrs(ctx, t.name)
		if err != nil {
			return nil, 0, err
		}
		auth := net.JoinHostPort(strings.TrimSuffix(t.name, "."), port)
		var out []resolvedHost
		for _, a := range addrs {
			out = append(out, resolvedHost{name: t.scheme + "://" + net.JoinHostPort(a.String(), port), authority: auth, weight: 1})
		}
		return out, ttl, nil
	}
	answers, extra, err := c.query(ctx, t.name, dnsmessage.TypeSRV)
	if err != nil {
		return nil, 0, err
	}
	type srv struct {
		target         string
		port, priority uint16
		weight         uint16
	}
	var recs []srv
	ttl := time.Duration(-1)
	for _, rr := range answers {
		if b, ok := rr.Body.(*dnsmessage.SRVResource); ok {
			recs = append(recs, srv{b.Target.String(), b.Port, b.Priority, b.Weight})
			ttl = minTTL(ttl, rr.Header.TTL)
		}
	}
	if len(recs) == 0 {
		return nil, 0, errNoRecords
	}
	// The lowest priority's targets; the others are backups, which
	// the health checks make needless.
	best := slices.MinFunc(recs, func(a, b srv) int { return int(a.priority) - int(b.priority) }).priority
	recs = slices.DeleteFunc(recs, func(r srv) bool { return r.priority != best || r.port == 0 || r.target == "." })
	maxW := uint16(0)
	for _, r := range recs {
		maxW = max(maxW, r.weight)
	}
	var out []resolvedHost
	for _, r := range recs {
		addrs := addrsOf(extra, r.target)
		if len(addrs) == 0 {
			var t2 time.Duration
			addrs, t2, err = c.addrs(ctx, r.target)
			if err != nil {
				continue // the others may do
			}
			ttl = min(ttl, t2)
		}
		// SRV weights are relative (0 to 65535): scaled to 1 to 100.
		w := 100
		if maxW > 0 {
			w = max(1, int(r.weight)*100/int(maxW))
		}
		port := strconv.Itoa(int(r.port))
		auth := net.JoinHostPort(strings.TrimSuffix(r.target, "."), port)
		for _, a := range addrs {
			out = append(out, resolvedHost{name: t.scheme + "://" + net.JoinHostPort(a.String(), port), authority: auth, weight: w})
		}
	}
	if len(out) == 0 {
		return nil, 0, fmt.Errorf("no address for the SRV targets: %w", errNoRecords)
	}
	return out, max(ttl, 0), nil
}

// minTTL returns the lesser of d (-1: none yet) and ttl seconds.
func minTTL(d time.Duration, ttl uint32) time.Duration {
	t := time.Duration(ttl) * time.Second
	if d < 0 || t < d {
		return t
	}
	return d
}

// addrsOf returns the A and AAAA records of name among rrs.
func addrsOf(rrs []dnsmessage.Resource, name string) []netip.Addr {
	var out []netip.Addr
	for _, rr := range rrs {
		if !strings.EqualFold(rr.Header.Name.String(), name) {
			continue
		}
		switch b := rr.Body.(type) {
		case *dnsmessage.AResource:
			out = append(out, netip.AddrFrom4(b.A))
		case *dnsmessage.AAAAResource:
			out = append(out, netip.AddrFrom16(b.AAAA))
		}
	}
	return out
}

// addrs returns name's A and AAAA records (a CNAME chain followed, as
// the server's answer gives it) and their least TTL.
func (c *dnsClient) addrs(ctx context.Context, name string) ([]netip.Addr, time.Duration, error) {
	var out []netip.Addr
	ttl := time.Duration(-1)
	var firstErr error
	for _, typ := range []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA} {
		answers, _, err := c.query(ctx, name, typ)
		if err != nil {
			firstErr = cmp(firstErr, err)
			continue
		}
		for _, rr := range answers {
			switch b := rr.Body.(type) {
			case *dnsmessage.AResource:
				out = append(out, netip.AddrFrom4(b.A))
				ttl = minTTL(ttl, rr.Header.TTL)
			case *dnsmessage.AAAAResource:
				out = append(out, netip.AddrFrom16(b.AAAA))
				ttl = minTTL(ttl, rr.Header.TTL)
			}
		}
	}
	if len(out) == 0 {
		if firstErr != nil {
			return nil, 0, firstErr
		}
		return nil, 0, errNoRecords
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return slices.Compact(out), max(ttl, 0), nil
}

// cmp returns a if set, else b.
func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// query asks each server in turn for name's records of type typ, and
// returns the answer and additional sections of the first answer.
func (c *dnsClient) query(ctx context.Context, name string, typ dnsmessage.Type) (answers, extra []dnsmessage.Resource, err error) {
	n, err := dnsmessage.NewName(name)
	if err != nil {
		return nil, nil, err
	}
	var idb [2]byte
	rand.Read(idb[:])
	id := binary.BigEndian.Uint16(idb[:])
	q := dnsmessage.Question{Name: n, Type: typ, Class: dnsmessage.ClassINET}
	msg, err := (&dnsmessage.Message{Header: dnsmessage.Header{ID: id, RecursionDesired: true}, Questions: []dnsmessage.Question{q}}).Pack()
	if err != nil {
		return nil, nil, err
	}
	for _, server := range c.servers {
		var resp []byte
		if resp, err = c.exchange(ctx, "udp", server, msg); err != nil {
			continue
		}
		var m dnsmessage.Message
		if answers, extra, m, err = parseAnswer(resp, id, q); err != nil {
			continue
		}
		if m.Header.Truncated {
			if resp, err = c.exchange(ctx, "tcp", server, msg); err != nil {
				continue
			}
			if answers, extra, _, err = parseAnswer(resp, id, q); err != nil {
				continue
			}
		}
		return answers, extra, nil
	}
	return nil, nil, err
}

// parseAnswer reads resp, the answer to the query of id and q: its
// answer and additional sections, or an error for an answer to another
// query, or one with an error code.
func parseAnswer(resp []byte, id uint16, q dnsmessage.Question) (answers, extra []dnsmessage.Resource, m dnsmessage.Message, err error) {
	if err = m.Unpack(resp); err != nil {
		return nil, nil, m, err
	}
	switch {
	case !m.Header.Response || m.Header.ID != id:
		return nil, nil, m, errors.New("an answer to another query")
	case len(m.Questions) != 1 || !strings.EqualFold(m.Questions[0].Name.String(), q.Name.String()) || m.Questions[0].Type != q.Type:
		return nil, nil, m, errors.New("an answer to another question")
	case m.Header.RCode == dnsmessage.RCodeNameError:
		return nil, nil, m, fmt.Errorf("%s: no such name (NXDOMAIN)", q.Name)
	case m.Header.RCode != dnsmessage.RCodeSuccess:
		return nil, nil, m, fmt.Errorf("%s: the server answered %v", q.Name, m.Header.RCode)
	}
	return m.Answers, m.Additionals, m, nil
}

// exchange sends msg to server over network (udp, tcp) and returns the
// answer.
func (c *dnsClient) exchange(ctx context.Context, network, server string, msg []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, server)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	if network == "udp" {
		if _, err := nc.Write(msg); err != nil {
			return nil, err
		}
		buf := make([]byte, 65535)
		n, err := nc.Read(buf)
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
	out := make([]byte, 2+len(msg))
	binary.BigEndian.PutUint16(out, uint16(len(msg)))
	copy(out[2:], msg)
	if _, err := nc.Write(out); err != nil {
		return nil, err
	}
	var size [2]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint16(size[:]))
	if _, err := io.ReadFull(nc, buf); err != nil {
		return nil, err
	}
	return buf, nil
}
