package pipe

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// linearRouter is the router as it was before it indexed prefixes and
// patterns with captures: it tries them one by one, in order of
// specificity. It is kept as the oracle the indexed router must agree
// with (FuzzRouterIndex).
type linearRouter struct {
	exact      map[string][]*route
	regex      []*regexGroup
	regexOrder []*route
	captures   [][]*route // by number of segments; most specific shape first
	prefix     []*route   // longest pattern first
}

// newLinearRouter builds the oracle from routes, as NewRouter did
// before the prefix and capture indexes (and without the host index).
func newLinearRouter(routes []Route) (*linearRouter, error) {
	compiled := map[string]*regexp.Regexp{}
	rt := &linearRouter{exact: map[string][]*route{}}
	seen := map[string][]*route{}
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
				rt.captures[len(e.segs)] = append(rt.captures[len(e.segs)], e)
			case strings.HasSuffix(p, "/"):
				rt.prefix = append(rt.prefix, e)
			default:
				rt.exact[p] = append(rt.exact[p], e)
			}
		}
	}
	for _, es := range rt.captures {
		sort.SliceStable(es, func(i, j int) bool {
			if c := compareShapes(es[i].segs, es[j].segs); c != 0 {
				return c < 0 // one shape's routes together
			}
			return before(es[i], es[j])
		})
	}
	sort.SliceStable(rt.prefix, func(i, j int) bool {
		if len(rt.prefix[i].pattern) != len(rt.prefix[j].pattern) {
			return len(rt.prefix[i].pattern) > len(rt.prefix[j].pattern)
		}
		if rt.prefix[i].pattern != rt.prefix[j].pattern {
			return rt.prefix[i].pattern < rt.prefix[j].pattern // one pattern's routes together
		}
		return before(rt.prefix[i], rt.prefix[j])
	})
	for _, es := range rt.exact {
		sort.SliceStable(es, func(i, j int) bool { return before(es[i], es[j]) })
	}
	for _, g := range rt.regex {
		sort.SliceStable(g.routes, func(i, j int) bool { return before(g.routes[i], g.routes[j]) })
	}
	return rt, nil
}

// prefixDeeper reports whether a prefix route for host that matches the
// path p has more than depth segments: more literal segments than the
// first matching capture pattern has before its first capture, which is
// then the less specific (segment by segment, a literal beats a capture,
// and a capture beats the rest of the path a prefix takes). The first
// prefix that matches is the deepest: prefixes are sorted longest first,
// and of two prefixes of one path the longer has more segments.
func (rt *linearRouter) prefixDeeper(p []byte, host []byte, depth int) bool {
	for _, e := range rt.prefix {
		if len(p) >= len(e.pattern) && string(p[:len(e.pattern)]) == e.pattern &&
			(e.host == "" || hostMatches(e.host, host)) {
			return e.depth > depth
		}
	}
	return false
}

// Handle implements Component.
func (rt *linearRouter) Handle(c *Conn) bool {
	r := c.Request
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
			for i, e := range rt.captures[n] {
				if located && e.key != rt.captures[n][i-1].key {
					break // a more specific shape was the request's; its methods did not fit
				}
				if matchSegments(e.segs, r.Path) {
					if !located && rt.prefixDeeper(r.Path, host, e.depth) {
						break // a prefix's literal segments go further than any shape's
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
	for i, e := range rt.prefix {
		if located && (i == 0 || e.pattern != rt.prefix[i-1].pattern) {
			break // a more specific pattern was the request's; its methods did not fit
		}
		if p := e.pattern; len(r.Path) >= len(p) && string(r.Path[:len(p)]) == p {
			if comp, ok := try(e); ok {
				return comp.Handle(c)
			}
		}
	}
	if allow != nil {
		c.Header().Set("Allow", strings.Join(dedupe(allow), ", "))
		return c.Error(http.StatusMethodNotAllowed, "method not allowed here")
	}
	return c.Error(http.StatusNotFound, "no route for this path")
}

// compareShapes orders patterns with captures of the same length: at the
// first segment where one has a literal and the other a capture, the
// literal comes first; two different literals order as strings (no path
// matches both). It returns 0 for patterns with the same key.
func compareShapes(a, b []segment) int {
	for i := range a {
		al, bl := a[i].name == "", b[i].name == ""
		switch {
		case al && !bl:
			return -1
		case !al && bl:
			return 1
		case al && bl && a[i].literal != b[i].literal:
			return strings.Compare(a[i].literal, b[i].literal)
		}
	}
	return 0
}

// matchSegments reports whether the canonical path p, which has as many
// segments as segs and does not end in '/', has segs' literals.
func matchSegments(segs []segment, p []byte) bool {
	i := 1
	for _, s := range segs {
		j := segmentEnd(p, i)
		if s.name == "" && string(p[i:j]) != s.literal {
			return false
		}
		i = j + 1
	}
	return true
}
