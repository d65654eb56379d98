package translate

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The config as written: the keys of docs/config.md.
type yconfig struct {
	Admin  map[string]string `yaml:"admin,omitempty"`
	Listen []any             `yaml:"listen"`
	Sites  []ysite           `yaml:"sites,omitempty"`
	Routes []yroute          `yaml:"routes"`
}

type ysite struct {
	Hosts  []string `yaml:"hosts"`
	Routes []yroute `yaml:"routes"`
}

type yroute struct {
	Match    any               `yaml:"match"` // a pattern, or a list of patterns
	Methods  []string          `yaml:"methods,omitempty"`
	Header   map[string]string `yaml:"header,omitempty"`
	Query    map[string]string `yaml:"query,omitempty"`
	Local    []string          `yaml:"local,omitempty"`
	Method   []string          `yaml:"method,omitempty"`
	Pipeline []map[string]any  `yaml:"pipeline"`
}

// pattern is one Sluice path pattern of a hostname.
type pattern struct {
	kind  int    // patExact, patPrefix or patRegex
	text  string // as written in match
	path  string // patExact: the path; patPrefix: the prefix without its /; patRegex from Exact: the path
	regex string // patRegex from a RegularExpression match: the expression
}

const (
	patExact = iota
	patRegex
	patPrefix
)

// patterns returns the Sluice patterns an entry's match needs.
func (e *entry) patterns() []pattern {
	switch e.pathType {
	case gatewayv1.PathMatchExact:
		if strings.HasSuffix(e.path, "/") {
			// A Sluice pattern ending in / is a prefix: an exact
			// path with one is a regular expression.
			return []pattern{{kind: patRegex, text: "~ ^" + regexp.QuoteMeta(e.path) + "$", path: e.path}}
		}
		return []pattern{{kind: patExact, text: e.path, path: e.path}}
	case gatewayv1.PathMatchRegularExpression:
		return []pattern{{kind: patRegex, text: "~ ^(?:" + e.path + ")$", regex: e.path}}
	}
	if e.path == "/" {
		return []pattern{{kind: patPrefix, text: "/", path: ""}}
	}
	return []pattern{{kind: patExact, text: e.path, path: e.path}, {kind: patPrefix, text: e.path + "/", path: e.path}}
}

// prefixCovers reports whether the Gateway path prefix q (without its
// trailing /, or "/") matches the path x.
func prefixCovers(q, x string) bool {
	return q == "/" || x == q || strings.HasPrefix(x, q+"/")
}

// covers reports whether e matches every request Sluice routes to p.
func (e *entry) covers(p pattern) bool {
	switch p.kind {
	case patExact:
		return e.pathType == gatewayv1.PathMatchExact && e.path == p.path || e.pathType == gatewayv1.PathMatchPathPrefix && prefixCovers(e.path, p.path)
	case patPrefix:
		return e.pathType == gatewayv1.PathMatchPathPrefix && (e.path == "/" || p.path != "" && prefixCovers(e.path, p.path))
	}
	if p.regex != "" {
		return e.pathType == gatewayv1.PathMatchRegularExpression && e.path == p.regex || e.pathType == gatewayv1.PathMatchPathPrefix && e.path == "/"
	}
	return e.pathType == gatewayv1.PathMatchExact && e.path == p.path || e.pathType == gatewayv1.PathMatchPathPrefix && prefixCovers(e.path, p.path)
}

func (e *entry) conditional() bool { return len(e.m.Headers) > 0 || len(e.m.QueryParams) > 0 }
func (e *entry) restricted() bool  { return e.conditional() || e.m.Method != nil }

// precedence orders the entries that may take a request as the Gateway API
// does: the most specific hostname (the longest exact one, then the
// longest wildcard, then any host), then an exact path, then the longest
// prefix (regular expressions, whose
// place the API leaves open, between them), then a method, then the most
// headers, then the most query parameters, then the oldest route, and in
// a route its rules and matches in order.
func precedence(a, b *entry) int {
	rank := func(e *entry) int {
		switch e.pathType {
		case gatewayv1.PathMatchExact:
			return 0
		case gatewayv1.PathMatchRegularExpression:
			return 1
		}
		return 2
	}
	exact := func(e *entry) bool { return e.host != "" && !strings.HasPrefix(e.host, "*.") }
	if ae, be := exact(a), exact(b); ae != be {
		if ae {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(len(b.host), len(a.host)); c != 0 {
		return c
	}
	if c := cmp.Compare(rank(a), rank(b)); c != 0 {
		return c
	}
	if a.pathType == gatewayv1.PathMatchPathPrefix {
		if c := cmp.Compare(len(b.path), len(a.path)); c != 0 {
			return c
		}
	}
	if am, bm := a.m.Method != nil, b.m.Method != nil; am != bm {
		if am {
			return -1
		}
		return 1
	}
	return cmp.Or(
		cmp.Compare(len(b.m.Headers), len(a.m.Headers)),
		cmp.Compare(len(b.m.QueryParams), len(a.m.QueryParams)),
		olderFirst(a.route, b.route),
		cmp.Compare(a.rule, b.rule),
		cmp.Compare(a.match, b.match))
}

func (t *translation) emit() {
	var cfg yconfig
	if t.opts.AdminSocket != "" {
		cfg.Admin = map[string]string{"socket": t.opts.AdminSocket}
		if t.opts.AdminState != "" {
			cfg.Admin["state"] = t.opts.AdminState
		}
	}
	slices.Sort(t.plain)
	for _, a := range t.plain {
		// h2c: gRPC clients speak HTTP/2 with prior knowledge to a plain
		// listener, beside HTTP/1.1 (HTTPS ones offer h2 by ALPN).
		cfg.Listen = append(cfg.Listen, map[string]any{"address": a, "h2c": true})
	}
	var tlsAddrs []string
	for a := range t.tls {
		tlsAddrs = append(tlsAddrs, a)
	}
	slices.Sort(tlsAddrs)
	for _, a := range tlsAddrs {
		var certs []map[string]string
		seen := map[certFiles]bool{}
		for _, c := range t.tls[a].certs {
			if !seen[c] {
				seen[c] = true
				certs = append(certs, map[string]string{"cert": c.cert, "key": c.key})
			}
		}
		cfg.Listen = append(cfg.Listen, map[string]any{"address": a, "tls": map[string]any{"certificates": certs}})
	}
	if len(cfg.Listen) == 0 {
		cfg.Listen = []any{cmp.Or(t.opts.IdleListen, idleIPv4)}
	}
	var proxies []map[string]any
	var hostnames []string
	for h := range t.hosts {
		hostnames = append(hostnames, h)
	}
	slices.Sort(hostnames)
	for _, h := range hostnames {
		routes := t.hostRoutes(t.borrow(h), &proxies)
		if h != "" && len(routes) == 0 {
			routes = []yroute{{Match: "/", Pipeline: notFound()}}
		}
		if h == "" {
			cfg.Routes = routes
		} else {
			cfg.Sites = append(cfg.Sites, ysite{Hosts: []string{h}, Routes: routes})
		}
	}
	if len(cfg.Routes) == 0 {
		cfg.Routes = []yroute{{Match: "/", Pipeline: notFound()}}
	}
	t.res.Config = marshal(cfg)
	for _, p := range proxies {
		p["upstreams"] = []string{"http://0.0.0.0:1"}
	}
	t.res.Skeleton = marshal(cfg)
}

func marshal(cfg yconfig) []byte {
	out, err := yaml.Marshal(cfg)
	if err != nil {
		panic("translate: marshalling the config: " + err.Error()) // plain maps and strings always marshal
	}
	return out
}

func notFound() []map[string]any {
	return []map[string]any{{"text": map[string]any{"status": 404, "body": "no route for this request\n"}}}
}

// hostRoutes returns the Sluice routes of one hostname's entries.
func (t *translation) hostRoutes(entries []*entry, proxies *[]map[string]any) []yroute {
	var pats []pattern
	seen := map[string]bool{}
	for _, e := range entries {
		for _, p := range e.patterns() {
			if !seen[p.text] {
				seen[p.text] = true
				pats = append(pats, p)
			}
		}
	}
	slices.SortFunc(pats, func(a, b pattern) int { return strings.Compare(a.text, b.text) })
	// The patterns whose requests the same matches take, in the same
	// order, share routes (and upstream sets): /a and /a/ of a prefix.
	type group struct {
		texts []string
		cover []*entry
	}
	var groups []*group
	byCover := map[string]*group{}
	for _, p := range pats {
		var cover []*entry
		for _, e := range entries {
			if e.covers(p) {
				cover = append(cover, e)
			}
		}
		slices.SortFunc(cover, precedence)
		key := ""
		for _, e := range cover {
			key += fmt.Sprintf("%p,", e)
		}
		if g := byCover[key]; g != nil {
			g.texts = append(g.texts, p.text)
			continue
		}
		g := &group{texts: []string{p.text}, cover: cover}
		byCover[key] = g
		groups = append(groups, g)
	}
	var out []yroute
	for _, g := range groups {
		var match any = g.texts[0]
		if len(g.texts) > 1 {
			match = g.texts
		}
		// Each listener's matches in their order, on a condition on the
		// listener's address and port: until one that takes every
		// request there.
		done := map[string]bool{}
		for _, e := range g.cover {
			if done[e.local] {
				continue
			}
			r := yroute{Match: match, Local: []string{e.local}, Pipeline: t.pipeline(e, proxies)}
			for _, hm := range e.m.Headers {
				if r.Header == nil {
					r.Header = map[string]string{}
				}
				r.Header[strings.ToLower(string(hm.Name))] = condValue(hm.Type != nil && *hm.Type == gatewayv1.HeaderMatchRegularExpression, hm.Value)
			}
			for _, qm := range e.m.QueryParams {
				if r.Query == nil {
					r.Query = map[string]string{}
				}
				r.Query[string(qm.Name)] = condValue(qm.Type != nil && *qm.Type == gatewayv1.QueryParamMatchRegularExpression, qm.Value)
			}
			if e.m.Method != nil {
				// Exactly, HEAD apart from GET, falling through as the
				// API wants: the method condition, not methods.
				r.Method = []string{string(*e.m.Method)}
			}
			out = append(out, r)
			if !e.restricted() {
				done[e.local] = true
			}
		}
		// A request no route takes (on a listener with none for this
		// pattern, or that its matches' conditions leave) gets Sluice's
		// 404: no route has methods, so none is a 405.
	}
	return out
}

// borrow returns the entries that serve the requests for hostname h (the
// hosts that Sluice's site h takes): for each listener address and port,
// the entries of the listener that owns h there (of the listeners at that
// address and port, the one of the most specific hostname that covers h:
// h itself, then the longest wildcard, then any host), under h and every
// wider hostname (a wildcard that covers h, any host), which precedence
// tries after h's. Sluice chooses the site by host for every listener at
// once; this keeps each listener to its own routes, and a request to the
// listener its host belongs to, as a Gateway does.
func (t *translation) borrow(h string) []*entry {
	tables := []string{h}
	if h != "" {
		var wider []string
		for o := range t.hosts {
			if o != h && strings.HasPrefix(o, "*.") && hostMatches(o, h) {
				wider = append(wider, o)
			}
		}
		slices.SortFunc(wider, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
		tables = append(append(tables, wider...), "")
	}
	var out []*entry
	for _, o := range tables {
		for _, e := range t.hosts[o] {
			if e.lhost == owner(t.listenHosts[e.local], h) {
				out = append(out, e)
			}
		}
	}
	return out
}

// owner returns the hostname, of the listener hostnames lhosts, that
// takes the requests for hostname h: h itself, else the longest wildcard
// that covers it, else "" (any host). It is "\x00" when none does.
func owner(lhosts []string, h string) string {
	best := "\x00"
	for _, lh := range lhosts {
		switch {
		case lh == h:
			return h
		case lh == "" && best == "\x00":
			best = ""
		case strings.HasPrefix(lh, "*.") && hostMatches(lh, h) && len(lh) > len(best):
			best = lh
		}
	}
	return best
}

// condValue is a header or query condition: the value it must equal, or
// a regular expression it must match.
func condValue(regex bool, v string) string {
	if regex {
		return "~ " + v
	}
	if v == "*" || v == "~" || strings.HasPrefix(v, "~ ") {
		return "~ ^" + regexp.QuoteMeta(v) + "$"
	}
	return v
}

// dollar escapes a literal for redirect's and rewrite's templates.
func dollar(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// pipeline returns the pipeline of one entry: its rule's filters, then its
// backends (or the status that stands for them).
func (t *translation) pipeline(e *entry, proxies *[]map[string]any) []map[string]any {
	a := e.act
	var out []map[string]any
	stripPrefix := ""
	for _, f := range a.filters {
		switch f.Type {
		case gatewayv1.HTTPRouteFilterRequestHeaderModifier:
			if m := f.RequestHeaderModifier; m != nil {
				opts := map[string]any{}
				set, add := headerMap(m.Set), headerMap(m.Add)
				for name, v := range add {
					if strings.EqualFold(name, "Host") {
						set[name] = v // a request has one host: set it
						delete(add, name)
					}
				}
				if len(set) > 0 {
					opts["request_set"] = set
				}
				if len(add) > 0 {
					opts["request_add"] = add
				}
				if len(m.Remove) > 0 {
					opts["request_remove"] = m.Remove
				}
				out = append(out, map[string]any{"headers": opts})
			}
		case gatewayv1.HTTPRouteFilterResponseHeaderModifier:
			if m := f.ResponseHeaderModifier; m != nil {
				opts := map[string]any{}
				if len(m.Set) > 0 {
					opts["set"] = headerMap(m.Set)
				}
				if len(m.Add) > 0 {
					opts["add"] = headerMap(m.Add)
				}
				if len(m.Remove) > 0 {
					opts["remove"] = m.Remove
				}
				out = append(out, map[string]any{"headers": opts})
			}
		case gatewayv1.HTTPRouteFilterURLRewrite:
			rw := f.URLRewrite
			if rw.Hostname != nil {
				out = append(out, map[string]any{"headers": map[string]any{"request_set": map[string]string{"Host": string(*rw.Hostname)}}})
			}
			if p := rw.Path; p != nil {
				switch {
				case p.Type == gatewayv1.FullPathHTTPPathModifier:
					out = append(out, map[string]any{"rewrite": dollar(*p.ReplaceFullPath)})
				case *p.ReplacePrefixMatch == "/" && e.path != "/":
					stripPrefix = e.path
				case *p.ReplacePrefixMatch != "/" && e.path != "/":
					out = append(out, map[string]any{"rewrite": map[string]any{"to": dollar(*p.ReplacePrefixMatch) + "$path", "strip_prefix": e.path}})
				case *p.ReplacePrefixMatch != "/":
					out = append(out, map[string]any{"rewrite": dollar(*p.ReplacePrefixMatch) + "$path"})
				}
			}
		case gatewayv1.HTTPRouteFilterRequestRedirect:
			return append(out, map[string]any{"redirect": t.redirect(e, f.RequestRedirect)})
		}
	}
	if a.status != 0 {
		return append(out, map[string]any{"text": map[string]any{"status": a.status, "body": ""}})
	}
	name := setName(a.name + "." + strconv.Itoa(a.sets))
	a.sets++
	for t.res.Upstreams[name] != nil {
		name += "_"
	}
	hosts := make([]string, len(a.hosts))
	for i, h := range a.hosts {
		hosts[i] = h.Name
		if h.Weight > 0 {
			hosts[i] += " weight=" + strconv.Itoa(h.Weight)
		}
	}
	t.res.Upstreams[name] = slices.Clone(a.hosts)
	opts := map[string]any{"name": name, "upstreams": hosts}
	if a.h2c {
		opts["transport"] = "h2c"
	}
	if stripPrefix != "" {
		opts["strip_prefix"] = stripPrefix
	}
	*proxies = append(*proxies, opts)
	return append(out, map[string]any{"proxy": opts})
}

// setName makes name a token that an upstream set's name may be: object
// names are, but for a snapshot the API server did not check.
func setName(name string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 && (r == '.' || r == '-' || r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, name)
}

func headerMap(hs []gatewayv1.HTTPHeader) map[string]string {
	m := map[string]string{}
	for _, h := range hs {
		m[string(h.Name)] = h.Value
	}
	return m
}

// redirect returns the options of the redirect an entry's filter asks for.
func (t *translation) redirect(e *entry, rd *gatewayv1.HTTPRequestRedirectFilter) map[string]any {
	scheme := e.scheme
	if rd.Scheme != nil {
		scheme = *rd.Scheme
	}
	port := int(e.port)
	switch {
	case rd.Port != nil:
		port = int(*rd.Port)
	case rd.Scheme != nil && scheme == "https":
		port = 443
	case rd.Scheme != nil:
		port = 80
	}
	// $host keeps the port the client sent: where the redirect names
	// the host, the port or the scheme, the host alone ($hostname) and
	// the port unless it is the scheme's.
	host := "$host"
	if rd.Hostname != nil || rd.Port != nil || rd.Scheme != nil {
		host = "$hostname"
		if rd.Hostname != nil {
			host = string(*rd.Hostname)
		}
		if !(scheme == "http" && port == 80 || scheme == "https" && port == 443) {
			host += ":" + strconv.Itoa(port)
		}
	}
	opts := map[string]any{"status": 302}
	if rd.StatusCode != nil {
		opts["status"] = *rd.StatusCode
	}
	path := "$path"
	if p := rd.Path; p != nil {
		switch p.Type {
		case gatewayv1.FullPathHTTPPathModifier:
			path = dollar(*p.ReplaceFullPath)
		case gatewayv1.PrefixMatchHTTPPathModifier:
			if e.path != "/" {
				opts["strip_prefix"] = e.path
			}
			path = strings.TrimSuffix(dollar(*p.ReplacePrefixMatch), "/") + "$path"
		}
	}
	opts["to"] = fmt.Sprintf("%s://%s%s$query", scheme, host, path)
	return opts
}
