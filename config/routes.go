package config

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	"golang.org/x/net/idna"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/metrics"
	"github.com/sluice-server/sluice/pipe"
)

// matchKey identifies what a pattern matches, to find duplicates.
type matchKey struct{ pattern, host string }

// matched is a pattern already seen, where, for which methods, and
// whether its route has conditions (which let routes share a pattern).
type matched struct {
	node    *yaml.Node
	methods []string
	file    string
	when    bool
}

// routesExample is the smallest routes list, for messages about a missing
// or empty one.
const routesExample = "routes: [{match: /, pipeline: [files: .]}]"

// routing parses the sites and the routes, top-level and each site's,
// and builds their routers and the sites' host lookup.
func (p *parser) routing() {
	var topDefault *located
	if len(p.topRoutes) > 0 {
		topDefault = &p.topRoutes[0]
	}
	p.sites(topDefault)
	var lists [][]pipe.Route // the top-level routes', then each site's
	var sites []*Site        // the site of each list: nil for the top level
	var purging [][]bool     // each route's: it has a cache_purge
	if len(p.topRoutes) > 0 {
		p.pages = p.cfg.ErrorPages
		prs, purges := p.routes(p.topRoutes, nil)
		lists, sites, purging = append(lists, prs), append(sites, nil), append(purging, purges)
	}
	for _, s := range p.cfg.Sites {
		p.pages = p.cfg.ErrorPages
		if s.ErrorPages != nil {
			p.pages = s.ErrorPages
		}
		prs, purges := p.routes(s.lists, s)
		lists, sites, purging = append(lists, prs), append(sites, s), append(purging, purges)
	}
	p.pages = nil
	if slices.ContainsFunc(purging, func(ps []bool) bool { return slices.Contains(ps, true) }) {
		// PURGE and BAN now reach every route (ExtraMethods): those
		// without a cache_purge refuse them rather than pass them on
		// (a proxy would forward them to an upstream that may trust
		// this server's address).
		for j, prs := range lists {
			for i := range prs {
				if !purging[j][i] {
					prs[i].Pipeline = append(pipe.Chain{components.RefuseCachePurge}, prs[i].Pipeline.(pipe.Chain)...)
				}
			}
		}
	}
	if len(p.errs) > 0 {
		return
	}
	p.countRoutes(lists)
	var ps []pipe.Site
	for i, prs := range lists {
		rt, err := pipe.NewRouter(prs...)
		if err != nil {
			l := p.topRoutes[0]
			if sites[i] != nil {
				l = sites[i].lists[0]
			}
			restore := p.enter(l.src)
			p.errorf(l.n, "routes: %v", err)
			restore()
			return
		}
		if sites[i] == nil {
			p.cfg.Router = rt
			if len(p.cfg.Sites) > 0 {
				ps = append(ps, pipe.Site{Default: true, Handler: rt})
			}
			continue
		}
		sites[i].Router = rt
		ps = append(ps, siteOf(sites[i]))
	}
	if len(p.cfg.Sites) == 0 {
		return
	}
	hosts, err := pipe.NewSites(ps...)
	if err != nil { // the checks above refuse what NewSites does
		p.errorf(deref(p.siteLists[0].n), "sites: %v", err)
		return
	}
	p.cfg.route = hosts
}

// routes parses the routes lists of site (nil: the top-level routes),
// their include entries spliced in, into p.cfg.Routes and site.Routes,
// and returns them as the router takes them, and for each whether it has
// a cache_purge.
func (p *parser) routes(lists []located, site *Site) (prs []pipe.Route, purging []bool) {
	var entries []located
	before := len(p.errs)
	for _, l := range lists {
		entries = append(entries, p.routeEntries(l)...)
	}
	if len(entries) == 0 && len(lists) > 0 && len(p.errs) == before {
		restore := p.enter(lists[0].src)
		p.errorf(lists[0].n, "routes: its includes bring no route: a routes list needs at least one, with a match (the paths it serves) and a pipeline (the components that answer)")
		restore()
	}
	seen := map[matchKey][]matched{}
	p.curSite = site
	defer func() { p.curSite = nil }()
	var built []*Route // the routes parsed
	var at []located   // and where
	for _, e := range entries {
		restore := p.enter(e.src)
		r := p.route(e.n, seen)
		if r == nil {
			restore()
			continue
		}
		r.Site, r.File = site, p.file
		p.siteRouteHost(e.n, r)
		p.cfg.Routes = append(p.cfg.Routes, r)
		if site != nil {
			site.Routes = append(site.Routes, r)
		}
		chain := make(pipe.Chain, 0, len(r.Stages)+1)
		if p.cfg.Tracer != nil {
			chain = append(chain, p.cfg.Tracer.Route(routeLabel(r)))
		}
		purges := false
		for _, s := range r.Stages {
			chain = append(chain, s.Component)
			purges = purges || s.Name == "cache_purge"
		}
		purging = append(purging, purges)
		prs = append(prs, pipe.Route{Match: r.Match, Host: r.Host, Methods: r.Methods, When: r.When, Pipeline: chain, ErrorPages: r.ErrorPages})
		built, at = append(built, r), append(at, e)
		restore()
	}
	p.exactOverTree(built, at)
	return prs, purging
}

// siteRouteHost refuses a host on a route of a site, and on a top-level
// route a host that a site serves, which the route would never see.
func (p *parser) siteRouteHost(n *yaml.Node, r *Route) {
	if r.Host == "" {
		return
	}
	hn := keyValue(n, "host")
	if r.Site != nil {
		p.errorf(hn, "host: a route of a site serves the site's hosts (%s, at %s); drop host here, or move the route to a site with hosts: [%s]", r.Site, p.pos(r.Site.File, r.Site.Line, r.Site.Col), r.Host)
		return
	}
	if s := shadowedHost(p.cfg.Sites, strings.TrimSuffix(r.Host, ".")); s != nil {
		p.errorf(hn, "host: %s is served by the site at %s, whose routes alone see its requests; move this route into that site (without host)", r.Host, p.pos(s.File, s.Line, s.Col))
	}
}

// route parses one route; it returns nil when the route is unusable.
func (p *parser) route(n *yaml.Node, seen map[matchKey][]matched) *Route {
	n = deref(n)
	pairs, ok := p.mapping(n, "route key", RouteKeys)
	if !ok {
		return nil
	}
	r := &Route{Line: n.Line, Col: n.Column}
	var matchNode, pipelineNode *yaml.Node
	var matchNodes []*yaml.Node
	for _, kv := range pairs {
		switch kv.key.Value {
		case "match":
			matchNode = kv.val
			matchNodes = p.matches(kv.val, r)
		case "host":
			if s, ok := p.scalar(kv.val, "host", "a host name"); ok {
				i := strings.LastIndexByte(s, ':')
				switch {
				case !validHost(s):
					p.errorf(kv.val, "%s", hostError("host", s))
				case i >= 0 && !strings.HasPrefix(s, "[") && strings.Count(s, ":") > 1:
					p.errorf(kv.val, "host: %q never matches: a request's Host brackets an IPv6 address; write %q", s, "["+s+"]")
				case i >= 0 && !strings.HasSuffix(s, "]"):
					p.errorf(kv.val, "host: %q has a port, which never matches: a route matches its host on every port the server listens on (the port of a request's Host is ignored); write %q", s, s[:i])
				}
				r.Host = strings.ToLower(s)
			}
		case "methods":
			r.Methods = append(r.Methods, p.methodList(kv.val, "methods", p.stringList(kv.val, "methods"))...)
		case "error_pages":
			if ep := p.errorPages(kv.val, "error_pages"); ep != nil {
				if len(deref(kv.val).Content) > 0 {
					ep = ep.Over(p.pages)
				} // else {}: no error pages on this route, not even the server's
				r.ErrorPages = ep
			}
		case "pipeline":
			pipelineNode = kv.val
		case "name":
			if s, ok := p.scalar(kv.val, "name", "a route name"); ok {
				if msg := routeNameError(s); msg != "" {
					p.errorf(kv.val, "name: %s", msg)
				}
				r.Name = s
			}
		case "header", "query", "client", "local", "method", "protocol":
			p.matcher(kv.key, kv.val, r)
		}
	}
	if matchNode == nil {
		p.errorf(n, "route has no match: add match: /path (or a list of paths)")
	}
	if pipelineNode == nil {
		p.errorf(n, "route has no pipeline: add pipeline: [a list of components]")
	} else {
		p.place = p.placeOf(r)
		p.pipeline(pipelineNode, r)
		p.place = ""
		p.queryParams(r)
		p.placeholderParams(r)
	}
	// Duplicates: the same pattern and host with overlapping methods.
	// Patterns with captures are the same when only their names or types
	// differ: "/a/{id:int}" takes every path "/a/{name}" takes.
	host := strings.TrimSuffix(r.Host, ".") // as the router compares hosts
	for i, pat := range r.Match {
		k := matchKey{pipe.PatternKey(pat), host}
		for _, m := range seen[k] {
			if !m.when && len(r.When) == 0 && pipe.MethodsOverlap(m.methods, r.Methods) {
				if m.node.Value != pat {
					p.errorf(matchNodes[i], "match %q takes the paths %q takes at %s%s (captures match by position, whatever their names and types)", pat, m.node.Value, p.pos(m.file, m.node.Line, m.node.Column), hostNote(host))
				} else {
					p.errorf(matchNodes[i], "match %q is already matched at %s%s", pat, p.pos(m.file, m.node.Line, m.node.Column), hostNote(host))
				}
				break
			}
		}
		seen[k] = append(seen[k], matched{matchNodes[i], r.Methods, p.file, len(r.When) > 0})
	}
	return r
}

// placeOf returns the place of r (components.Context.Place): its host,
// or its site's first, and its first match, with "#2", "#3"… for the
// second and later routes there.
func (p *parser) placeOf(r *Route) string {
	host := r.Host
	if host == "" && p.curSite != nil && len(p.curSite.Hosts) > 0 {
		host = p.curSite.Hosts[0]
	}
	place := host
	if len(r.Match) > 0 {
		place += r.Match[0]
	}
	if p.places == nil {
		p.places = map[string]int{}
	}
	p.places[place]++
	if n := p.places[place]; n > 1 {
		place += "#" + strconv.Itoa(n)
	}
	return place
}

// upstreamSet checks that the live set of upstreams comp registered (a
// proxy's, a fastcgi's) has a name no other entry of the config took.
func (p *parser) upstreamSet(nameNode, arg *yaml.Node, label string, comp pipe.Component) {
	n, ok := comp.(interface{ UpstreamSet() string })
	if !ok || n.UpstreamSet() == "" {
		return
	}
	name := n.UpstreamSet()
	at := nameNode
	if a := deref(arg); a != nil && a.Kind == yaml.MappingNode {
		if k := keyValue(a, "name"); k != nil {
			at = k
		}
	}
	if p.setNames == nil {
		p.setNames = map[string]string{}
	}
	if prev, dup := p.setNames[name]; dup {
		p.errorf(at, "%s: name %q is already the name of the upstreams at %s: give each proxy, fastcgi and php entry a name of its own", label, name, prev)
		return
	}
	p.setNames[name] = p.pos(p.file, at.Line, at.Column)
}

func hostNote(h string) string {
	if h == "" {
		return ""
	}
	return " for host " + h
}

// elem returns the i'th element of a sequence, or n itself for a scalar.
func elem(n *yaml.Node, i int) *yaml.Node {
	n = deref(n)
	if n.Kind == yaml.SequenceNode && i < len(n.Content) {
		return n.Content[i]
	}
	return n
}

// matches parses a route's match patterns into r.Match and returns the
// node of each.
func (p *parser) matches(n *yaml.Node, r *Route) []*yaml.Node {
	var nodes []*yaml.Node
	list := p.stringList(n, "match")
	if len(list) == 0 && deref(n).Kind != yaml.MappingNode {
		p.errorf(n, "match: want a path or a list of paths, got %s", describe(n))
	}
	dup := map[string]bool{}
	for i, pat := range list {
		e := elem(n, i)
		switch {
		case strings.HasPrefix(pat, pipe.RegexPrefix):
			if err := pipe.CheckPattern(pat); err != nil {
				p.errorf(e, "match: %v (the syntax is Go's regexp, RE2)", err)
				continue
			}
			if dup[pat] {
				p.errorf(e, "match: %q is listed twice", pat)
				continue
			}
			dup[pat] = true
			r.Match = append(r.Match, pat)
			nodes = append(nodes, e)
		case strings.HasPrefix(pat, "~"):
			p.errorf(e, "match: %q: a regular expression is written \"~ \" (a tilde and a space) then the expression, e.g. \"~ ^/user/(?P<id>[0-9]+)$\"", pat)
		case pat == "" || pat[0] != '/':
			p.errorf(e, "match: %q must start with / (a path) or \"~ \" (a regular expression)", pat)
		case strings.ContainsAny(pat, "?#"):
			p.errorf(e, "match: %q: patterns match the path; the query and fragment are not part of it", pat)
		case strings.ContainsAny(pat, " \t\r\n"):
			p.errorf(e, "match: %q contains white space", pat)
		case pipe.CanonicalPattern(pat) != pat:
			p.errorf(e, "match: %q never matches: request paths are matched in canonical form, percent-decoded and without repeated slashes or . and .. segments; write %q", pat, pipe.CanonicalPattern(pat))
		case pipe.CheckPattern(pat) != nil:
			p.errorf(e, "match: %v", pipe.CheckPattern(pat))
		case dup[pat]:
			p.errorf(e, "match: %q is listed twice", pat)
		default:
			dup[pat] = true
			r.Match = append(r.Match, pat)
			nodes = append(nodes, e)
		}
	}
	return nodes
}

// validMethod reports whether m is an upper-case method token.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if !('A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func validHost(h string) bool {
	h = strings.TrimPrefix(h, "*.")
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == ':' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

// hostError is the message, for the key key, about the host name h that
// validHost refuses: for a name beyond ASCII, the punycode form clients
// send (RFC 5890), which is what to write.
func hostError(key, h string) string {
	name, wild := strings.CutPrefix(h, "*.")
	if strings.ContainsFunc(name, func(r rune) bool { return r >= utf8.RuneSelf }) {
		if a, err := idna.Lookup.ToASCII(name); err == nil && validHost(a) {
			if wild {
				a = "*." + a
			}
			return fmt.Sprintf("%s: %q is not ASCII: write its punycode form %q, which clients send", key, h, a)
		}
	}
	return fmt.Sprintf(`%s: want a host name such as "example.com" or "*.example.com", got %q`, key, h)
}

// errDecoded tells Build that decoding failed and was reported.
var errDecoded = errors.New("options not decoded")

// pipeline parses and builds a route's pipeline into r.Stages, and checks
// the order of its kinds: filters after a source, one source, nothing
// after a component that answers every request.
func (p *parser) pipeline(n *yaml.Node, r *Route) {
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "pipeline: want a list of components, got %s", describe(n))
		return
	}
	if len(n.Content) == 0 {
		p.errorf(n, "pipeline is empty: it needs at least a source (files, text, …)")
		return
	}
	var source, answer *Stage
	complete := true
	for _, en := range n.Content {
		s := p.stage(en)
		if s == nil {
			complete = false
			continue
		}
		r.Stages = append(r.Stages, s)
		switch {
		case answer != nil:
			p.errorf(en, "%s never runs: %s before it (at %d:%d) answers every request", s.Name, answer.Name, answer.Line, answer.Col)
		case s.Kind() == components.KindFilter && source == nil:
			p.errorf(en, "%s is a filter but no source comes before it: a filter transforms the content of a source earlier in the pipeline", s.Name)
		case s.Kind() == components.KindSource && source != nil:
			p.errorf(en, "%s is a second source: it would replace the content of %s (at %d:%d); a pipeline has one source", s.Name, source.Name, source.Line, source.Col)
		}
		if s.Kind() == components.KindSource && source == nil {
			source = s
		}
		if s.Registration.Answers && answer == nil {
			answer = s
		}
	}
	if complete && source == nil && answer == nil {
		p.errorf(n, "pipeline has no source: nothing produces the response (add one of: %s)", strings.Join(sourceNames(), ", "))
	}
	p.fileMapping(r)
}

func sourceNames() []string {
	var out []string
	for _, r := range components.All() {
		if r.Kind == components.KindSource || r.Answers {
			out = append(out, r.Name)
		}
	}
	return out
}

// stage parses one pipeline entry, `name` or `name: argument`, and builds
// its component. It returns nil when the entry is unusable.
func (p *parser) stage(n *yaml.Node) *Stage {
	n = deref(n)
	var nameNode, arg *yaml.Node
	switch {
	case n.Kind == yaml.ScalarNode && !isNull(n):
		nameNode = n
	case n.Kind == yaml.MappingNode && len(n.Content) == 2:
		nameNode, arg = deref(n.Content[0]), n.Content[1]
	case n.Kind == yaml.MappingNode && len(n.Content) > 2:
		p.errorf(n.Content[2], "a pipeline entry is one component, `name` or `name: argument`; this one also has %q (a missing \"- \"?)", n.Content[2].Value)
		return nil
	default:
		p.errorf(n, "a pipeline entry is `name` or `name: argument`, got %s", describe(n))
		return nil
	}
	name := nameNode.Value
	reg, ok := components.Lookup(name)
	if !ok {
		if before, _, found := strings.Cut(name, " "); found && nameNode.Kind == yaml.ScalarNode {
			if _, ok := components.Lookup(before); ok {
				p.errorf(nameNode, "unknown component %q: write `%s: argument` (with a colon)", name, before)
				return nil
			}
		}
		p.errorf(nameNode, "unknown component %q%s", name, suggest(name, components.Names()))
		return nil
	}
	return p.build(nameNode, reg, arg, name, nil)
}

// build decodes the options of the component reg from arg (nil, a
// shorthand argument or a map) and builds it, as the entry at nameNode.
// Messages call it label: its name in a pipeline, the key elsewhere
// (access_log). adjust, if set, gets the decoded options struct (a
// pointer) before the component is built. It returns the stage, whose
// Component is nil if it could not be built (the errors are recorded).
func (p *parser) build(nameNode *yaml.Node, reg *components.Registration, arg *yaml.Node, label string, adjust func(opts any)) *Stage {
	name := reg.Name
	s := &Stage{Name: name, Registration: reg, Line: nameNode.Line, Col: nameNode.Column}
	x := p.loader.Context
	x.Database, x.Databases = p.database, p.cfg.Databases
	x.Place = p.place
	if x.Caches == nil {
		if p.caches == nil {
			p.caches = new(components.Caches)
		}
		x.Caches = p.caches
	}
	a := deref(arg)
	shorthand := !isNull(a) && a.Kind != yaml.MappingNode
	x.Shorthand = shorthand
	decode := func(opts any) error {
		s.decoded = opts
		before := len(p.errs)
		v := reflect.ValueOf(opts).Elem()
		switch {
		case isNull(a):
		case shorthand:
			f, ok := fieldByKey(reg.Options, reg.Scalar)
			if reg.Scalar == "" || !ok {
				if len(components.OptionFields(reg.Options)) == 0 {
					p.errorf(a, "%s takes no options: write just `%s`", label, label)
				} else {
					p.errorf(a, "%s has no shorthand argument: give its options as a map, e.g. `%s: {%s: …}`", label, label, components.OptionFields(reg.Options)[0].Key)
				}
				break
			}
			s.Options = append(s.Options, Option{reg.Scalar, flowText(a)})
			p.value(a, v.FieldByIndex(f.Index), label+": "+reg.Scalar)
		default:
			for i := 0; i+1 < len(a.Content); i += 2 {
				s.Options = append(s.Options, Option{a.Content[i].Value, flowText(a.Content[i+1])})
			}
			p.options(a, v, "", label)
		}
		if len(p.errs) > before {
			return errDecoded
		}
		for _, key := range reg.Paths {
			if fv, ok := pathOption(v, key); ok && !stdStream(fv.String()) {
				fv.SetString(p.path(fv.String()))
			}
		}
		if adjust != nil {
			adjust(opts)
		}
		return nil
	}
	log, warnings := newBuildLog(x.Logger)
	x.Logger = log
	comp, err := build(reg, decode, x)
	for _, msg := range warnings() {
		p.warn(nameNode, label, msg)
	}
	switch {
	case errors.Is(err, errDecoded):
		return s
	case err != nil:
		msg := err.Error()
		if rest, ok := strings.CutPrefix(msg, name+":"); ok {
			msg = label + ":" + rest
		} else {
			msg = label + ": " + msg
		}
		// A file the component could not open: say what to do, as the
		// config's own files do.
		if fix := FileFix(err); fix != "" {
			msg += ": " + fix
			if errors.Is(err, fs.ErrNotExist) {
				msg += " (a relative path starts at the config file's directory)"
			}
		}
		p.errorf(nameNode, "%s", msg)
		return s
	case comp == nil:
		p.errorf(nameNode, "%s: the constructor returned no component", label)
		return s
	}
	s.Component = comp
	p.upstreamSet(nameNode, arg, label, comp)
	return s
}

// build calls reg.Build, turning a panic in a constructor into an error
// so that one faulty component cannot take the whole check down.
func build(reg *components.Registration, decode func(any) error, x components.Context) (comp pipe.Component, err error) {
	defer func() {
		if v := recover(); v != nil {
			comp, err = nil, fmt.Errorf("%s: constructor panicked: %v", reg.Name, v)
		}
	}()
	return reg.Build(decode, x)
}

// stdStream reports whether a path option names a standard stream rather
// than a file, and so is not resolved against the config file's directory.
func stdStream(s string) bool { return s == "-" || s == "stdout" || s == "stderr" }

// flowText renders a node as one line of YAML flow text.
func flowText(n *yaml.Node) string {
	n = deref(n)
	if isNull(n) {
		return "null"
	}
	c := flowCopy(n)
	out, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Sprintf("%q", n.Value)
	}
	return strings.TrimSpace(string(out))
}

// flowCopy copies n without comments, in flow style.
func flowCopy(n *yaml.Node) *yaml.Node {
	n = deref(n)
	// Quoting as written is dropped: the encoder quotes what needs it,
	// so YAML and JSON files are described alike.
	c := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Value: n.Value}
	switch {
	case n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode:
		c.Style = yaml.FlowStyle
	case strings.ContainsAny(n.Value, "\n\r\t"):
		c.Style = yaml.DoubleQuotedStyle
	}
	for _, e := range n.Content {
		c.Content = append(c.Content, flowCopy(e))
	}
	return c
}

// countRoutes puts each route's counting pipe (metrics.Route.Component)
// first in its pipeline when the config has a status source, which alone
// shows the counts: a config without one pays nothing. lists are the
// routes as the router takes them, in the order of p.cfg.Routes. A
// route's label is its name, or "#N", its position among all routes
// from 1.
func (p *parser) countRoutes(lists [][]pipe.Route) {
	if !slices.ContainsFunc(p.cfg.Routes, func(r *Route) bool {
		return slices.ContainsFunc(r.Stages, func(s *Stage) bool { return s.Name == "status" })
	}) {
		return
	}
	i := 0
	for _, prs := range lists {
		for j := range prs {
			if i >= len(p.cfg.Routes) {
				return
			}
			label := p.cfg.Routes[i].Name
			if label == "" {
				label = "#" + strconv.Itoa(i+1)
			}
			i++
			prs[j].Pipeline = append(pipe.Chain{metrics.Default.Route(label).Component()}, prs[j].Pipeline.(pipe.Chain)...)
		}
	}
}

// routeNameError says what is wrong with a route's name, or "".
func routeNameError(s string) string {
	switch {
	case s == "":
		return "empty; give the route a short name such as \"api\", or leave name out (its label is then its position, \"#3\")"
	case len(s) > 64:
		return fmt.Sprintf("%q is longer than 64 bytes; a name is a short label such as \"api\"", s)
	case s == metrics.OtherRoute:
		return fmt.Sprintf("%q is the label the routes past the first %d share; choose another", s, metrics.MaxRoutes)
	case s[0] == '#':
		return fmt.Sprintf("%q starts with #, which marks a route without a name (\"#3\" is the third route); write it without the #", s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_-.:/", c) >= 0) {
			return fmt.Sprintf("%q holds %q; a name is letters, digits and _ - . : / (such as \"api\" or \"static/css\")", s, s[i:i+1])
		}
	}
	return ""
}
