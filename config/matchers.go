package config

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-server/sluice/clientaddr"
	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
)

// A route's conditions beyond its path, host and methods: the route keys
// header, query, client, local, method and protocol (pipe.Route.When).
// Each builds matchers that are immutable and safe for concurrent use.

// MatcherKeys are the route keys that set conditions (pipe.Route.When).
var MatcherKeys = []string{"header", "query", "client", "local", "method", "protocol"}

// ClientKeys are the keys of a route's client map.
var ClientKeys = []string{"addresses", "trusted_proxies", "client_ip_header"}

// valueTest is what a header field or query parameter must be: sent with
// any value, not sent, sent with exactly a value, or sent with a value a
// regular expression matches.
type valueTest struct {
	absent bool           // null: not sent
	any    bool           // "*": sent, with any value
	re     *regexp.Regexp // "~ expr"
	exact  string
}

func (v valueTest) String() string {
	switch {
	case v.absent:
		return "absent"
	case v.any:
		return "present"
	case v.re != nil:
		return pipe.RegexPrefix + v.re.String()
	}
	return fmt.Sprintf("%q", v.exact)
}

// test reports whether a field or parameter sent (or not) with val
// passes.
func (v valueTest) test(val []byte, sent bool) bool {
	switch {
	case v.absent:
		return !sent
	case !sent:
		return false
	case v.any:
		return true
	case v.re != nil:
		return v.re.Match(val)
	}
	return string(val) == v.exact
}

// valueTest parses the value of one header or query entry.
func (p *parser) valueTest(n *yaml.Node, label string) (valueTest, bool) {
	n = deref(n)
	if isNull(n) {
		return valueTest{absent: true}, true
	}
	if n.Kind != yaml.ScalarNode {
		p.errorf(n, `%s: want a value, "*" (sent, any value), "~ regular expression" or null (not sent), got %s`, label, describe(n))
		return valueTest{}, false
	}
	s := n.Value
	switch {
	case s == "*":
		return valueTest{any: true}, true
	case strings.HasPrefix(s, pipe.RegexPrefix):
		re, err := pipe.CompileRegex(s[len(pipe.RegexPrefix):])
		if err != nil {
			p.errorf(n, "%s: %v", label, err)
			return valueTest{}, false
		}
		return valueTest{re: re}, true
	}
	return valueTest{exact: s}, true
}

// headerMatcher holds when the request's field name passes test; a field
// sent on several lines has their values joined by ", " (RFC 9110 §5.3).
type headerMatcher struct {
	name string
	test valueTest
}

func (m *headerMatcher) Match(r *engine.Request) bool {
	sent := false
	for i := range r.Fields {
		if httpgrammar.EqualFold(r.Fields[i].Name, m.name) {
			sent = true
			break
		}
	}
	if !sent || m.test.any || m.test.absent {
		return m.test.test(nil, sent)
	}
	return m.test.test(r.HeaderList(m.name), true)
}

func (m *headerMatcher) String() string { return "header " + m.name + " " + m.test.String() }

// queryMatcher holds when some parameter of the query called name (both
// decoded as a form: "+" is a space; "name[]" and "name[key]" count as
// name, see queryName) passes test; with a null test, when no parameter
// is called name. A parameter whose name's escapes are malformed is no
// parameter; one whose value's are is sent, with no value to pass an
// exact or regular-expression test.
type queryMatcher struct {
	name string
	test valueTest
}

func (m *queryMatcher) Match(r *engine.Request) bool {
	q := r.Query
	for len(q) > 0 {
		var pair []byte
		pair, q, _ = bytes.Cut(q, []byte("&"))
		k, v, _ := bytes.Cut(pair, []byte("="))
		if k, err := formUnescape(k); err != nil || !queryName(k, m.name) {
			continue
		}
		if m.test.absent || m.test.any {
			return m.test.any
		}
		v, err := formUnescape(v)
		if err != nil {
			continue
		}
		if m.test.test(v, true) {
			return true
		}
	}
	return m.test.absent
}

// formUnescape decodes b as a form value ("+" is a space); b itself when
// it holds nothing to decode, so that a plain query costs no allocation.
func formUnescape(b []byte) ([]byte, error) {
	if bytes.IndexByte(b, '%') < 0 && bytes.IndexByte(b, '+') < 0 {
		return b, nil
	}
	s, err := url.QueryUnescape(string(b))
	return []byte(s), err
}

// queryName reports whether the decoded parameter name k is name: name
// itself, or name then "[" and later "]", PHP's array syntax, which PHP
// reads as name ("debug[]" and "debug[a]" are debug, "debug[" is not).
func queryName(k []byte, name string) bool {
	if len(k) < len(name) || string(k[:len(name)]) != name {
		return false
	}
	rest := k[len(name):]
	return len(rest) == 0 || rest[0] == '[' && bytes.IndexByte(rest, ']') > 0
}

func (m *queryMatcher) String() string { return "query " + m.name + " " + m.test.String() }

// clientMatcher holds when the client address (as the resolver finds it)
// is in one of the prefixes.
type clientMatcher struct {
	resolver *clientaddr.Resolver
	prefixes []netip.Prefix
}

func (m *clientMatcher) Match(r *engine.Request) bool {
	a := m.resolver.Addr(r)
	if !a.IsValid() {
		return false
	}
	for _, p := range m.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func (m *clientMatcher) String() string {
	s := make([]string, len(m.prefixes))
	for i, p := range m.prefixes {
		s[i] = p.String()
	}
	return "client in " + strings.Join(s, ", ")
}

// protocolMatcher holds when the request came over one of schemes (if
// any are listed) and in one of versions (if any are listed).
type protocolMatcher struct {
	schemes, versions []string
}

func (m *protocolMatcher) Match(r *engine.Request) bool {
	if len(m.schemes) > 0 {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		if !slices.Contains(m.schemes, scheme) {
			return false
		}
	}
	if len(m.versions) > 0 {
		v := "http/1.1"
		switch {
		case r.ProtoMajor == 2:
			v = "http/2"
		case r.ProtoMajor == 3:
			v = "http/3"
		case r.ProtoMinor == 0:
			v = "http/1.0"
		}
		if !slices.Contains(m.versions, v) {
			return false
		}
	}
	return true
}

func (m *protocolMatcher) String() string {
	return "protocol " + strings.Join(append(slices.Clone(m.schemes), m.versions...), ", ")
}

// localMatcher holds when the address and port the request arrived on
// (the server's side of its connection) is one of addrs.
type localMatcher struct {
	addrs []localAddr
}

// localAddr is one entry of a route's local key: an address or a
// network (any port when port is 0), or a port on any address (prefix
// invalid).
type localAddr struct {
	prefix netip.Prefix
	port   uint16
}

func (a localAddr) String() string {
	switch {
	case !a.prefix.IsValid():
		return ":" + strconv.Itoa(int(a.port))
	case a.port != 0:
		return netip.AddrPortFrom(a.prefix.Addr(), a.port).String()
	case a.prefix.IsSingleIP():
		return a.prefix.Addr().String()
	}
	return a.prefix.String()
}

func (m *localMatcher) Match(r *engine.Request) bool {
	ap, ok := localAddrPort(r.LocalAddr)
	if !ok {
		return false
	}
	for _, a := range m.addrs {
		if (a.port == 0 || a.port == ap.Port()) && (!a.prefix.IsValid() || a.prefix.Contains(ap.Addr())) {
			return true
		}
	}
	return false
}

func (m *localMatcher) String() string {
	s := make([]string, len(m.addrs))
	for i, a := range m.addrs {
		s[i] = a.String()
	}
	return "local in " + strings.Join(s, ", ")
}

// localAddrPort returns the IP address (unmapped) and port of a
// connection's local address; false for one without (a Unix socket's).
// It allocates nothing for a TCP or UDP address.
func localAddrPort(a net.Addr) (netip.AddrPort, bool) {
	var ip net.IP
	var port int
	switch a := a.(type) {
	case *net.TCPAddr:
		ip, port = a.IP, a.Port
	case *net.UDPAddr:
		ip, port = a.IP, a.Port
	case nil, *net.UnixAddr:
		return netip.AddrPort{}, false
	default:
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			return netip.AddrPort{}, false
		}
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
	}
	addr, ok := netip.AddrFromSlice(ip)
	if !ok || port < 0 || port > 65535 {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), true
}

// parseLocalAddr parses one entry of a route's local key: ":PORT" (any
// address), "ADDR:PORT" or "[IPV6]:PORT", an address ("10.0.0.1",
// "::1") or a CIDR ("10.0.0.0/24"), on any port. IPv4-mapped IPv6
// addresses are unmapped, as a connection's local address is.
func parseLocalAddr(s string) (localAddr, error) {
	const hint = `write ":8080", "10.0.0.1:80", "[2001:db8::1]:443", an address or a CIDR`
	if rest, ok := strings.CutPrefix(s, ":"); ok && !strings.HasPrefix(rest, ":") {
		port, err := localPort(rest)
		if err != nil {
			return localAddr{}, fmt.Errorf("%q: %v (%s)", s, err, hint)
		}
		return localAddr{port: port}, nil
	}
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1 {
		host, portText, err := net.SplitHostPort(s)
		if err != nil {
			return localAddr{}, fmt.Errorf("%q is not an address and port (%s)", s, hint)
		}
		a, err := netip.ParseAddr(host)
		if err != nil || a.Zone() != "" {
			return localAddr{}, fmt.Errorf("%q: %q is not an IP address (%s)", s, host, hint)
		}
		port, err := localPort(portText)
		if err != nil {
			return localAddr{}, fmt.Errorf("%q: %v (%s)", s, err, hint)
		}
		a = a.Unmap()
		return localAddr{prefix: netip.PrefixFrom(a, a.BitLen()), port: port}, nil
	}
	pf, err := clientaddr.ParsePrefix(s)
	if err != nil {
		return localAddr{}, fmt.Errorf("%v (%s)", err, hint)
	}
	return localAddr{prefix: pf}, nil
}

// localPort parses a port of a local entry: 1 to 65535, decimal.
func localPort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 || s[0] == '+' {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return uint16(n), nil
}

// methodMatcher holds when the request's method is one of methods,
// exactly: HEAD is not GET here.
type methodMatcher struct {
	methods []string
}

func (m *methodMatcher) Match(r *engine.Request) bool {
	for _, x := range m.methods {
		if string(r.Method) == x {
			return true
		}
	}
	return false
}

func (m *methodMatcher) String() string { return "method " + strings.Join(m.methods, ", ") }

// Protocols are the values of a route's protocol key.
var Protocols = []string{"http", "https", "http/1.0", "http/1.1", "http/2", "http/3"}

// matcher parses one of the MatcherKeys of a route into r.When.
func (p *parser) matcher(key, n *yaml.Node, r *Route) {
	switch key.Value {
	case "header", "query":
		pairs, ok := p.mapping(n, key.Value+" name", nil)
		if !ok {
			return
		}
		if len(pairs) == 0 {
			p.errorf(n, "%s: want a map of names to values, e.g. %s", key.Value, matcherExample(key.Value))
			return
		}
		for _, kv := range pairs {
			name := kv.key.Value
			label := key.Value + " " + name
			if key.Value == "header" && !httpgrammar.IsToken(name) {
				p.errorf(kv.key, "header: %q is not a field name (letters, digits and !#$%%&'*+-.^_`|~)", name)
				continue
			}
			if key.Value == "header" {
				p.forwardingCondition(kv.key)
			}
			if name == "" {
				p.errorf(kv.key, "query: a parameter name is empty")
				continue
			}
			t, ok := p.valueTest(kv.val, label)
			if !ok {
				continue
			}
			if key.Value == "header" {
				r.When = append(r.When, &headerMatcher{name, t})
			} else {
				r.When = append(r.When, &queryMatcher{name, t})
			}
		}
	case "client":
		p.clientMatcher(n, r)
	case "local":
		list := p.stringList(n, "local")
		if len(list) == 0 {
			if d := deref(n); isNull(d) || d.Kind == yaml.SequenceNode && len(d.Content) == 0 {
				p.errorf(n, `local: want the addresses requests arrive on, e.g. local: [":8080", "10.0.0.1:80", 10.0.0.0/24]`)
			}
			return
		}
		m := &localMatcher{}
		for i, s := range list {
			a, err := parseLocalAddr(strings.TrimSpace(s))
			if err != nil {
				p.errorf(elem(n, i), "local: %v", err)
				continue
			}
			m.addrs = append(m.addrs, a)
		}
		r.When = append(r.When, m)
	case "method":
		list := p.stringList(n, "method")
		if len(list) == 0 {
			if d := deref(n); isNull(d) || d.Kind == yaml.SequenceNode && len(d.Content) == 0 {
				p.errorf(n, "method: want one or more methods, e.g. method: [GET]")
			}
			return
		}
		r.When = append(r.When, &methodMatcher{methods: p.methodList(n, "method", list)})
	case "protocol":
		m := &protocolMatcher{}
		list := p.stringList(n, "protocol")
		if len(list) == 0 && !isNull(deref(n)) {
			return
		}
		if len(list) == 0 {
			p.errorf(n, "protocol: want one or more of %s", strings.Join(Protocols, ", "))
			return
		}
		for i, s := range list {
			v := strings.ToLower(s)
			switch v {
			case "http", "https":
				m.schemes = append(m.schemes, v)
			case "http/1.0", "http/1.1", "http/2", "http/3":
				m.versions = append(m.versions, v)
			case "http/2.0", "h2":
				p.errorf(elem(n, i), "protocol: %q: write http/2", s)
				continue
			case "http/3.0", "h3":
				p.errorf(elem(n, i), "protocol: %q: write http/3", s)
				continue
			default:
				p.errorf(elem(n, i), "protocol: %q is none of %s", s, strings.Join(Protocols, ", "))
				continue
			}
		}
		r.When = append(r.When, m)
	}
}

func matcherExample(key string) string {
	if key == "header" {
		return `header: {X-Version: "2", Authorization: "~ ^Bearer ", X-Debug: null}`
	}
	return `query: {format: json, debug: "*", legacy: null}`
}

// clientMatcher parses a route's client key: a list of addresses and
// CIDRs, or a map of them (addresses) with the proxies whose
// client-address field is believed.
func (p *parser) clientMatcher(n *yaml.Node, r *Route) {
	n = deref(n)
	var addrs *yaml.Node
	var trusted []string
	header := ""
	if n.Kind == yaml.MappingNode {
		pairs, ok := p.mapping(n, "client key", ClientKeys)
		if !ok {
			return
		}
		for _, kv := range pairs {
			switch kv.key.Value {
			case "addresses":
				addrs = kv.val
			case "trusted_proxies":
				trusted = p.stringList(kv.val, "client: trusted_proxies")
			case "client_ip_header":
				header, _ = p.scalar(kv.val, "client: client_ip_header", "a field name")
			}
		}
		if addrs == nil {
			p.errorf(n, "client: no addresses: add addresses: [10.0.0.0/8, ...]")
			return
		}
	} else {
		addrs = n
	}
	list := p.stringList(addrs, "client")
	if len(list) == 0 {
		if len(p.errs) == 0 || deref(addrs).Kind != yaml.ScalarNode {
			p.errorf(addrs, "client: want addresses or CIDRs, e.g. client: [10.0.0.0/8, 2001:db8::/32, 127.0.0.1]")
		}
		return
	}
	res, err := clientaddr.New(trusted, header)
	if err != nil {
		p.errorf(n, "client: %v", err)
		return
	}
	m := &clientMatcher{resolver: res}
	for i, s := range list {
		pf, err := clientaddr.ParsePrefix(s)
		if err != nil {
			p.errorf(elem(addrs, i), "client: %v (write an address such as 192.0.2.7 or a CIDR such as 10.0.0.0/8)", err)
			continue
		}
		m.prefixes = append(m.prefixes, pf)
	}
	r.When = append(r.When, m)
}

// regexCaptures reports whether the regular expression expr (a pattern
// without pipe.RegexPrefix) has a group that pipe.Conn.Param gives for
// name: one so named, or the group of that number.
func regexCaptures(expr, name string) bool {
	re, err := pipe.CompileRegex(expr)
	if err != nil {
		return false
	}
	if n, err := strconv.Atoi(name); err == nil && name[0] != '0' {
		return n >= 1 && n <= re.NumSubexp()
	}
	return slices.Contains(re.SubexpNames()[1:], name)
}

// placeholderParams checks that the path parameters the templates of
// the route's redirect and rewrite use (${name}, $1) are captured by
// every pattern of the route: a parameter no pattern captures would be
// empty in every request.
func (p *parser) placeholderParams(r *Route) {
	for _, s := range r.Stages {
		var to string
		switch o := s.decoded.(type) {
		case *components.RedirectOptions:
			to = o.To
		case *components.RewriteOptions:
			to = o.To
		default:
			continue
		}
		if s.Component == nil {
			continue
		}
		for _, name := range components.PlaceholderParams(s.Name, to) {
			for _, pat := range r.Match {
				if !patternCaptures(pat, name) {
					what := "path parameter " + name + " (capture it with {" + name + "} or a group (?P<" + name + ">...))"
					if _, err := strconv.Atoi(name); err == nil {
						what = "path parameter $" + name + " (it has fewer captures)"
					}
					if (name == "host" || name == "hostname") && s.Name == "rewrite" {
						what += "; $" + name + " is the request's host in a redirect's URL only: a rewrite keeps the host"
					}
					p.errorf(&yaml.Node{Line: s.Line, Column: s.Col}, "%s: to %q uses %s, but match %q captures no %s", s.Name, to, placeholderText(name), pat, what)
					break
				}
			}
		}
	}
}

func placeholderText(name string) string { return "$" + name }

// patternCaptures reports whether the pattern pat gives the path
// parameter name (or number) to pipe.Conn.Param.
func patternCaptures(pat, name string) bool {
	if expr, ok := strings.CutPrefix(pat, pipe.RegexPrefix); ok {
		return regexCaptures(expr, name)
	}
	var names []string
	for _, seg := range strings.Split(pat, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			n, _, _ := strings.Cut(seg[1:len(seg)-1], ":")
			names = append(names, n)
		}
	}
	if n, err := strconv.Atoi(name); err == nil && name[0] != '0' {
		return n >= 1 && n <= len(names)
	}
	return slices.Contains(names, name)
}

// methodList returns the methods of list (the items of n, under key),
// each checked: a name that is not a method, or one in lower case, is an
// error at its item, and left out.
func (p *parser) methodList(n *yaml.Node, key string, list []string) []string {
	var out []string
	for i, m := range list {
		if !validMethod(m) {
			if up := strings.ToUpper(m); validMethod(up) {
				p.errorf(elem(n, i), "%s: %q is not a method: methods are case-sensitive (did you mean %q?)", key, m, up)
			} else {
				p.errorf(elem(n, i), "%s: %q is not a method name", key, m)
			}
			continue
		}
		out = append(out, m)
	}
	return out
}
