package caddyfile

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/mail"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-server/sluice/convert"
	"github.com/sluice-server/sluice/pipe"
)

// Convert loads file (see Load, with the process's environment) and
// translates it (see Translate).
func Convert(file string, writeFiles bool) (*convert.Config, map[string][]byte, []convert.Note, error) {
	dirs, err := Load(file, os.LookupEnv)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg, files, notes := Translate(dirs, writeFiles)
	return cfg, files, notes, nil
}

// Translate turns a Caddyfile's directives into a Sluice config, and
// returns the files the config needs beside it (htpasswd files for
// basicauth, by name relative to the config's directory) and a note for
// every directive it could not translate. With writeFiles false the
// caller cannot write such files, and a basicauth is noted as well. It
// does not change dirs, and keeps no state between calls.
func Translate(dirs []*Directive, writeFiles bool) (*convert.Config, map[string][]byte, []convert.Note) {
	t := &translator{cfg: &convert.Config{}, files: map[string][]byte{}, writeFiles: writeFiles, httpPort: "80", httpsPort: "443", autoHTTPS: "on", multi: map[*matcher]bool{}}
	for i, d := range dirs {
		if d.Name == "" && d.HasBlock && i == 0 {
			t.global(d)
			continue
		}
		t.site(d)
	}
	t.finish()
	return t.cfg, t.files, convert.SortNotes(t.notes)
}

type translator struct {
	cfg                 *convert.Config
	notes               []convert.Note
	files               map[string][]byte
	writeFiles          bool
	email               string
	httpPort, httpsPort string
	autoHTTPS           string // on, off, disable_redirects
	sites               []*site
	multi               map[*matcher]bool // matchers noted for sharing a path with another's conditions
}

func (t *translator) note(d *Directive, format string, args ...any) {
	t.notes = append(t.notes, convert.Note{File: d.File, Line: d.Line, Directive: d.Name, Why: fmt.Sprintf(format, args...)})
}

// global reads the global options block.
func (t *translator) global(g *Directive) {
	for _, d := range g.Block {
		arg := ""
		if len(d.Args) > 0 {
			arg = d.Args[0]
		}
		switch d.Name {
		case "email":
			if email(arg) {
				t.email = arg
			} else {
				t.note(d, "want an email address such as admin@example.com")
			}
		case "http_port":
			t.httpPort = arg
		case "https_port":
			t.httpsPort = arg
		case "auto_https":
			switch arg {
			case "off", "disable_redirects":
				t.autoHTTPS = arg
			default:
				t.note(d, "auto_https %s: Sluice obtains certificates for the sites' names, or for none", arg)
			}
		case "log":
			if step, ok := t.logStep(d); ok {
				l := convert.Flow(convert.Map("output", convert.Key(step.Arg, "file"), "format", convert.Str("json")))
				t.cfg.Set("log", l)
			}
		case "admin", "skip_install_trust", "debug", "grace_period", "persist_config":
			// Sluice has no admin endpoint, no local CA to install, and
			// its own shutdown grace (--shutdown-grace).
		default:
			t.note(d, "Sluice has no such global option")
		}
	}
}

// site is a site block being translated.
type site struct {
	d        *Directive
	hosts    []string
	listens  []siteAddr
	certs    [][2]string
	acme     bool
	matchers map[string]*matcher
	log      *convert.Step // the site's access log
	bind     []string      // the interfaces it listens on; none: every one
	body     *block        // its directives
	s        *convert.Site
}

type siteAddr struct {
	port string
	tls  bool
}

// site translates one site block.
func (t *translator) site(d *Directive) {
	if !d.HasBlock {
		t.note(d, "a site's directives go in a block: ADDRESS { ... }")
		return
	}
	s := &site{d: d, matchers: map[string]*matcher{}, s: &convert.Site{File: d.File, Line: d.Line, Directive: d.Name}}
	addrs := append([]string{d.Name}, d.Args...)
	for _, a := range addrs {
		for _, a := range strings.Split(a, ",") {
			if a = strings.TrimSpace(a); a != "" {
				t.address(s, d, a)
			}
		}
	}
	// tls comes first: it decides the listeners.
	var body []*Directive
	for _, e := range d.Block {
		switch {
		case e.Name == "tls":
			t.tls(s, e)
		case e.Name == "log":
			if step, ok := t.logStep(e); ok {
				s.log = &step
			}
		case e.Name == "bind":
			s.bind = append(s.bind, e.Args...)
		case strings.HasPrefix(e.Name, "@"):
			s.matchers[e.Name] = t.namedMatcher(e)
		default:
			body = append(body, e)
		}
	}
	t.sites = append(t.sites, s)
	t.routes(s, body)
}

// address reads one site address: [scheme://]host[:port][/path].
func (t *translator) address(s *site, d *Directive, a string) {
	scheme := ""
	if i := strings.Index(a, "://"); i >= 0 {
		scheme, a = a[:i], a[i+3:]
	}
	if i := strings.IndexByte(a, '/'); i >= 0 {
		if a[i:] != "/" && a[i:] != "/*" {
			t.note(d, "address path %q: put the site's directives in a handle %s block instead", a[i:], a[i:])
		}
		a = a[:i]
	}
	host, port := a, ""
	if h, p, err := net.SplitHostPort(a); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(a, ":") {
		host, port = "", a[1:]
	}
	tls := false
	switch {
	case scheme == "https":
		tls = true
	case scheme == "http":
	case port == t.httpPort:
	case port == t.httpsPort:
		tls = true
	default:
		tls = qualifies(host)
	}
	if t.autoHTTPS == "off" && scheme != "https" {
		tls = false
	}
	if port == "" {
		port = t.httpPort
		if tls {
			port = t.httpsPort
		}
	}
	if host != "" {
		if !convert.ValidHost(host) {
			t.note(d, "address %q: Sluice's hosts are fixed names", a)
			return
		} else {
			s.hosts = append(s.hosts, strings.ToLower(host))
		}
	}
	if tls && host != "" && !acmeName(host) {
		t.note(d, "address %q: Caddy serves it with a certificate of its own authority; Sluice obtains certificates for public names only: give the site a tls cert key, or use http://", a)
		tls = false
	}
	if !convert.ValidListen(":" + port) {
		t.note(d, "address %q: the port is not a number from 1 to 65535", a)
		return
	}
	s.listens = append(s.listens, siteAddr{port: port, tls: tls})
	if tls {
		s.acme = true
	}
}

// qualifies reports whether Caddy serves host over HTTPS by default.
func qualifies(host string) bool {
	return host != "" && !strings.HasPrefix(host, "*")
}

// acmeName reports whether an ACME authority issues certificates for
// host, as the config's acme section takes them: a name with a dot, of
// labels of letters, digits and inner hyphens.
func acmeName(host string) bool {
	if net.ParseIP(strings.Trim(host, "[]")) != nil || !strings.Contains(strings.Trim(host, "."), ".") {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// email reports whether s is an email address the acme section takes.
func email(s string) bool {
	_, err := mail.ParseAddress(s)
	return err == nil && !strings.ContainsAny(s, "<> ")
}

// tls reads a site's tls directive.
func (t *translator) tls(s *site, d *Directive) {
	switch {
	case len(d.Args) == 2:
		s.certs = append(s.certs, [2]string{d.Args[0], d.Args[1]})
		s.acme = false
	case len(d.Args) == 1 && d.Args[0] == "internal":
		t.note(d, "Sluice has no certificate authority of its own: give the site a cert and key")
	case len(d.Args) == 1 && email(d.Args[0]):
		t.email = d.Args[0]
	default:
		t.note(d, "Sluice's tls takes a cert and key, or certificates from Let's Encrypt")
	}
	if d.HasBlock {
		t.note(d, "Sluice's TLS versions, ciphers and challenges are fixed (docs/security.md)")
	}
}

// finish makes the listeners and adds the sites.
func (t *translator) finish() {
	redirect := false
	plain := map[string]bool{}
	for _, s := range t.sites {
		for _, a := range s.listens {
			hosts := s.bind
			if len(hosts) == 0 {
				hosts = []string{""}
			}
			for _, h := range hosts {
				t.listen(s, a, net.JoinHostPort(h, a.port), plain, &redirect)
			}
		}
		if len(s.s.Routes) > 0 {
			s.s.Hosts = s.hosts
			t.cfg.Sites = append(t.cfg.Sites, s.s)
		}
	}
	t.redirect(redirect, plain)
}

// listen adds a site's address to the listeners.
func (t *translator) listen(s *site, a siteAddr, addr string, plain map[string]bool, redirect *bool) {
	l := t.cfg.Listener(addr)
	switch {
	case !a.tls:
		plain[addr] = true
	case len(s.certs) > 0:
		for _, c := range s.certs {
			if !slices.Contains(l.Certs, c) {
				l.Certs = append(l.Certs, c)
			}
		}
		*redirect = *redirect || t.autoHTTPS == "on"
	case s.acme && len(s.hosts) > 0:
		if l.ACME == nil {
			l.ACME = &convert.ACME{Email: t.email}
		}
		for _, h := range s.hosts {
			if !slices.Contains(l.ACME.Domains, h) {
				l.ACME.Domains = append(l.ACME.Domains, h)
			}
		}
		*redirect = *redirect || t.autoHTTPS == "on"
	}
}

// redirect makes the plain port redirect to HTTPS, as Caddy's automatic
// HTTPS does, unless a site serves plain HTTP there.
func (t *translator) redirect(redirect bool, plain map[string]bool) {
	for _, l := range t.cfg.Listen {
		if l.ACME != nil && len(l.Certs) > 0 {
			t.notes = append(t.notes, convert.Note{File: t.sites[0].d.File, Line: t.sites[0].d.Line, Directive: "tls", Why: "a port with both certificate files and automatic certificates: Sluice's listener takes one or the other"})
			l.ACME = nil
		}
	}
	if redirect {
		a := ":" + t.httpPort
		if plain[a] {
			t.notes = append(t.notes, convert.Note{File: t.sites[0].d.File, Line: t.sites[0].d.Line, Directive: "auto_https", Why: "the redirect to HTTPS on " + a + ": a site serves plain HTTP there, and a Sluice listener either redirects or serves"})
		} else {
			t.cfg.Listener(a).RedirectToHTTPS = true
		}
	}
}

// matcher is the set of paths a directive applies to: nil for every
// path; otherwise Sluice patterns (prefixes ending in /, exact paths).
type matcher struct {
	name     string
	patterns []string
	comment  string
	bad      bool       // not translatable: the directives using it are left out
	cond     *yaml.Node // the route conditions it adds (methods, header...), or nil
	d        *Directive
}

// namedMatcher reads @name path ... or @name { path ... }.
func (t *translator) namedMatcher(d *Directive) *matcher {
	m := &matcher{name: d.Name}
	lines := d.Block
	if !d.HasBlock && len(d.Args) > 0 {
		lines = []*Directive{{Name: d.Args[0], Args: d.Args[1:], File: d.File, Line: d.Line}}
	}
	if len(lines) == 0 {
		t.note(d, "an empty matcher")
		m.bad = true
	}
	m.d = d
	for _, l := range lines {
		if l.Name != "path" {
			if !t.condition(m, l) {
				m.bad = true
			}
			continue
		}
		for _, p := range l.Args {
			pats, comment, ok := pathPatterns(p)
			if !ok {
				t.note(d, "path %q: Sluice matches exact paths and prefixes ending in /* only", p)
				m.bad = true
				continue
			}
			m.patterns = append(m.patterns, pats...)
			if comment != "" {
				m.comment = comment
			}
		}
	}
	return m
}

// pathPatterns turns a path matcher into Sluice patterns.
func pathPatterns(p string) ([]string, string, bool) {
	body, star := strings.CutSuffix(p, "*")
	if !convert.ValidPattern(body) || strings.ContainsAny(body, "*%[]") {
		return nil, "", false
	}
	switch {
	case star && strings.HasSuffix(body, "/"):
		return []string{body}, "", true
	case star:
		return []string{body, body + "/"}, fmt.Sprintf("Caddy's %s also matched %s-old, %sx...; Sluice's prefixes end at a slash", p, body, body), true
	case body == "/":
		return nil, "", false // exact /: a Sluice pattern / is every path
	}
	return []string{body}, "", true
}

// covers reports whether every path of the Sluice pattern p is one m
// matches.
func (m *matcher) covers(p string) bool {
	if m == nil || len(m.patterns) == 0 && m.cond != nil {
		return true
	}
	for _, q := range m.patterns {
		if q == p || strings.HasSuffix(q, "/") && strings.HasPrefix(p, q) {
			return true
		}
	}
	return false
}

// directiveMatcher splits a directive's matcher token off its arguments.
// single is true for directives whose one argument that starts with /
// is not a matcher (root /srv, redir /new, respond /x would be...).
func (t *translator) directiveMatcher(s *site, d *Directive) (*matcher, []string, bool) {
	args := d.Args
	if len(args) == 0 {
		return nil, args, true
	}
	a := args[0]
	switch {
	case a == "*":
		return nil, args[1:], true
	case strings.HasPrefix(a, "@"):
		m := s.matchers[a]
		if m == nil {
			t.note(d, "no matcher %s is defined in the site", a)
			return nil, nil, false
		}
		if m.bad {
			t.note(d, "its matcher %s is not translated", a)
			return nil, nil, false
		}
		return m, args[1:], true
	case strings.HasPrefix(a, "/"):
		if (d.Name == "root" || d.Name == "redir" || d.Name == "try_files") && len(args) == 1 {
			return nil, args, true
		}
		pats, comment, ok := pathPatterns(a)
		if !ok {
			t.note(d, "path %q: Sluice matches exact paths and prefixes ending in /* only", a)
			return nil, nil, false
		}
		return &matcher{patterns: pats, comment: comment}, args[1:], true
	}
	return nil, args, true
}

// order is Caddy's order of the directives in a site or handle block.
var order = []string{"map", "vars", "root", "header", "request_body", "redir", "rewrite", "uri", "try_files",
	"basicauth", "forward_auth", "request_header", "encode", "push", "templates",
	"handle", "handle_path", "route", "abort", "error", "respond", "metrics", "reverse_proxy", "php_fastcgi", "file_server", "acme_server"}

func rank(name string) int {
	if i := slices.Index(order, name); i >= 0 {
		return i
	}
	return len(order)
}

// block is a list of directives with their matchers: a site's, or a
// handle's, handle_path's or route's.
type block struct {
	items   []item
	written []item // the items in the order written
	ordered bool   // a route block: in the order written
	strip   string // a handle_path's prefix
}

type item struct {
	d     *Directive
	m     *matcher
	args  []string
	inner *block // handle, handle_path, route
}

// routes translates a site's body into its routes.
func (t *translator) routes(s *site, body []*Directive) {
	b := t.block(s, body, false)
	pats := []string{}
	comments := map[string]string{}
	var collect func(b *block)
	collect = func(b *block) {
		for _, it := range b.written {
			if it.m != nil && translated[it.d.Name] {
				for _, p := range it.m.patterns {
					if !slices.Contains(pats, p) {
						pats = append(pats, p)
						comments[p] = it.m.comment
					}
				}
			}
			if it.inner != nil {
				collect(it.inner)
			}
		}
	}
	collect(b)
	// A pattern without a slash beside its prefix: one route for both.
	pats = append(pats, "/")
	s.body = b
	done := map[string]bool{}
	for _, p := range pats {
		if done[p] {
			continue
		}
		match := []string{p}
		if !strings.HasSuffix(p, "/") && slices.Contains(pats, p+"/") && comments[p] != "" {
			match = append(match, p+"/")
		}
		for _, m := range match {
			done[m] = true
		}
		// A matcher with conditions covering p: a route with them,
		// before the route without.
		var conds []*matcher
		var find func(b *block)
		find = func(b *block) {
			for _, it := range b.written {
				if it.m != nil && it.m.cond != nil && translated[it.d.Name] && it.m.covers(p) && !slices.Contains(conds, it.m) {
					conds = append(conds, it.m)
				}
				if it.inner != nil {
					find(it.inner)
				}
			}
		}
		find(b)
		for _, m := range append(conds, nil) {
			r := &convert.Route{Match: match, Directive: s.d.Name, Line: s.d.Line, Comment: comments[p]}
			st := &state{active: m}
			t.pipeline(s, b, p, st)
			r.Pipeline = st.finish()
			if len(r.Pipeline) == 0 {
				continue
			}
			if s.log != nil {
				r.Pipeline = append([]convert.Step{*s.log}, r.Pipeline...)
			}
			if m != nil {
				r.Conditions = m.cond
				if len(m.cond.Content) == 2 && m.cond.Content[0].Value == "methods" {
					// A route of a path may share it with the route
					// without conditions only if it has some: one that
					// every request passes.
					r.Conditions = convert.Map("methods", m.cond.Content[1], "protocol", convert.Flow(convert.Strs("http", "https")))
				}
				if len(conds) > 1 && !t.multi[m] {
					t.multi[m] = true
					t.note(m.d, "where another matcher's conditions hold too, Caddy runs the directives of both; Sluice's route with %s's conditions runs only its own", m.name)
				}
			}
			s.s.Routes = append(s.s.Routes, r)
		}
	}
}

// condition reads a matcher line other than path into m: path_regexp
// adds a pattern, the others route conditions. It reports false, with a
// note, for one that does not translate.
func (t *translator) condition(m *matcher, l *Directive) bool {
	if m.cond == nil && l.Name != "path_regexp" {
		m.cond = convert.Map()
	}
	args := l.Args
	switch l.Name {
	case "path_regexp":
		if len(args) == 2 {
			args = args[1:] // its name: for placeholders, which Sluice's values do not take
		}
		if len(args) != 1 {
			t.note(l, "want path_regexp [NAME] REGEXP")
			return false
		}
		if _, err := pipe.CompileRegex(args[0]); err != nil {
			t.note(l, "%v: Sluice's expressions are Go's (RE2)", err)
			return false
		}
		m.patterns = append(m.patterns, "~ "+args[0])
		return true
	case "method":
		if len(args) == 0 || convert.Key(m.cond, "methods") != nil {
			t.note(l, "want one method line: method NAME...")
			return false
		}
		var ms []string
		for _, a := range args {
			ms = append(ms, strings.ToUpper(a))
		}
		convert.SetKey(m.cond, "methods", convert.Flow(convert.Strs(ms...)))
		return true
	case "header", "header_regexp", "query":
		key := map[string]string{"header": "header", "header_regexp": "header", "query": "query"}[l.Name]
		h := convert.Key(m.cond, key)
		if h == nil {
			h = convert.Map()
			convert.SetKey(m.cond, key, h)
		}
		var pairs [][2]string
		switch {
		case l.Name == "query":
			for _, a := range args {
				k, v, ok := strings.Cut(a, "=")
				if !ok || k == "" {
					t.note(l, "want query KEY=VALUE...")
					return false
				}
				pairs = append(pairs, [2]string{k, v})
			}
		case l.Name == "header_regexp" && (len(args) == 2 || len(args) == 3):
			expr := args[len(args)-1]
			if _, err := regexp.Compile(expr); err != nil {
				t.note(l, "the expression %q is not one Go's RE2 syntax takes", expr)
				return false
			}
			pairs = append(pairs, [2]string{args[len(args)-2], "~ " + expr})
		case l.Name == "header" && len(args) == 1 && strings.HasPrefix(args[0], "!"):
			pairs = append(pairs, [2]string{args[0][1:], "\x00"}) // not sent
		case l.Name == "header" && len(args) == 2:
			v := args[1]
			switch {
			case v == "*":
			case strings.HasPrefix(v, "*") || strings.HasSuffix(v, "*"):
				inner := strings.Trim(v, "*")
				if strings.Contains(inner, "*") {
					t.note(l, "value %q: Sluice's header condition takes a value, *, or a regular expression", v)
					return false
				}
				v = "~ " + map[bool]string{true: "", false: "^"}[strings.HasPrefix(v, "*")] + regexp.QuoteMeta(inner) + map[bool]string{true: "", false: "$"}[strings.HasSuffix(v, "*")]
			case strings.Contains(v, "*"):
				t.note(l, "value %q: Sluice's header condition takes a value, *, or a regular expression", v)
				return false
			}
			pairs = append(pairs, [2]string{args[0], v})
		default:
			t.note(l, "want %s FIELD VALUE (one value: Caddy's several are any of them, which Sluice's conditions do not take)", l.Name)
			return false
		}
		for _, kv := range pairs {
			if convert.Key(h, kv[0]) != nil || strings.ContainsAny(kv[0], "{}") || strings.ContainsAny(kv[1], "{}") && !strings.HasPrefix(kv[1], "~ ") {
				t.note(l, "%q: one value a name, without placeholders (Caddy's several are any of them, which Sluice's conditions do not take)", kv[0])
				return false
			}
			if kv[1] == "\x00" {
				convert.SetKey(h, kv[0], &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"})
			} else {
				convert.SetKey(h, kv[0], convert.Str(kv[1]))
			}
		}
		return true
	case "remote_ip", "client_ip":
		if len(args) == 0 || convert.Key(m.cond, "client") != nil {
			t.note(l, "want one %s line of addresses", l.Name)
			return false
		}
		for _, a := range args {
			if _, err := netip.ParsePrefix(a); err != nil {
				if _, err := netip.ParseAddr(a); err != nil {
					t.note(l, "%q: Sluice's client condition takes addresses and CIDRs (Caddy's forwarded and private_ranges do not translate)", a)
					return false
				}
			}
		}
		if l.Name == "client_ip" {
			t.note(l, "Caddy takes the client from its trusted proxies' fields: Sluice's route takes the connection's peer unless you add client: {trusted_proxies: [...]}")
		}
		convert.SetKey(m.cond, "client", convert.Flow(convert.Strs(args...)))
		return true
	case "protocol":
		if len(args) != 1 || !slices.Contains([]string{"http", "https", "http/1.0", "http/1.1", "http/2"}, args[0]) || convert.Key(m.cond, "protocol") != nil {
			t.note(l, "want one protocol line of http, https, http/1.0, http/1.1 or http/2")
			return false
		}
		convert.SetKey(m.cond, "protocol", convert.Str(args[0]))
		return true
	}
	t.note(l, "matcher %s: Sluice's routes match paths (path, path_regexp), method, header, query, remote_ip and protocol", l.Name)
	return false
}

// translated are the directives that translate: the paths of their
// matchers are routes.
var translated = map[string]bool{"root": true, "header": true, "request_header": true, "redir": true, "basicauth": true,
	"encode": true, "respond": true, "reverse_proxy": true, "php_fastcgi": true, "file_server": true, "try_files": true,
	"handle": true, "handle_path": true, "route": true, "rewrite": true, "uri": true}

// block reads directives into a block.
func (t *translator) block(s *site, dirs []*Directive, ordered bool) *block {
	b := &block{ordered: ordered}
	for _, d := range dirs {
		if strings.HasPrefix(d.Name, "@") {
			s.matchers[d.Name] = t.namedMatcher(d)
			continue
		}
		m, args, ok := t.directiveMatcher(s, d)
		if !ok {
			continue
		}
		it := item{d: d, m: m, args: args}
		switch d.Name {
		case "handle", "handle_path", "route":
			it.inner = t.block(s, d.Block, d.Name == "route")
			if d.Name == "handle_path" {
				if m == nil || len(m.patterns) != 1 || !strings.HasSuffix(m.patterns[0], "/") {
					t.note(d, "handle_path translates for one prefix path ending in /*")
					continue
				}
				it.inner.strip = strings.TrimSuffix(m.patterns[0], "/")
			}
		case "import":
			t.note(d, "no snippet or file %q to import", strings.Join(d.Args, " "))
			continue
		default:
			if !translated[d.Name] {
				t.note(d, "Sluice has no equivalent")
				continue
			}
		}
		b.items = append(b.items, it)
	}
	b.written = slices.Clone(b.items)
	if !ordered {
		slices.SortStableFunc(b.items, func(x, y item) int { return rank(x.d.Name) - rank(y.d.Name) })
	}
	return b
}

// state is a pipeline being built for one route.
type state struct {
	active   *matcher // the matcher whose conditions the route has
	steps    []convert.Step
	source   *convert.Step
	compress *convert.Step
	root     string
	try      []string
	strip    string
}

// holds reports whether the route's requests pass m's conditions: it
// has none, or they are the route's.
func (st *state) holds(m *matcher) bool {
	return m == nil || m.cond == nil || m == st.active
}

func (st *state) finish() []convert.Step {
	if st.source == nil {
		return nil
	}
	out := append(st.steps, *st.source)
	if st.compress != nil {
		out = append(out, *st.compress)
	}
	return out
}

// pipeline adds to st what the items of b that cover the pattern p do,
// until one answers.
func (t *translator) pipeline(s *site, b *block, p string, st *state) {
	if b.strip != "" {
		st.strip = b.strip
	}
	handled := false // a handle of this block already chose
	// handle blocks are exclusive: the one with the most specific
	// matcher that covers p, a handle without one last.
	var best *item
	for i := range b.items {
		it := &b.items[i]
		if (it.d.Name == "handle" || it.d.Name == "handle_path") && it.m.covers(p) && st.holds(it.m) {
			if best == nil || specificity(it.m) > specificity(best.m) {
				best = it
			}
		}
	}
	for i := range b.items {
		it := &b.items[i]
		if st.source != nil {
			return
		}
		if !it.m.covers(p) || !st.holds(it.m) {
			continue
		}
		switch it.d.Name {
		case "handle", "handle_path":
			if it != best || handled {
				continue
			}
			handled = true
			t.pipeline(s, it.inner, p, st)
		case "route":
			t.pipeline(s, it.inner, p, st)
		default:
			t.directive(s, it, p, st)
		}
	}
}

func specificity(m *matcher) int {
	if m == nil {
		return -1
	}
	n := 0
	for _, p := range m.patterns {
		n = max(n, len(p))
	}
	return n
}

// directive translates one directive into st.
func (t *translator) directive(s *site, it *item, p string, st *state) {
	d, args := it.d, it.args
	once := func(format string, a ...any) { // a note per directive, not per route
		t.note(d, format, a...)
	}
	switch d.Name {
	case "root":
		if len(args) == 1 {
			st.root = args[0]
		}
	case "try_files":
		var try []string
		for _, a := range args {
			c := strings.NewReplacer("{path}", "$path", "{http.request.uri.path}", "$path").Replace(a)
			if strings.ContainsAny(c, "{}=") {
				once("candidate %q: Sluice's try takes {path} and fixed paths", a)
				return
			}
			try = append(try, c)
		}
		st.try = try
	case "header":
		t.header(it, st)
	case "request_header":
		if len(args) == 2 && !strings.ContainsAny(args[1], "{}") && !strings.HasPrefix(args[0], "-") {
			st.steps = append(st.steps, convert.Step{Name: "headers", Arg: convert.Map("request_set", convert.Flow(convert.Map(args[0], convert.Str(args[1]))))})
		} else if len(args) == 1 && strings.HasPrefix(args[0], "-") {
			st.steps = append(st.steps, convert.Step{Name: "headers", Arg: convert.Map("request_remove", convert.Flow(convert.Strs(args[0][1:])))})
		} else {
			once("Sluice's headers set fixed values")
		}
	case "redir":
		t.redir(it, st)
	case "rewrite":
		t.rewrite(s, it, p, st)
	case "uri":
		if len(args) == 2 && args[0] == "strip_prefix" && strings.HasPrefix(args[1], "/") && !strings.HasSuffix(args[1], "/") && (p == args[1]+"/" || strings.HasPrefix(p, args[1]+"/")) {
			st.strip = args[1]
			return
		}
		once("Sluice's rewrite takes a new path (rewrite); of uri, strip_prefix of a prefix the route is under translates, to the strip_prefix of its files or proxy")
	case "basicauth":
		t.basicAuth(s, it, st)
	case "encode":
		var enc []string
		c := convert.Map()
		for _, a := range args {
			switch a {
			case "gzip", "zstd":
				enc = append(enc, a)
			default:
				once("encoding %q: Sluice's compress offers zstd, br, gzip and deflate", a)
			}
		}
		for _, e := range d.Block {
			switch {
			case e.Name == "gzip" || e.Name == "zstd":
				enc = append(enc, e.Name)
			case e.Name == "minimum_length" && len(e.Args) == 1:
				convert.SetKey(c, "min_size", convert.Str(e.Args[0]))
			default:
				t.note(e, "Sluice's compress has no such option")
			}
		}
		if len(enc) == 0 {
			return
		}
		convert.SetKey(c, "encodings", convert.Flow(convert.Strs(enc...)))
		c.Content = append(c.Content[len(c.Content)-2:], c.Content[:len(c.Content)-2]...)
		arg := c
		if len(c.Content) == 2 {
			arg = c.Content[1]
		}
		st.compress = &convert.Step{Name: "compress", Arg: arg}
	case "respond":
		t.respond(it, st)
	case "reverse_proxy":
		t.reverseProxy(it, st)
	case "php_fastcgi":
		t.phpFastCGI(it, st)
	case "file_server":
		t.fileServer(it, st)
	}
}

// header translates header into a headers pipe.
func (t *translator) header(it *item, st *state) {
	set, add := convert.Map(), convert.Map()
	var remove []string
	lines := [][]string{it.args}
	if it.d.HasBlock {
		lines = nil
		for _, e := range it.d.Block {
			lines = append(lines, append([]string{e.Name}, e.Args...))
		}
	}
	for _, l := range lines {
		if len(l) == 0 {
			continue
		}
		name := l[0]
		switch {
		case strings.HasPrefix(name, "-") && len(l) == 1:
			remove = append(remove, name[1:])
		case len(l) == 2 && strings.ContainsAny(l[1], "{}"):
			t.note(it.d, "value %q: Sluice's headers set fixed values", l[1])
		case len(l) == 2 && strings.HasPrefix(name, "+"):
			convert.SetKey(add, name[1:], convert.Str(l[1]))
		case len(l) == 2 && !strings.ContainsAny(name[:1], "?>-"):
			convert.SetKey(set, name, convert.Str(l[1]))
		default:
			t.note(it.d, "%q: Sluice's headers set, add or remove a field", strings.Join(l, " "))
		}
	}
	o := convert.Map()
	if len(set.Content) > 0 {
		convert.SetKey(o, "set", convert.Flow(set))
	}
	if len(add.Content) > 0 {
		convert.SetKey(o, "add", convert.Flow(add))
	}
	if len(remove) > 0 {
		convert.SetKey(o, "remove", convert.Flow(convert.Strs(remove...)))
	}
	if len(o.Content) > 0 {
		st.steps = append(st.steps, convert.Step{Name: "headers", Arg: o})
	}
}

// placeholders rewrites Caddy's placeholders in a URL into the redirect
// component's variables; false when one has no equivalent.
func placeholders(s string) (string, bool) {
	if strings.Contains(s, "$") {
		return "", false
	}
	out := strings.NewReplacer("{uri}", "$path$query", "{http.request.uri}", "$path$query",
		"{path}", "$path", "{http.request.uri.path}", "$path", "?{query}", "$query", "?{http.request.uri.query}", "$query",
		"{host}", "$host", "{http.request.host}", "$host", "{hostport}", "$host", "{http.request.hostport}", "$host").Replace(s)
	return out, !strings.ContainsAny(out, "{}")
}

// redir translates redir.
func (t *translator) redir(it *item, st *state) {
	args := it.args
	if len(args) == 0 || len(args) > 2 {
		t.note(it.d, "want redir [matcher] TO [CODE]")
		return
	}
	to, ok := placeholders(args[0])
	if !ok {
		t.note(it.d, "%q: Sluice's redirect knows {uri}, {path}, {query} and {host}", args[0])
		return
	}
	code := 302
	if len(args) == 2 {
		switch c := args[1]; c {
		case "permanent":
			code = 301
		case "temporary":
			code = 302
		default:
			n, err := strconv.Atoi(c)
			if err != nil || n < 300 || n > 308 || n == 304 || n == 305 || n == 306 {
				t.note(it.d, "code %q: Sluice redirects with 301, 302, 303, 307 or 308", c)
				return
			}
			code = n
		}
	}
	o := convert.Map("to", convert.Str(to))
	if code != 302 {
		convert.SetKey(o, "status", convert.Int(code))
	}
	st.source = &convert.Step{Name: "redirect", Arg: o}
	st.compress = nil
}

// respond translates respond into text.
func (t *translator) respond(it *item, st *state) {
	body, status := "", 200
	args := it.args
	isStatus := func(s string) bool {
		n, err := strconv.Atoi(s)
		return err == nil && len(s) == 3 && n >= 100
	}
	switch {
	case len(args) == 1 && isStatus(args[0]):
		status, _ = strconv.Atoi(args[0])
	case len(args) == 1:
		body = args[0]
	case len(args) == 2 && isStatus(args[1]):
		body = args[0]
		status, _ = strconv.Atoi(args[1])
	case len(args) == 0:
	default:
		t.note(it.d, "want respond [matcher] [BODY] [STATUS]")
		return
	}
	if strings.ContainsAny(body, "{}") {
		t.note(it.d, "Sluice's text has no placeholders")
		return
	}
	if status < 200 || status > 599 {
		t.note(it.d, "status %d: Sluice's text answers 200 to 599", status)
		return
	}
	if it.d.HasBlock {
		t.note(it.d, "Sluice's text has no close option")
	}
	o := convert.Map()
	if status != 200 {
		convert.SetKey(o, "status", convert.Int(status))
	}
	convert.SetKey(o, "body", convert.Str(body))
	var arg *yaml.Node = o
	if status == 200 {
		arg = convert.Str(body)
	}
	st.source = &convert.Step{Name: "text", Arg: arg}
}

// upstream turns a Caddy upstream address into the proxy's form.
func upstream(a string, fastcgi bool) (string, bool) {
	if p, ok := strings.CutPrefix(a, "unix/"); ok {
		return "unix:" + p, convert.ValidUpstream("unix:"+p, false)
	}
	if strings.HasPrefix(a, "https://") || strings.HasPrefix(a, "h2c://") || strings.Contains(a, "{") {
		return "", false
	}
	a = strings.TrimPrefix(a, "http://")
	if strings.HasPrefix(a, ":") {
		a = "127.0.0.1" + a
	}
	if !fastcgi {
		a = "http://" + a
	}
	return a, convert.ValidUpstream(a, !fastcgi)
}

// reverseProxy translates reverse_proxy.
func (t *translator) reverseProxy(it *item, st *state) {
	var ups []string
	add := func(d *Directive, as []string) {
		for _, a := range as {
			u, ok := upstream(a, false)
			if !ok {
				t.note(d, "upstream %q: Sluice's proxy speaks plain HTTP to fixed addresses", a)
				continue
			}
			ups = append(ups, u)
		}
	}
	add(it.d, it.args)
	o := convert.Map()
	health := convert.Map()
	pas := convert.Map()
	for _, e := range it.d.Block {
		arg := ""
		if len(e.Args) > 0 {
			arg = e.Args[0]
		}
		switch e.Name {
		case "to":
			add(e, e.Args)
		case "lb_policy":
			switch arg {
			case "round_robin", "least_conn", "ip_hash":
				convert.SetKey(o, "policy", convert.Str(arg))
			case "random_choose":
				convert.SetKey(o, "policy", convert.Str("random_two"))
			case "header", "cookie":
				if len(e.Args) == 2 {
					convert.SetKey(o, "policy", convert.Str("hash"))
					convert.SetKey(o, "hash_key", convert.Str(arg+":"+e.Args[1]))
				}
			case "uri_hash":
				convert.SetKey(o, "policy", convert.Str("hash"))
				convert.SetKey(o, "hash_key", convert.Str("path"))
			default:
				t.note(e, "policy %q: Sluice has round_robin, least_conn, random_two, ip_hash and hash", arg)
			}
		case "lb_retries", "health_status", "max_fails":
			n, err := strconv.Atoi(arg)
			if err != nil || n < 0 || e.Name == "health_status" && (n < 100 || n > 599) {
				t.note(e, "want a number")
				continue
			}
			key, m := map[string]string{"lb_retries": "retries", "health_status": "expect", "max_fails": "failures"}[e.Name], o
			if e.Name == "health_status" {
				m = health
			} else if e.Name == "max_fails" {
				m = pas
			}
			convert.SetKey(m, key, convert.Int(n))
		case "health_uri", "health_path":
			if !strings.HasPrefix(arg, "/") || strings.ContainsAny(arg, " \t{}") {
				t.note(e, "want a path such as /healthz")
				continue
			}
			convert.SetKey(health, "path", convert.Str(arg))
		case "health_interval", "health_timeout", "fail_duration":
			d, ok := duration(arg)
			if !ok {
				t.note(e, "want a duration such as 10s")
				continue
			}
			switch e.Name {
			case "health_interval":
				convert.SetKey(health, "interval", convert.Str(d))
			case "health_timeout":
				convert.SetKey(health, "timeout", convert.Str(d))
			default:
				convert.SetKey(pas, "window", convert.Str(d))
				convert.SetKey(pas, "down_for", convert.Str(d))
			}
		case "header_up":
			if len(e.Args) == 2 && strings.EqualFold(e.Args[0], "Host") && (e.Args[1] == "{upstream_hostport}" || e.Args[1] == "{http.reverse_proxy.upstream.hostport}") {
				convert.SetKey(o, "host", convert.Str("upstream"))
			} else {
				t.note(e, "put a headers component with request_set before the proxy for fixed values")
			}
		default:
			t.note(e, "Sluice's proxy has no such option")
		}
	}
	if len(ups) == 0 {
		return
	}
	convert.SetKey(o, "upstreams", convert.Flow(convert.Strs(ups...)))
	o.Content = append(o.Content[len(o.Content)-2:], o.Content[:len(o.Content)-2]...)
	if len(health.Content) > 0 {
		convert.SetKey(o, "health", convert.Flow(health))
	}
	if len(pas.Content) > 0 {
		convert.SetKey(o, "passive", convert.Flow(pas))
	}
	if st.strip != "" {
		convert.SetKey(o, "strip_prefix", convert.Str(st.strip))
	}
	var arg *yaml.Node = o
	if len(o.Content) == 2 {
		arg = o.Content[1]
	}
	st.source = &convert.Step{Name: "proxy", Arg: arg}
}

// phpFastCGI translates php_fastcgi into php.
func (t *translator) phpFastCGI(it *item, st *state) {
	var ups []string
	for _, a := range it.args {
		u, ok := upstream(a, true)
		if !ok {
			t.note(it.d, "upstream %q: want host:port or unix//path", a)
			continue
		}
		ups = append(ups, u)
	}
	if len(ups) == 0 {
		return
	}
	if st.root == "" {
		t.note(it.d, "the PHP site needs a root")
		return
	}
	o := convert.Map("root", convert.Str(st.root), "upstreams", convert.Flow(convert.Strs(ups...)))
	for _, e := range it.d.Block {
		switch {
		case e.Name == "try_files":
			var try []string
			for _, a := range e.Args {
				switch a {
				case "{path}":
					try = append(try, "$path")
				case "{path}/index.php", "{path}/":
					try = append(try, "$path/")
				case "=404":
				default:
					if strings.HasSuffix(a, ".php") && !strings.Contains(a, "{") {
						try = append(try, a)
					} else {
						t.note(e, "candidate %q: the php component tries $path, $path/ and front controllers", a)
					}
				}
			}
			convert.SetKey(o, "try", convert.Flow(convert.Strs(try...)))
		case e.Name == "split" && len(e.Args) > 0:
			convert.SetKey(o, "split_path", convert.Flow(convert.Strs(e.Args...)))
		case e.Name == "index" && len(e.Args) == 1 && e.Args[0] != "off":
			convert.SetKey(o, "index", convert.Str(e.Args[0]))
		case e.Name == "env" && len(e.Args) == 2:
			env := convert.Key(o, "env")
			if env == nil {
				env = convert.Flow(convert.Map())
				convert.SetKey(o, "env", env)
			}
			convert.SetKey(env, e.Args[0], convert.Str(e.Args[1]))
		default:
			t.note(e, "Sluice's php has no such option")
		}
	}
	st.source = &convert.Step{Name: "php", Arg: o}
}

// fileServer translates file_server into files.
func (t *translator) fileServer(it *item, st *state) {
	o := convert.Map()
	root := st.root
	browse := slices.Contains(it.args, "browse")
	for _, e := range it.d.Block {
		switch {
		case e.Name == "root" && len(e.Args) == 1:
			root = e.Args[0]
		case e.Name == "browse":
			browse = true
		case e.Name == "index" && len(e.Args) > 0:
			convert.SetKey(o, "index", convert.Flow(convert.Strs(e.Args...)))
		case e.Name == "hide" && len(e.Args) == 1 && e.Args[0] == ".*":
			// Sluice hides dotfiles by default.
		case e.Name == "precompressed":
			var p []string
			for _, a := range e.Args {
				if a == "br" || a == "zstd" || a == "gzip" {
					p = append(p, a)
				}
			}
			convert.SetKey(o, "precompressed", convert.Flow(convert.Strs(p...)))
		default:
			t.note(e, "Sluice's files has no such option")
		}
	}
	if root == "" {
		root = "." // Caddy's default: the directory it runs in
	}
	o.Content = append([]*yaml.Node{convert.Str("root"), convert.Str(root)}, o.Content...)
	if browse {
		convert.SetKey(o, "browse", convert.Bool(true))
	}
	if st.strip != "" {
		convert.SetKey(o, "strip_prefix", convert.Str(st.strip))
	}
	if len(st.try) > 0 {
		convert.SetKey(o, "try", convert.Flow(convert.Strs(st.try...)))
	}
	var arg *yaml.Node = o
	if len(o.Content) == 2 {
		arg = o.Content[1]
	}
	st.source = &convert.Step{Name: "files", Arg: arg}
}

// basicAuth translates basicauth into basic_auth and its htpasswd file.
func (t *translator) basicAuth(s *site, it *item, st *state) {
	realm := "restricted"
	args := it.args
	if len(args) > 0 && args[0] == "bcrypt" {
		args = args[1:]
	} else if len(args) > 0 && args[0] == "scrypt" {
		t.note(it.d, "Sluice's htpasswd takes bcrypt hashes, not scrypt")
		return
	}
	if len(args) > 0 {
		realm = args[0]
	}
	name := fmt.Sprintf("basicauth-%d.htpasswd", it.d.Line)
	var lines strings.Builder
	for _, e := range it.d.Block {
		if len(e.Args) < 1 {
			t.note(e, "want USER HASH")
			continue
		}
		hash := e.Args[0]
		if dec, err := base64.StdEncoding.DecodeString(hash); err == nil && strings.HasPrefix(string(dec), "$2") {
			hash = string(dec)
		}
		if !strings.HasPrefix(hash, "$2") {
			t.note(e, "want a bcrypt hash (caddy hash-password)")
			continue
		}
		fmt.Fprintf(&lines, "%s:%s\n", e.Name, hash)
	}
	if _, done := t.files[name]; !done {
		t.files[name] = []byte(lines.String())
		if !t.writeFiles {
			t.note(it.d, "its users go to the htpasswd file %s beside the config: convert with -o FILE to write both", name)
		}
	}
	st.steps = append(st.steps, convert.Step{Name: "basic_auth", Arg: convert.Map("realm", convert.Str(realm), "htpasswd", convert.Str("./"+name))})
}

// logStep translates a site's log into a log component.
func (t *translator) logStep(d *Directive) (convert.Step, bool) {
	file, format := "stderr", "json"
	for _, e := range d.Block {
		switch {
		case e.Name == "output" && len(e.Args) >= 1:
			switch e.Args[0] {
			case "stdout", "stderr":
				file = e.Args[0]
			case "file":
				if len(e.Args) >= 2 {
					file = e.Args[1]
				}
				if e.HasBlock {
					t.note(e, "Sluice's log does not rotate its file: rotate it with logrotate and SIGUSR1")
				}
			case "discard":
				return convert.Step{}, false
			default:
				t.note(e, "Sluice logs to a file, stdout or stderr")
			}
		case e.Name == "format" && len(e.Args) >= 1:
			if e.Args[0] != "json" {
				t.note(e, "format %q: Sluice writes combined, common or json lines", e.Args[0])
			}
		default:
			t.note(e, "Sluice's log has no such option")
		}
	}
	return convert.Step{Name: "log", Arg: convert.Flow(convert.Map("file", convert.Str(file), "format", convert.Str(format)))}, true
}

// duration reads a Caddy duration: a Go duration, or whole days ("2d").
func duration(s string) (string, bool) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if d, err := strconv.Atoi(n); err == nil && d > 0 {
			return strconv.Itoa(d*24) + "h", true
		}
		return "", false
	}
	d, err := time.ParseDuration(s)
	return s, err == nil && d > 0
}

// rewrite translates rewrite TO into a rewrite pipe, when the new path
// takes the same route as p: Caddy runs the directives after it for the
// new path, Sluice's route those it chose for the path asked for.
func (t *translator) rewrite(s *site, it *item, p string, st *state) {
	if len(it.args) != 1 {
		t.note(it.d, "want rewrite [MATCHER] TO")
		return
	}
	to := strings.NewReplacer("{path}", "$path", "{http.request.uri.path}", "$path", "{query}", "$args", "{http.request.uri.query}", "$args").Replace(it.args[0])
	np, q, hasQ := strings.Cut(to, "?")
	switch {
	case strings.ContainsAny(to, "{}"):
		t.note(it.d, "%q: Sluice's rewrite knows {path} and {query}", it.args[0])
		return
	case !strings.HasPrefix(to, "/") && !strings.HasPrefix(to, "$path"), strings.Contains(np, "$args"):
		t.note(it.d, "%q: Sluice's rewrite writes a path starting with / or {path}, then maybe ?{query}", it.args[0])
		return
	case hasQ && q == "$args":
		to = np // the query kept: Sluice's rewrite keeps it without a ?
	}
	if !strings.Contains(np, "$") && !sameItems(s.body, it, p, np) {
		t.note(it.d, "Caddy serves %s with the directives matching it, Sluice's route with those of the path asked for: give the new path's directives the old path's matcher too", np)
		return
	}
	st.steps = append(st.steps, convert.Step{Name: "rewrite", Arg: convert.Str(to)})
}

// sameItems reports whether the directives of b but rw that apply to
// the paths of the pattern p are those that apply to the path np.
func sameItems(b *block, rw *item, p, np string) bool {
	for i := range b.written {
		it := &b.written[i]
		if it.d == rw.d {
			continue
		}
		if it.m.covers(p) != it.m.covers(np) {
			return false
		}
		if it.inner != nil && !sameItems(it.inner, rw, p, np) {
			return false
		}
	}
	return true
}
