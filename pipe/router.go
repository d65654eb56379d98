package pipe

import (
	"bytes"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
)

// Route sends matching requests down a pipeline.
type Route struct {
	// Match lists path patterns: one ending in '/' matches every path
	// under it (a prefix); any other matches that path exactly. They are
	// matched against the canonical request path (engine.Request.Path:
	// decoded, without dot segments or repeated slashes), so every
	// spelling of a path takes the route its canonical form takes; a
	// pattern must itself be canonical, or it could never match.
	//
	// A pattern may capture path segments as named parameters: a whole
	// segment "{name}" matches any one segment, and "{name:int}" one
	// that must be an optional '-' and decimal digits fitting an int64,
	// as in "/article/{id:int}". A segment that is not such an integer
	// still selects the route (patterns match by shape), and the router
	// answers it 400 before the pipeline runs. Names are identifiers
	// (a letter or '_', then letters, digits or '_'), each used once in a
	// pattern. A pattern with captures matches paths of exactly its
	// number of segments and cannot end in '/'. Components read the
	// values with Conn.Param. A captured value is one segment of the
	// canonical path: decoded, never empty, "." or "..", and never
	// holding a '/' or NUL (the engine refuses "%2F" and "%00"), but it
	// may hold any other byte, which its user must escape.
	//
	// A pattern starting with "~ " is a regular expression in the
	// syntax of package regexp (RE2), the rest of the string after the
	// "~ ", searched for in the canonical path: "~ \\.php$" matches
	// every path ending in ".php", "~ ^/user/(?P<id>[0-9]+)$" only
	// "/user/" and digits; "(?i)" makes it case-insensitive. RE2 runs in
	// time linear in the path, whatever the expression, so no request
	// can make matching slow. Its groups are captures as {name} is:
	// Conn.Param gives a named group's value by its name, and every
	// group's, named or not, by its number ("1" for the first). Such a
	// value is a part of the canonical path, so it may be empty or hold
	// '/' (never NUL).
	Match []string

	// Host, if set, restricts the route to requests for that host
	// (ASCII case-insensitive, port ignored, a trailing dot ignored on
	// both sides: "example.com." is example.com); "*.example.com" matches
	// any subdomain of example.com.
	Host string

	// Methods, if set, restricts the route to those methods. The path
	// and host choose the pattern (the most specific one with a route for
	// the host), and the method then chooses among that pattern's routes:
	// a method none of them takes gets 405 with Allow, and never goes on
	// to a less specific pattern, whose route could serve what this one
	// guards. GET includes HEAD (RFC 9110 §9.3.2: HEAD is GET without the
	// content), so a HEAD never passes a GET route by for a less specific
	// one (which would tell the size, dates and ETag of what the GET
	// route guards).
	Methods []string

	// When lists conditions on the request beyond its path, host and
	// method (a header, the query, the client's address...): the route
	// takes a request only if every one holds. Routes of one pattern
	// and host are tried routes with conditions first, in the order
	// given, then the route without any, which is the fallback; a
	// request none of them takes gets 404 (or 405 when a route whose
	// conditions held does not take its method), and never goes on to a
	// less specific pattern, as for Methods. Several routes may share a
	// pattern, host and methods when all but one have conditions. A
	// route without conditions costs nothing more to route to.
	When []Matcher

	// Pipeline serves the requests the route matches.
	Pipeline Component

	// ErrorPages, if set, are the route's error pages (see ErrorPages;
	// typically its own over the server's): the router sets them once it
	// has chosen the route, before it checks the path parameters, so a 400
	// for a parameter gets them as the pipeline's errors do.
	ErrorPages *ErrorPages
}

// Matcher is a condition on a request that a route may require (see
// Route.When). Match must be safe for concurrent use, must not modify
// the request and must not keep any part of it after it returns.
type Matcher interface {
	Match(r *engine.Request) bool
}

// MatcherFunc is a function as a Matcher.
type MatcherFunc func(r *engine.Request) bool

// Match implements Matcher.
func (f MatcherFunc) Match(r *engine.Request) bool { return f(r) }

// Router is a Component that sends each request down the pipeline of the
// most specific route that matches it: an exact path first; then the
// regular expressions, in the order of the routes, the first that the
// path matches; then,
// segment by segment, a literal beats a capture and a capture beats the
// rest of the path a prefix takes, so "/a/new" beats "/a/{id}", which
// beats "/{x}/{y}", "/a/{x}/c" beats "/{y}/b/c", "/static/" beats
// "/{x}/{y}" (for "/static/img") and "/a/{id}" beats "/a/"; a longer
// prefix beats a shorter one; for the same pattern, a route with a Host
// before one without, and a route with conditions (When) before one
// without. Requests no route matches get 404. A request for a host that
// routes name exactly is routed among the routes that can serve it
// alone (its own, matching wildcards, those for any host), so routes for
// other hosts add nothing to its cost.
//
// The cost of the choice depends on the request's path, not on the
// number of routes: a map lookup for the exact path; one for each of
// the path's prefixes that ends in '/' (as long as the longest prefix
// pattern), longest first; and, among the patterns with captures that
// have as many segments as the path, one for each arrangement of
// literals and captures they use (the literal segments of the path
// are the key). Only the regular expressions are tried one by one, in
// order, as they must be. Finding the route allocates nothing for a
// path of up to 512 bytes. A Router is immutable and safe for
// concurrent use.
type Router struct {
	exact map[string][]*route
	regex []*regexGroup
	// regexOrder lists the routes of regular-expression patterns in the
	// order given: for a request, the expression of the first that can
	// serve its host and matches its path is the request's.
	regexOrder []*route
	captures   [][]*shape          // by number of segments; most specific shape first
	prefix     map[string][]*route // by pattern, each pattern's routes in the order tried
	longest    int                 // the length of the longest prefix pattern
	lengths    [4]uint64           // bit n set: a prefix pattern n bytes long (n < 256), or one longer

	// byHost holds, for each exact host a route names, a router of the
	// routes that can serve it (its own, the wildcards that match it and
	// those for any host), so that a request for it is routed among them
	// alone: routes for other hosts cost it nothing. Nil when no route
	// names an exact host.
	byHost map[string]*Router
}

type route struct {
	pattern string
	key     string    // PatternKey(pattern)
	segs    []segment // nil for a pattern without captures
	depth   int       // literal segments before the first capture, or a prefix's segments
	host    string    // lower-case; "" for any
	methods []string
	when    []Matcher
	comp    Component
	pages   *ErrorPages
	group   *regexGroup // a regular-expression pattern's group
}

// NewRouter builds a router. It refuses an empty pattern, a pattern that
// is not a canonical path (it holds "//" or a "." or ".." segment), a
// pattern whose captures CheckPattern refuses, a regular expression that
// does not compile, a route without a pipeline, and two routes without
// When that have the same PatternKey, host and an overlapping method
// set.
func NewRouter(routes ...Route) (*Router, error) {
	compiled := map[string]*regexp.Regexp{}
	rt, err := newRouter(routes, compiled)
	if err != nil {
		return nil, err
	}
	rt.indexHosts(routes, compiled)
	return rt, nil
}

// newRouter builds a router without the host index. compiled holds the
// regular expressions compiled so far, by pattern: each is compiled once
// for a router and the routers of its host index.
func newRouter(routes []Route, compiled map[string]*regexp.Regexp) (*Router, error) {
	rt := &Router{exact: map[string][]*route{}, prefix: map[string][]*route{}}
	seen := map[string][]*route{}
	shapes := map[string]*shape{} // by number of segments and arrangement
	groups := map[string]*regexGroup{}
	for i, r := range routes {
		if r.Pipeline == nil {
			return nil, fmt.Errorf("route %d: no pipeline", i)
		}
		if len(r.Match) == 0 {
			return nil, fmt.Errorf("route %d: no match pattern", i)
		}
		for _, m := range r.When {
			if m == nil {
				return nil, fmt.Errorf("route %d: a nil matcher", i)
			}
		}
		for _, p := range r.Match {
			host := strings.TrimSuffix(strings.ToLower(r.Host), ".")
			e := &route{pattern: p, key: PatternKey(p), host: host, methods: routeMethods(r.Methods), when: slices.Clip(r.When), comp: r.Pipeline, pages: r.ErrorPages}
			expr, isRegex := strings.CutPrefix(p, RegexPrefix)
			if isRegex {
				if compiled[p] == nil {
					re, err := CompileRegex(expr)
					if err != nil {
						return nil, fmt.Errorf("route %d: %v", i, err)
					}
					compiled[p] = re
				}
			} else {
				if p == "" || p[0] != '/' {
					return nil, fmt.Errorf("route %d: pattern %q must start with / (or %q for a regular expression)", i, p, RegexPrefix)
				}
				if c := CanonicalPattern(p); c != p {
					return nil, fmt.Errorf("route %d: pattern %q never matches: request paths are canonical (write %q)", i, p, c)
				}
				segs, err := parsePattern(p)
				if err != nil {
					return nil, fmt.Errorf("route %d: %v", i, err)
				}
				e.segs = segs
				switch {
				case segs != nil:
					for e.depth < len(segs) && segs[e.depth].name == "" {
						e.depth++
					}
				case strings.HasSuffix(p, "/"):
					e.depth = strings.Count(p, "/") - 1
				}
			}
			key := e.key + " " + e.host
			for _, o := range seen[key] {
				if len(o.when) == 0 && len(e.when) == 0 && MethodsOverlap(o.methods, e.methods) {
					if o.pattern != p {
						return nil, fmt.Errorf("route %d: pattern %q (host %q) matches the paths %q matches", i, p, r.Host, o.pattern)
					}
					return nil, fmt.Errorf("route %d: pattern %q (host %q) is matched twice", i, p, r.Host)
				}
			}
			seen[key] = append(seen[key], e)
			switch {
			case isRegex:
				g := groups[p]
				if g == nil {
					re := compiled[p]
					g = &regexGroup{re: re, names: re.SubexpNames()}
					groups[p] = g
					rt.regex = append(rt.regex, g)
				}
				g.routes = append(g.routes, e)
				e.group = g
				rt.regexOrder = append(rt.regexOrder, e)
			case e.segs != nil:
				for len(rt.captures) <= len(e.segs) {
					rt.captures = append(rt.captures, nil)
				}
				arr, lits := arrangement(e.segs)
				sh := shapes[arr]
				if sh == nil {
					sh = &shape{arrangement: arr, routes: map[string][]*route{}, lead: -1}
					if k := strings.IndexByte(arr, '1'); !strings.Contains(arr[k:], "0") {
						sh.lead = k // literals, then only captures
					}
					shapes[arr] = sh
					rt.captures[len(e.segs)] = append(rt.captures[len(e.segs)], sh)
				}
				sh.routes[lits] = append(sh.routes[lits], e)
			case strings.HasSuffix(p, "/"):
				rt.prefix[p] = append(rt.prefix[p], e)
				rt.longest = max(rt.longest, len(p))
				n := min(len(p), 255)
				rt.lengths[n/64] |= 1 << (n % 64)
			default:
				rt.exact[p] = append(rt.exact[p], e)
			}
		}
	}
	for _, shs := range rt.captures {
		// Segment by segment, a literal before a capture: '0' < '1'.
		slices.SortFunc(shs, func(a, b *shape) int { return strings.Compare(a.arrangement, b.arrangement) })
		for _, sh := range shs {
			for _, es := range sh.routes {
				sort.SliceStable(es, func(i, j int) bool { return before(es[i], es[j]) })
			}
		}
	}
	for _, es := range rt.prefix {
		sort.SliceStable(es, func(i, j int) bool { return before(es[i], es[j]) })
	}
	for _, es := range rt.exact {
		sort.SliceStable(es, func(i, j int) bool { return before(es[i], es[j]) })
	}
	for _, g := range rt.regex {
		sort.SliceStable(g.routes, func(i, j int) bool { return before(g.routes[i], g.routes[j]) })
	}
	return rt, nil
}

// indexHosts builds rt.byHost from the routes rt was built from. Each
// host's router holds the entries of the routes that can serve the host,
// in the order given, so it sorts them as rt does and chooses as rt
// would, without looking at the others.
func (rt *Router) indexHosts(routes []Route, compiled map[string]*regexp.Regexp) {
	for _, r := range routes {
		h := strings.TrimSuffix(strings.ToLower(r.Host), ".")
		if h == "" || strings.HasPrefix(h, "*.") || rt.byHost[h] != nil {
			continue
		}
		var mine []Route
		for _, o := range routes {
			oh := strings.TrimSuffix(strings.ToLower(o.Host), ".")
			if oh == "" || oh == h || strings.HasPrefix(oh, "*.") && hostMatches(oh, []byte(h)) {
				mine = append(mine, o)
			}
		}
		sub, err := newRouter(mine, compiled)
		if err != nil {
			continue // cannot be: rt took every one of them
		}
		if rt.byHost == nil {
			rt.byHost = map[string]*Router{}
		}
		rt.byHost[h] = sub
	}
}

// before orders two routes of one pattern as the router tries them: a
// route for a host before one for any host, a route for an exact host
// before one for a wildcard, then, of those, a route
// with conditions (When) before one without, the fallback. Otherwise
// the routes keep their order (the sorts are stable).
func before(a, b *route) bool {
	if (a.host != "") != (b.host != "") {
		return a.host != ""
	}
	if aw, bw := strings.HasPrefix(a.host, "*."), strings.HasPrefix(b.host, "*."); aw != bw {
		return !aw // an exact host before a wildcard, as sites choose
	}
	return len(a.when) > 0 && len(b.when) == 0
}

// shape is the patterns with captures of one arrangement: one number of
// segments, and captures at the same places.
type shape struct {
	// arrangement has a byte for each segment, '0' for a literal and '1'
	// for a capture, so that the arrangements of one number of segments
	// sort as the router tries them: segment by segment, a literal first.
	arrangement string

	// routes holds each pattern's routes, in the order tried, by the
	// pattern's literal segments, each after a '/' (see arrangement):
	// "/a" for "/a/{id}" and "/a/{name:int}", "" for "/{x}/{y}". Literal
	// segments hold no '/', so the key of a path is unambiguous.
	routes map[string][]*route

	// lead is the number of literal segments before the captures when
	// the arrangement has no literal after a capture, whose key is then
	// the path up to the end of them; -1 otherwise.
	lead int
}

// arrangement returns the arrangement of segs (see shape) and the key of
// its literal segments.
func arrangement(segs []segment) (arr, lits string) {
	var a, l strings.Builder
	for _, s := range segs {
		if s.name != "" {
			a.WriteByte('1')
			continue
		}
		a.WriteByte('0')
		l.WriteByte('/')
		l.WriteString(s.literal)
	}
	return a.String(), l.String()
}

// find returns the routes of the pattern of sh that the canonical path p
// matches, p having as many segments as sh's patterns; nil when none.
// It allocates nothing for a path of up to 512 bytes.
func (sh *shape) find(p []byte) []*route {
	if sh.lead >= 0 {
		end := 0
		for range sh.lead {
			end = segmentEnd(p, end+1)
		}
		return sh.routes[string(p[:end])]
	}
	var buf [512]byte
	key := buf[:0]
	i := 1
	for k := 0; k < len(sh.arrangement); k++ {
		j := segmentEnd(p, i)
		if sh.arrangement[k] == '0' {
			key = append(key, '/')
			key = append(key, p[i:j]...)
		}
		i = j + 1
	}
	return sh.routes[string(key)]
}

// nextPrefix returns the longest prefix pattern that is a prefix of
// p[:end], ending at a '/' of it, and its routes; the length of the
// pattern is where to look for a shorter one. It returns 0 and nil when
// there is none.
func (rt *Router) nextPrefix(p []byte, end int) (int, []*route) {
	for i := min(end, rt.longest) - 1; i >= 0; i-- {
		if n := min(i+1, 255); p[i] == '/' && rt.lengths[n/64]&(1<<(n%64)) != 0 {
			if es := rt.prefix[string(p[:i+1])]; es != nil {
				return i + 1, es
			}
		}
	}
	return 0, nil
}

// prefixDeeper reports whether a prefix route for host that matches the
// path p has more than depth segments: more literal segments than the
// first matching capture pattern has before its first capture, which is
// then the less specific (segment by segment, a literal beats a capture,
// and a capture beats the rest of the path a prefix takes). The longest
// prefix with a route for the host is the deepest: of two prefixes of one
// path the longer has more segments.
func (rt *Router) prefixDeeper(p []byte, host []byte, depth int) bool {
	for end := len(p); ; {
		n, es := rt.nextPrefix(p, end)
		if es == nil {
			return false
		}
		for _, e := range es {
			if e.host == "" || hostMatches(e.host, host) {
				return e.depth > depth
			}
		}
		end = n - 1
	}
}

// routeMethods returns the methods a route restricted to ms takes: ms,
// with HEAD added when it names GET but not HEAD (RFC 9110 §9.3.2). An
// empty ms (every method) stays empty. ms itself is not modified.
func routeMethods(ms []string) []string {
	if slices.Contains(ms, "GET") && !slices.Contains(ms, "HEAD") {
		return append(slices.Clip(ms), "HEAD")
	}
	return ms
}

// MethodsOverlap reports whether two routes restricted to methods a and b
// (empty: every method) take some method in common, as routeMethods
// extends them.
func MethodsOverlap(a, b []string) bool {
	a, b = routeMethods(a), routeMethods(b)
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// Handle implements Component.
func (rt *Router) Handle(c *Conn) bool {
	r := c.Request
	if rt.byHost != nil {
		var buf [255]byte
		if h := lowerHost(buf[:0], hostOnly(r.Host)); h != nil {
			if sub := rt.byHost[string(h)]; sub != nil {
				return sub.Handle(c)
			}
		}
	}
	if len(r.Path) == 1 && r.Path[0] == '*' {
		// OPTIONS * (the parser admits * for no other method) asks about
		// the server, not a resource on a route (RFC 9110 §9.3.7).
		c.SetStatus(http.StatusNoContent)
		c.SetContent(nil)
		return true
	}
	if r.IsMethod("CONNECT") {
		// Its target is an authority, which no route matches: Sluice is
		// not a tunnelling proxy (RFC 9110 §9.3.6, §15.6.2).
		return c.Error(http.StatusNotImplemented, "CONNECT is not supported")
	}
	host := hostOnly(r.Host)
	// The most specific pattern with a route for the host is where the
	// request goes, whatever its method: among that pattern's routes the
	// method picks one, and if none takes it the answer is 405. A method
	// never passes a route by for a less specific one, which could serve
	// what the specific route guards (a POST to a GET-only /admin/
	// reaching the catch-all route's handler).
	var allow []string
	located := false
	try := func(e *route) (Component, bool) {
		if e.host != "" && !hostMatches(e.host, host) {
			return nil, false
		}
		located = true
		if len(e.when) > 0 && !e.matches(r) {
			return nil, false
		}
		if len(e.methods) > 0 && !hasMethod(e.methods, r.Method) {
			allow = append(allow, e.methods...)
			return nil, false
		}
		if e.pages != nil {
			c.pages = e.pages
		}
		return e.comp, true
	}
	for _, e := range rt.exact[string(r.Path)] {
		if comp, ok := try(e); ok {
			return comp.Handle(c)
		}
	}
	if !located && len(rt.regexOrder) > 0 {
		// The expressions in the order of their first route that can
		// serve the host: a route for another host does not move its
		// expression ahead of one this host's routes come to first.
		for _, first := range rt.regexOrder {
			if first.host != "" && !hostMatches(first.host, host) {
				continue
			}
			g := first.group
			m := g.re.FindSubmatchIndex(r.Path)
			if m == nil {
				continue
			}
			for _, e := range g.routes {
				if comp, ok := try(e); ok {
					c.captureRegex(g.names, m)
					return comp.Handle(c)
				}
			}
			break // this expression was the request's; no route of it took it
		}
	}
	if !located && len(rt.captures) > 0 {
		if n := countSegments(r.Path); n < len(rt.captures) {
		shapes:
			for _, sh := range rt.captures[n] {
				if located {
					break // a more specific shape was the request's; its methods did not fit
				}
				for _, e := range sh.find(r.Path) {
					if !located && rt.prefixDeeper(r.Path, host, e.depth) {
						break shapes // a prefix's literal segments go further than any shape's
					}
					if comp, ok := try(e); ok {
						if !c.capture(e.segs) {
							return false
						}
						return comp.Handle(c)
					}
				}
			}
		}
	}
	// The prefixes of the path, longest first, until one is the
	// request's: a more specific pattern whose routes did not take its
	// method (or conditions) ends the search.
	for end := len(r.Path); !located; {
		n, es := rt.nextPrefix(r.Path, end)
		if es == nil {
			break
		}
		for _, e := range es {
			if comp, ok := try(e); ok {
				return comp.Handle(c)
			}
		}
		end = n - 1
	}
	if allow != nil {
		c.Header().Set("Allow", strings.Join(dedupe(allow), ", "))
		return c.Error(http.StatusMethodNotAllowed, "method not allowed here")
	}
	return c.Error(http.StatusNotFound, "no route for this path")
}

// matches reports whether every condition of the route holds for r.
func (e *route) matches(r *engine.Request) bool {
	for _, m := range e.when {
		if !m.Match(r) {
			return false
		}
	}
	return true
}

func hasMethod(ms []string, m []byte) bool {
	for _, x := range ms {
		if x == string(m) {
			return true
		}
	}
	return false
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// CanonicalPattern returns the canonical form of a route pattern that
// starts with '/', as the engine makes request paths canonical:
// percent-escapes decoded ("%61" is "a"; a '%' that starts no escape is
// itself), then repeated slashes merged and dot segments removed, a
// trailing slash kept (a final "." or ".." leaves one). A ".." above the
// root is dropped. A pattern that differs from its canonical form never
// matches a request: "/caf%C3%A9/" would match only the path "/café/"
// spelled "/caf%25C3%25A9/", and so leave "/café/" to other routes.
func CanonicalPattern(p string) string {
	p = patternUnescape(p)
	c := path.Clean(p)
	if c != "/" && (strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..")) {
		c += "/"
	}
	return c
}

// patternUnescape decodes the well-formed percent-escapes of p (RFC 3986
// §2.1) and leaves every other byte, a '%' that starts no escape included.
func patternUnescape(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	b := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) {
			hi, ok1 := httpgrammar.Unhex(p[i+1])
			lo, ok2 := httpgrammar.Unhex(p[i+2])
			if ok1 && ok2 {
				b = append(b, hi<<4|lo)
				i += 2
				continue
			}
		}
		b = append(b, p[i])
	}
	return string(b)
}

// hostOnly strips the port from a Host value (keeping IPv6 brackets) and
// a trailing dot: "example.com.:8080" is example.com, the same host in its
// fully qualified spelling (RFC 1034 §3.1).
func hostOnly(h []byte) []byte {
	if i := bytes.LastIndexByte(h, ':'); i >= 0 && bytes.IndexByte(h[i:], ']') < 0 {
		h = h[:i]
	}
	if n := len(h); n > 0 && h[n-1] == '.' {
		h = h[:n-1]
	}
	return h
}

// hostMatches compares a lower-case pattern with a request host, ASCII
// case-insensitively; "*.example.com" matches subdomains of example.com.
func hostMatches(pattern string, host []byte) bool {
	if strings.HasPrefix(pattern, "*.") {
		suffix := pattern[1:]
		return len(host) > len(suffix) && httpgrammar.EqualFold(host[len(host)-len(suffix):], suffix)
	}
	return httpgrammar.EqualFold(host, pattern)
}
