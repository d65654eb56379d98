package convert

import (
	"bytes"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-server/sluice/pipe"
)

// Config is a Sluice config under construction: what a translator
// builds, written out by YAML. The zero value is an empty config; a
// Config is not safe for concurrent use.
type Config struct {
	// Listen lists the addresses to listen on, in the order added (see
	// Config.Listener).
	Listen []*Listen

	// Top holds the other top-level keys (user, pid_file, log,
	// server_header, limits, access_log, error_pages), each a YAML
	// value; YAML writes them in the order of TopKeys.
	Top map[string]*yaml.Node

	// Sites are the groups of routes, in the order their servers were
	// written.
	Sites []*Site
}

// TopKeys are the top-level keys YAML writes from Config.Top, in order.
var TopKeys = []string{"user", "group", "pid_file", "log", "server_header", "limits", "access_log", "error_pages"}

// Listen is one entry of listen.
type Listen struct {
	Address         string
	Certs           [][2]string // TLS certificates: cert and key files
	ACME            *ACME       // automatic certificates, or nil
	RedirectToHTTPS bool        // answer every request with a redirect to HTTPS
}

// ACME is a listener's automatic certificates.
type ACME struct {
	Email   string
	Domains []string
}

// Site is a group of routes answering the same host names.
type Site struct {
	// Hosts are the host names the routes answer ("example.com",
	// "*.example.com"); none: every host.
	Hosts []string
	// Default makes the site answer the hosts no site names (nginx's
	// default server), when no site without names does.
	Default bool
	// File and Line are where the site's block starts, and Directive
	// its name ("server"), for notes.
	File      string
	Line      int
	Directive string
	// Routes are the site's routes, in the order they were found.
	Routes []*Route
}

// Route is one route: the path patterns it matches and its pipeline.
type Route struct {
	Match      []string
	Pipeline   []Step
	ErrorPages *yaml.Node // the route's own error_pages, or nil
	// Conditions are the route's keys that choose requests beyond
	// its path (methods, header, query, client, protocol): a map, or
	// nil.
	Conditions *yaml.Node
	Comment    string // written above the route, or ""
	Directive  string // the name of the block it comes from ("location"), for notes
	Line       int    // where that block starts
}

// Step is one pipeline entry: a component and its argument (a scalar,
// a list or a map of options), or nil for the name alone.
type Step struct {
	Name string
	Arg  *yaml.Node
}

// Listener returns the listen entry for address, added if missing.
func (c *Config) Listener(address string) *Listen {
	for _, l := range c.Listen {
		if l.Address == address {
			return l
		}
	}
	l := &Listen{Address: address}
	c.Listen = append(c.Listen, l)
	return l
}

// Set sets the top-level key to v.
func (c *Config) Set(key string, v *yaml.Node) {
	if c.Top == nil {
		c.Top = map[string]*yaml.Node{}
	}
	c.Top[key] = v
}

// Limit sets one key of the top-level limits map.
func (c *Config) Limit(key string, v *yaml.Node) {
	l := c.Top["limits"]
	if l == nil {
		l = Map()
		c.Set("limits", l)
	}
	SetKey(l, key, v)
}

// YAML writes the config as a Sluice config file, with a comment first
// (when header is not empty), and returns the notes on what it could not
// write. A site with host names is written under sites, once: sites
// naming the same hosts are one (a server on two ports), and a host that
// an earlier site names is left out of a later one, with a note, as
// Sluice chooses a site by host alone. The routes of sites without names
// are the top-level routes, which answer every host no site names; when
// there are none, the first site marked Default answers those hosts
// (default: true). A route whose pattern a route before it in the same
// site already matches is left out with a note, as nginx and Caddy would
// never reach it, unless it does the same. A config without routes gets
// one answering 404, as a Sluice config needs a route. YAML does not
// change c.
func (c *Config) YAML(header string) ([]byte, []Note) {
	var notes []Note
	root := Map()
	root.HeadComment = header
	if len(c.Listen) > 0 {
		var ls []*yaml.Node
		for _, l := range c.Listen {
			ls = append(ls, l.node())
		}
		if len(ls) == 1 {
			SetKey(root, "listen", ls[0])
		} else {
			SetKey(root, "listen", Seq(ls...))
		}
	}
	for _, k := range TopKeys {
		if v := c.Top[k]; v != nil {
			SetKey(root, k, v)
		}
	}
	top := &outSite{}
	var sites []*outSite
	claimed := map[string]*Site{} // host: the site naming it first
	for _, s := range c.Sites {
		if len(s.Hosts) == 0 {
			top.add(s, &notes)
			continue
		}
		var o *outSite
		for _, e := range sites {
			if slices.Equal(e.hosts, s.Hosts) {
				o = e
			}
		}
		if o == nil {
			o = &outSite{site: s}
			for _, h := range s.Hosts {
				if strings.Contains(h, ":") && !strings.HasSuffix(h, "]") {
					notes = append(notes, Note{File: s.File, Line: s.Line, Directive: s.directive(), Why: fmt.Sprintf("host %s: a site's host has no port (an IPv6 address is written in brackets)", h)})
					continue
				}
				if first := claimed[h]; first != nil {
					notes = append(notes, Note{File: s.File, Line: s.Line, Directive: s.directive(), Why: fmt.Sprintf("host %s is the site's at %s:%d: Sluice chooses a site by host, not by address, so this one does not answer it", h, first.File, first.Line)})
					continue
				}
				claimed[h] = s
				o.hosts = append(o.hosts, h)
			}
			if len(o.hosts) == 0 {
				continue
			}
			sites = append(sites, o)
		}
		o.def = o.def || s.Default
		o.add(s, &notes)
	}
	hasSites := false
	if len(sites) > 0 {
		var ns []*yaml.Node
		def := len(top.routes) > 0
		for _, o := range sites {
			if len(o.routes) == 0 {
				continue
			}
			n := Map()
			if len(o.hosts) == 1 {
				SetKey(n, "hosts", Str(o.hosts[0]))
			} else {
				SetKey(n, "hosts", Flow(Strs(o.hosts...)))
			}
			if o.def && !def {
				SetKey(n, "default", Bool(true))
				def = true
			} else if o.def {
				notes = append(notes, Note{File: o.site.File, Line: o.site.Line, Directive: o.site.directive(), Why: "the default server: a site without names answers the hosts no site names here"})
			}
			SetKey(n, "routes", Seq(o.routes...))
			ns = append(ns, n)
		}
		if len(ns) > 0 {
			SetKey(root, "sites", Seq(ns...))
			hasSites = true
		}
	}
	if len(top.routes) > 0 || !hasSites {
		if len(top.routes) == 0 {
			top.routes = append(top.routes, (&Route{Pipeline: []Step{{"text", Map("status", Int(404), "body", Str("not found\n"))}}}).node([]string{"/"}, ""))
		}
		SetKey(root, "routes", Seq(top.routes...))
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		panic(err) // only nodes built here: a bug
	}
	enc.Close()
	return out.Bytes(), notes
}

// outSite is a site as YAML writes it.
type outSite struct {
	site   *Site // the first of those merged into it
	hosts  []string
	def    bool
	routes []*yaml.Node
	seen   map[string]string // pattern: the pipeline taking it
}

// add writes s's routes into o, leaving out the patterns o has.
func (o *outSite) add(s *Site, notes *[]Note) {
	if o.seen == nil {
		o.seen = map[string]string{}
	}
	for _, r := range s.Routes {
		var match []string
		pipeline := r.pipelineText()
		conds := ""
		if r.Conditions != nil {
			b, _ := yaml.Marshal(r.Conditions)
			conds = "\x00" + string(b)
		}
		for _, m := range r.Match {
			first, dup := o.seen[m+conds]
			switch {
			case !dup:
				o.seen[m+conds] = pipeline
				match = append(match, m)
			case first != pipeline: // the same route twice (a server on two ports) is one
				*notes = append(*notes, Note{File: s.File, Line: r.Line, Directive: r.Directive, Why: fmt.Sprintf("a second route for %q, which the first one takes", m)})
			}
		}
		if len(match) == 0 || len(r.Pipeline) == 0 {
			continue
		}
		o.routes = append(o.routes, r.node(match, ""))
	}
}

func (s *Site) directive() string {
	if s.Directive == "" {
		return "server"
	}
	return s.Directive
}

func (l *Listen) node() *yaml.Node {
	if len(l.Certs) == 0 && l.ACME == nil && !l.RedirectToHTTPS {
		return Str(l.Address)
	}
	n := Map("address", Str(l.Address))
	switch {
	case l.ACME != nil:
		a := Map()
		if l.ACME.Email != "" {
			SetKey(a, "email", Str(l.ACME.Email))
		}
		SetKey(a, "domains", Flow(Strs(l.ACME.Domains...)))
		SetKey(n, "tls", Map("acme", a))
	case len(l.Certs) == 1:
		SetKey(n, "tls", Flow(Map("cert", Str(l.Certs[0][0]), "key", Str(l.Certs[0][1]))))
	case len(l.Certs) > 1:
		var cs []*yaml.Node
		for _, c := range l.Certs {
			cs = append(cs, Flow(Map("cert", Str(c[0]), "key", Str(c[1]))))
		}
		SetKey(n, "tls", Map("certificates", Seq(cs...)))
	}
	if l.RedirectToHTTPS {
		SetKey(n, "redirect_to_https", Bool(true))
		n.Style = yaml.FlowStyle
	}
	return n
}

// pipelineText is the route's pipeline and error pages written out, to
// tell routes that do the same.
func (r *Route) pipelineText() string {
	n := r.node(nil, "")
	n.HeadComment = ""
	b, err := yaml.Marshal(n)
	if err != nil {
		return fmt.Sprint(r) // unique: never equal to another's
	}
	return string(b)
}

func (r *Route) node(match []string, host string) *yaml.Node {
	n := Map()
	n.HeadComment = r.Comment
	if len(match) == 1 {
		SetKey(n, "match", Str(match[0]))
	} else {
		SetKey(n, "match", Flow(Strs(match...)))
	}
	if host != "" {
		SetKey(n, "host", Str(host))
	}
	if r.Conditions != nil && match != nil {
		for i := 0; i+1 < len(r.Conditions.Content); i += 2 {
			SetKey(n, r.Conditions.Content[i].Value, r.Conditions.Content[i+1])
		}
	}
	if r.ErrorPages != nil {
		SetKey(n, "error_pages", r.ErrorPages)
	}
	var steps []*yaml.Node
	for _, s := range r.Pipeline {
		if s.Arg == nil {
			steps = append(steps, Str(s.Name))
			continue
		}
		arg := s.Arg
		if arg.Kind == yaml.MappingNode && arg.Style == 0 && small(arg) {
			arg = Flow(arg)
		}
		steps = append(steps, Map(s.Name, arg))
	}
	SetKey(n, "pipeline", Seq(steps...))
	return n
}

// small reports whether a map of options reads well on one line: a few
// keys, each a scalar or a list of scalars.
func small(n *yaml.Node) bool {
	if len(n.Content) > 8 {
		return false
	}
	width := 0
	for _, c := range n.Content {
		switch c.Kind {
		case yaml.ScalarNode:
			width += len(c.Value) + 2
		case yaml.SequenceNode, yaml.MappingNode:
			if c.Kind == yaml.MappingNode && c.Style != yaml.FlowStyle {
				return false
			}
			for _, e := range c.Content {
				if e.Kind != yaml.ScalarNode {
					return false
				}
				width += len(e.Value) + 2
			}
		default:
			return false
		}
	}
	return width < 90
}

// The node helpers below return new nodes, which the caller owns; a
// node must be put in one place of a tree only if it is not changed
// afterwards.

// Str returns a string scalar, quoted in YAML where it must be.
func Str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// Strs returns a list of string scalars.
func Strs(ss ...string) *yaml.Node {
	n := Seq()
	for _, s := range ss {
		n.Content = append(n.Content, Str(s))
	}
	return n
}

// Int returns an integer scalar.
func Int(i int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(i)}
}

// Num returns a number scalar written as v is: an integer, or a decimal
// fraction ("0.5").
func Num(v string) *yaml.Node {
	tag := "!!int"
	if _, err := strconv.Atoi(v); err != nil {
		tag = "!!float"
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v}
}

// Bool returns a boolean scalar.
func Bool(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
}

// Seq returns a list of the nodes.
func Seq(items ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items}
}

// Map returns a map of the pairs kv: a key string, then its value node,
// and so on.
func Map(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(kv); i += 2 {
		SetKey(n, kv[i].(string), kv[i+1].(*yaml.Node))
	}
	return n
}

// Flow sets n's style to flow ([a, b] or {k: v}) and returns it.
func Flow(n *yaml.Node) *yaml.Node {
	n.Style = yaml.FlowStyle
	return n
}

// SetKey sets key to v in the map m, replacing its value if present.
func SetKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// Key returns the value of key in the map m, or nil.
func Key(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// ValidHost reports whether h is a host name a route may name: letters,
// digits, '-', '.', ':' and brackets (an IPv6 address), optionally after
// "*." — as the config's host key takes them — without an empty label
// (a trailing dot would name the host without it).
func ValidHost(h string) bool {
	h = strings.TrimPrefix(h, "*.")
	if h == "" || strings.HasPrefix(h, ".") || strings.HasSuffix(h, ".") || strings.Contains(h, "..") {
		return false // a trailing dot names the same host without it
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == ':' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

// ValidPattern reports whether p is a path pattern a route may match
// as written: starting with "/", canonical, without white space, a query
// or a fragment, and without braces (which would be path parameters).
func ValidPattern(p string) bool {
	return strings.HasPrefix(p, "/") && !strings.ContainsAny(p, "?#{} \t\r\n") && pipe.CanonicalPattern(p) == p
}

// ValidUpstream reports whether u is an upstream address as proxy (with
// http true) or fastcgi and php take it: "unix:" and an absolute path,
// or a host and port ("http://host[:port]" for proxy, "host:port" for
// FastCGI).
func ValidUpstream(u string, http bool) bool {
	if p, ok := strings.CutPrefix(u, "unix:"); ok {
		return strings.HasPrefix(p, "/") && !strings.ContainsAny(p, "\x00")
	}
	hp := u
	if http {
		var ok bool
		if hp, ok = strings.CutPrefix(u, "http://"); !ok {
			return false
		}
		if !strings.Contains(hp, ":") || strings.HasSuffix(hp, "]") {
			hp += ":80"
		}
	}
	h, port, err := net.SplitHostPort(hp)
	if err != nil || !ValidHost(h) || strings.HasPrefix(h, "*") {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n > 0 && n < 65536
}

// ValidListen reports whether a is an address to listen on: "unix:" and
// a path, or a host (maybe empty) and a port from 1 to 65535.
func ValidListen(a string) bool {
	if p, ok := strings.CutPrefix(a, "unix:"); ok {
		return p != ""
	}
	h, port, err := net.SplitHostPort(a)
	if err != nil || h != "" && !ValidHost(h) || strings.HasPrefix(h, "*") {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n > 0 && n < 65536
}
