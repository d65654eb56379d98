package config

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-server/sluice/pipe"
)

// Site is one site of the file's sites: the host names it serves and its
// own routes, as an nginx server block or a Caddy site. The host chooses
// the site before any route is matched (see pipe.Sites), so a site's
// routes never serve another site's hosts.
type Site struct {
	// Hosts are the names the site serves, lower-case, as written:
	// exact names and "*.example.com" wildcards.
	Hosts []string

	// Default marks the site that serves the hosts no site names
	// (default: true). When the file has top-level routes, they are the
	// default site, and no site is marked.
	Default bool

	// ErrorPages are the site's error_pages over the server's (an empty
	// map: none), which answer its router's 404 and 405 and every route
	// of the site without error pages of its own; nil when the site sets
	// none (the server's then apply).
	ErrorPages *pipe.ErrorPages

	// Routes are the site's routes, in the order written; each is in
	// Config.Routes too.
	Routes []*Route

	// Router routes the site's requests; nil until the file is valid.
	Router *pipe.Router

	File      string // the file the site is written in
	Line, Col int

	lists []located // its routes lists, as written
}

// SiteKeys are the keys of a site.
var SiteKeys = []string{"hosts", "default", "error_pages", "routes"}

// String names the site as explain and graph show it: its hosts, and
// "(default)" for the default site.
func (s *Site) String() string {
	h := strings.Join(s.Hosts, ", ")
	switch {
	case s.Default && h == "":
		return "(default)"
	case s.Default:
		return h + " (default)"
	}
	return h
}

// siteHost is a host a site names, where.
type siteHost struct {
	site *Site
	node *yaml.Node
	file string
}

// sites parses every sites list into p.cfg.Sites, and checks their hosts
// and default against each other and against the top-level routes
// (topDefault: the node of the first top-level routes list, if any).
func (p *parser) sites(topDefault *located) {
	hosts := map[string]siteHost{}
	var def *Site
	var defNode *yaml.Node
	for _, l := range p.siteLists {
		restore := p.enter(l.src)
		n := deref(l.n)
		if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
			p.errorf(n, "sites: want a list of sites, each with hosts (the names it serves) and routes, e.g. %s", sitesExample)
			restore()
			continue
		}
		for _, sn := range n.Content {
			s, dn := p.site(sn, l.src, hosts)
			if s == nil {
				continue
			}
			p.cfg.Sites = append(p.cfg.Sites, s)
			if !s.Default {
				continue
			}
			switch {
			case def != nil:
				p.errorf(dn, "default: the site at %s is the default already: one site serves the hosts no site names; drop one of the two default: true", p.pos(def.File, defNode.Line, defNode.Column))
				s.Default = false
			case topDefault != nil:
				tn := deref(topDefault.n)
				p.errorf(dn, "default: the top-level routes (at %s) are the default site already, serving the hosts no site names; move them into this site, or drop default: true", p.pos(topDefault.src.file, tn.Line, tn.Column))
				s.Default = false
			default:
				def, defNode = s, dn
			}
		}
		restore()
	}
}

// sitesExample is the smallest sites list, for messages.
const sitesExample = "sites: [{hosts: [example.com], routes: [{match: /, pipeline: [files: .]}]}]"

// site parses one site; hosts holds the hosts the sites before it name.
// It returns nil when the site is unusable, and the node of its default
// key when it is the default.
func (p *parser) site(n *yaml.Node, src *source, hosts map[string]siteHost) (*Site, *yaml.Node) {
	n = deref(n)
	pairs, ok := p.mapping(n, "site key", SiteKeys)
	if !ok {
		return nil, nil
	}
	s := &Site{File: p.file, Line: n.Line, Col: n.Column}
	var defNode *yaml.Node
	for _, kv := range pairs {
		switch kv.key.Value {
		case "hosts":
			if v := deref(kv.val); v.Kind == yaml.SequenceNode && len(v.Content) == 0 || isNull(v) {
				p.errorf(kv.val, "hosts: want a host name or a list of them, such as [example.com, www.example.com] or \"*.example.com\"")
				continue
			}
			for i, h := range p.stringList(kv.val, "hosts") {
				e := elem(kv.val, i)
				if !validHost(h) {
					p.errorf(e, "%s", hostError("hosts", h))
					continue
				}
				if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasSuffix(h, "]") {
					p.errorf(e, "hosts: %q has a port, which never matches: a site serves its hosts on every port it listens on; write %q", h, h[:i])
					continue
				}
				h = strings.TrimSuffix(strings.ToLower(h), ".")
				if o, ok := hosts[h]; ok {
					p.errorf(e, "hosts: %s is already a host of the site at %s: a host belongs to one site", h, p.pos(o.file, o.node.Line, o.node.Column))
					continue
				}
				hosts[h] = siteHost{s, e, p.file}
				s.Hosts = append(s.Hosts, h)
			}
		case "default":
			v, ok := p.scalar(kv.val, "default", "true or false")
			if !ok {
				continue
			}
			b, err := strconv.ParseBool(v)
			if err != nil || deref(kv.val).Tag != "!!bool" {
				p.errorf(kv.val, "default: want true or false, got %q", v)
				continue
			}
			s.Default, defNode = b, kv.key
		case "error_pages":
			if ep := p.errorPages(kv.val, "error_pages"); ep != nil {
				if len(deref(kv.val).Content) > 0 {
					ep = ep.Over(p.cfg.ErrorPages)
				} // else {}: no error pages in this site, not even the server's
				s.ErrorPages = ep
			}
		case "routes":
			s.lists = append(s.lists, located{kv.val, src})
		}
	}
	if len(s.Hosts) == 0 && !s.Default && !hasKey(n, "hosts") {
		p.errorf(n, "site has no hosts: add hosts: [example.com] (the names it serves), or default: true for the site that serves the hosts no site names")
	}
	if s.lists == nil {
		p.errorf(n, "site has no routes: add routes: [a list of routes], as at the top level")
	}
	return s, defNode
}

// hasKey reports whether the mapping n has the key.
func hasKey(n *yaml.Node, key string) bool { return keyValue(n, key) != nil }

// keyValue returns the value of key in the mapping n, or nil.
func keyValue(n *yaml.Node, key string) *yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if deref(n.Content[i]).Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// pos is a position for a message about the current file: "LINE:COL",
// with the file's name first when it is another.
func (p *parser) pos(file string, line, col int) string {
	if file != p.file {
		return fmt.Sprintf("%s:%d:%d", file, line, col)
	}
	return fmt.Sprintf("%d:%d", line, col)
}

// shadowedHost returns the site that serves every request for a route's
// host h (lower-case, as written), so that a top-level route for it would
// never be reached: a site naming h, or, for an exact h or a wildcard, a
// site's wildcard that covers it.
func shadowedHost(sites []*Site, h string) *Site {
	rest, wild := strings.CutPrefix(h, "*.")
	for _, s := range sites {
		for _, sh := range s.Hosts {
			suffix, ok := strings.CutPrefix(sh, "*.")
			switch {
			case sh == h:
				return s
			case ok && !wild && strings.HasSuffix(h, "."+suffix):
				return s
			case ok && wild && (rest == suffix || strings.HasSuffix(rest, "."+suffix)):
				return s
			}
		}
	}
	return nil
}

// siteOf returns the pipe.Site of s, served by its router behind its
// error pages.
func siteOf(s *Site) pipe.Site {
	var h pipe.Component = s.Router
	if s.ErrorPages != nil {
		h = pipe.Chain{s.ErrorPages, s.Router}
	}
	return pipe.Site{Hosts: s.Hosts, Default: s.Default, Handler: h}
}
