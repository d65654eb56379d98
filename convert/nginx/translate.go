package nginx

import (
	"fmt"
	"net/netip"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-server/sluice/convert"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/upstream"
)

// Convert loads file (see Load) and translates it (see Translate).
func Convert(file string) (*convert.Config, []convert.Note, error) {
	dirs, err := Load(file)
	if err != nil {
		return nil, nil, err
	}
	cfg, notes := Translate(dirs)
	return cfg, notes, nil
}

// Translate turns the directives of an nginx configuration — a whole
// nginx.conf, an http block's contents or a file of server blocks —
// into a Sluice config, and returns a note for every directive it could
// not translate. It never fails: what it cannot translate it leaves out
// and notes. It does not change dirs, and keeps no state between calls.
func Translate(dirs []*Directive) (*convert.Config, []convert.Note) {
	t := &translator{cfg: &convert.Config{}, upstreams: map[string]*Directive{}, zones: map[string]string{}}
	t.main(dirs)
	return t.cfg, convert.SortNotes(t.notes)
}

type translator struct {
	cfg       *convert.Config
	notes     []convert.Note
	upstreams map[string]*Directive // upstream blocks by name
	zones     map[string]string     // limit_req_zone rates by zone name
	servers   []*server
	http      *scope     // the http level: its access_log and error_page are the server-wide ones
	single    *Directive // the one server that does more than redirect to HTTPS, if one

	// The server being translated: whether it has regular-expression
	// locations, its ^~ locations written as expressions, and their
	// routes with the length of their prefix.
	regexes     bool
	caret       map[*Directive]bool
	caretRoutes map[*convert.Route]int
	locRewrites []locRewrite
}

// redirectOnly reports whether a server block only redirects to HTTPS
// (see httpsRedirect).
func redirectOnly(d *Directive) bool {
	_, ok := httpsRedirect(d)
	return ok
}

// httpsRedirect reports whether a server block is the usual plain
// listener whose only work is a redirect to the same URL over HTTPS —
// return 301 https://$host$request_uri, at the server's level or in its
// location / — beside, maybe, certbot's location of HTTP-01 challenges,
// which it returns.
func httpsRedirect(d *Directive) (challenge *Directive, ok bool) {
	var names []string
	var ret *Directive
	for _, e := range d.Block {
		switch e.Name {
		case "listen":
			if slices.Contains(e.Args, "ssl") {
				return nil, false
			}
		case "ssl":
			return nil, false
		case "server_name":
			names = e.Args
		case "return":
			ret = e
		case "location":
			switch {
			case len(e.Args) == 1 && e.Args[0] == "/" && len(e.Block) == 1 && e.Block[0].Name == "return":
				ret = e.Block[0]
			case len(e.Args) >= 1 && strings.HasPrefix(e.Args[len(e.Args)-1], "/.well-known/acme-challenge"):
				challenge = e
			default:
				return nil, false
			}
		case "root", "access_log", "error_log", "index", "server_tokens":
		default:
			return nil, false
		}
	}
	if ret == nil || len(ret.Args) != 2 || (ret.Args[0] != "301" && ret.Args[0] != "302" && ret.Args[0] != "307" && ret.Args[0] != "308") {
		return nil, false
	}
	to, ok := strings.CutPrefix(ret.Args[1], "https://")
	if !ok {
		return nil, false
	}
	host, found := strings.CutSuffix(to, "$request_uri")
	if !found || host != "$host" && host != "$server_name" && host != "$http_host" && !slices.Contains(names, host) {
		return nil, false
	}
	return challenge, true
}

func (t *translator) note(d *Directive, format string, args ...any) {
	t.notes = append(t.notes, convert.Note{File: d.File, Line: d.Line, Directive: d.Name, Why: fmt.Sprintf(format, args...)})
}

// same are directives whose effect Sluice has without being told: they
// translate to nothing.
var same = map[string]bool{
	"sendfile": true, "tcp_nopush": true, "tcp_nodelay": true, "worker_processes": true,
	"worker_connections": true, "use": true, "multi_accept": true, "events": true,
	"types": true, "default_type": true, "server_tokens": true, "proxy_http_version": true,
	"http2": true, "fastcgi_split_path_info": true, "fastcgi_index": true, "fastcgi_keep_conn": true,
	"fastcgi_param": true, "keepalive": true, "keepalive_requests": true, "charset": true,
	"server_names_hash_bucket_size": true, "types_hash_max_size": true, "daemon": true, "master_process": true,
	"worker_rlimit_nofile": true, "open_file_cache": true, "open_file_cache_valid": true,
	"open_file_cache_min_uses": true, "open_file_cache_errors": true, "gzip_vary": true,
	"gzip_proxied": true, "gzip_disable": true, "gzip_http_version": true, "gzip_buffers": true,
	"proxy_buffering": true, "ssl_prefer_server_ciphers": true, "ssl_session_cache": true,
	"ssl_session_timeout": true, "ssl_session_tickets": true, "client_body_temp_path": true,
	"proxy_temp_path": true, "fastcgi_temp_path": true, "uwsgi_temp_path": true, "scgi_temp_path": true,
	"absolute_redirect": true, "log_not_found": true, "gzip_static": true, // files serves .gz (and .br, .zst) beside a file by default
}

// known includes of nginx's own distribution that Sluice needs nothing
// of: its MIME types, and the FastCGI and proxy parameters Sluice sets
// itself.
var knownIncludes = []string{"mime.types", "fastcgi_params", "fastcgi.conf", "proxy_params", "snippets/fastcgi-php.conf"}

// main reads the top level: a main context (with events and http), an
// http context's contents, or server blocks.
func (t *translator) main(dirs []*Directive) {
	http := &scope{}
	var servers []*Directive
	var walk func(dirs []*Directive, top bool)
	walk = func(dirs []*Directive, top bool) {
		for _, d := range dirs {
			switch d.Name {
			case "http":
				walk(d.Block, false)
			case "server":
				servers = append(servers, d)
			case "upstream":
				if len(d.Args) == 1 {
					t.upstreams[d.Args[0]] = d
				}
			case "limit_req_zone":
				t.limitReqZone(d)
			case "user":
				if len(d.Args) >= 1 {
					t.cfg.Set("user", convert.Str(d.Args[0]))
				}
				if len(d.Args) == 2 && d.Args[1] != d.Args[0] {
					t.cfg.Set("group", convert.Str(d.Args[1]))
				}
			case "pid":
				if len(d.Args) == 1 {
					t.cfg.Set("pid_file", convert.Str(d.Args[0]))
				}
			case "error_log":
				t.errorLog(d)
			case "events":
				for _, e := range d.Block {
					if !same[e.Name] {
						t.note(e, "Sluice's event loop has no such setting")
					}
				}
			default:
				if !t.common(d, http) {
					t.note(d, "Sluice has no equivalent")
				}
			}
		}
	}
	walk(dirs, true)
	t.http = http
	var serving []*Directive
	for _, d := range servers {
		if !redirectOnly(d) {
			serving = append(serving, d)
		}
	}
	if len(serving) == 1 { // one server: its log and error pages are the server-wide ones
		t.single = serving[0]
		http.arrayOwnedLevel = nil
		for _, e := range serving[0].Block {
			switch e.Name {
			case "access_log":
				http.accessLog = e
			case "error_page":
				http.setArray("error_page", &http.errorPages, e)
			}
		}
		http.arrayOwnedLevel = nil
	}
	for _, s := range servers {
		t.server(s, http.child())
	}
	t.finish(http)
}

// errorLog translates error_log to the server's log.
func (t *translator) errorLog(d *Directive) {
	if len(d.Args) == 0 {
		return
	}
	out := d.Args[0]
	switch out {
	case "/dev/stderr":
		out = "stderr"
	case "/dev/stdout":
		out = "stdout"
	}
	if strings.HasPrefix(out, "syslog:") || strings.HasPrefix(out, "memory:") {
		t.note(d, "Sluice logs to stderr, stdout or a file")
		return
	}
	l := convert.Map("output", convert.Str(out))
	if len(d.Args) > 1 {
		switch lv := d.Args[1]; lv {
		case "debug", "info", "warn", "error":
			convert.SetKey(l, "level", convert.Str(lv))
		case "notice":
			convert.SetKey(l, "level", convert.Str("info"))
		default: // crit, alert, emerg
			convert.SetKey(l, "level", convert.Str("error"))
		}
	}
	t.cfg.Set("log", convert.Flow(l))
}

// limitReqZone records a zone's rate.
func (t *translator) limitReqZone(d *Directive) {
	var name, rate string
	for _, a := range d.Args[min(1, len(d.Args)):] {
		if v, ok := strings.CutPrefix(a, "zone="); ok {
			name, _, _ = strings.Cut(v, ":")
		}
		if v, ok := strings.CutPrefix(a, "rate="); ok {
			rate = v
		}
	}
	if len(d.Args) == 0 || d.Args[0] != "$binary_remote_addr" && d.Args[0] != "$remote_addr" {
		t.note(d, "Sluice's ratelimit counts per client address ($binary_remote_addr) only")
		return
	}
	if name == "" || rate == "" {
		t.note(d, "want zone=NAME:SIZE and rate=Nr/s")
		return
	}
	t.zones[name] = rate
}

// scope is what a level (http, server, location) sets and passes down
// to the levels inside it, as nginx inherits directives.
type scope struct {
	root, alias     string
	rootD           *Directive
	index           []string
	tryFiles        *Directive
	gzip            bool
	gzipTypes       []string
	gzipLevel       string
	gzipMin         string
	accessLog       *Directive // nil: inherited nothing; args "off": off
	errorPages      []*Directive
	authBasic       string // realm; "" or "off": none
	authFile        string
	access          []*Directive // allow and deny, in order
	limitReq        *Directive
	proxyHeaders    []*Directive
	addHeaders      []*Directive
	expires         *Directive
	autoindex       bool
	ret             *Directive // return, at this level
	rewrite         *Directive // a rewrite that is a redirect, at this level
	content         *Directive // proxy_pass or fastcgi_pass
	connectTimeout  string
	readTimeout     string
	cert, key       string // ssl_certificate and its key
	nextUpstream    *Directive
	dotfilesDeny    bool // a location ~ /\. { deny all; } in the server
	php             *Directive
	regex           *regexp.Regexp  // the location's regular expression, whose groups $1... name
	serverName      string          // the server's first name, for $server_name
	arrayOwnedLevel map[string]bool // array directives set at this level
}

// child returns the scope a nested level starts with.
func (s *scope) child() *scope {
	c := *s
	c.ret, c.rewrite, c.content, c.tryFiles, c.alias, c.regex = nil, nil, nil, nil, "", nil
	c.arrayOwnedLevel = map[string]bool{}
	return &c
}

// setArray replaces an inherited array directive's list at the first
// occurrence of the directive at this level, and appends after.
func (s *scope) setArray(name string, list *[]*Directive, d *Directive) {
	if s.arrayOwnedLevel == nil {
		s.arrayOwnedLevel = map[string]bool{}
	}
	if !s.arrayOwnedLevel[name] {
		s.arrayOwnedLevel[name] = true
		*list = nil
	}
	*list = append(*list, d)
}

// common handles the directives http, server and location share. It
// reports whether d was one of them.
func (t *translator) common(d *Directive, s *scope) bool {
	if s.arrayOwnedLevel == nil {
		s.arrayOwnedLevel = map[string]bool{}
	}
	arg := func(i int) string {
		if i < len(d.Args) {
			return d.Args[i]
		}
		return ""
	}
	switch d.Name {
	case "root":
		s.root, s.alias, s.rootD = arg(0), "", d
	case "index":
		s.index = d.Args
	case "gzip":
		s.gzip = arg(0) == "on"
	case "gzip_types":
		s.gzipTypes = d.Args
	case "gzip_comp_level":
		s.gzipLevel = arg(0)
	case "gzip_min_length":
		s.gzipMin = arg(0)
	case "access_log":
		s.accessLog = d
	case "error_page":
		s.setArray("error_page", &s.errorPages, d)
	case "auth_basic":
		s.authBasic = arg(0)
	case "auth_basic_user_file":
		s.authFile = arg(0)
	case "allow", "deny":
		s.setArray("access", &s.access, d)
	case "limit_req":
		s.limitReq = d
	case "proxy_set_header":
		s.setArray("proxy_set_header", &s.proxyHeaders, d)
	case "add_header":
		s.setArray("add_header", &s.addHeaders, d)
	case "expires":
		s.expires = d
	case "autoindex":
		s.autoindex = arg(0) == "on"
	case "proxy_connect_timeout":
		s.connectTimeout = duration(arg(0))
	case "client_max_body_size":
		if v := size(arg(0)); v != "" {
			t.cfg.Limit("max_body", convert.Str(v))
		} else {
			t.note(d, "want a size such as 10m")
		}
	case "keepalive_timeout":
		if v := duration(arg(0)); v != "" && v != "0s" {
			t.cfg.Limit("idle_timeout", convert.Str(v))
		} else {
			t.note(d, "Sluice always keeps connections alive; want a duration such as 65s")
		}
	case "client_header_timeout":
		if v := duration(arg(0)); v != "" {
			t.cfg.Limit("header_timeout", convert.Str(v))
		}
	case "send_timeout":
		if v := duration(arg(0)); v != "" {
			t.cfg.Limit("write_timeout", convert.Str(v))
		}
	case "error_log": // Sluice has one log
		t.errorLog(d)
	case "limit_req_status":
		if arg(0) != "429" {
			t.note(d, "Sluice's ratelimit answers 429")
		}
	case "proxy_read_timeout":
		s.readTimeout = duration(arg(0))
	case "proxy_next_upstream":
		s.nextUpstream = d
	case "map":
		// map $http_upgrade $connection_upgrade, for WebSockets: Sluice's
		// proxy passes upgrades on itself.
		if len(d.Args) != 2 || d.Args[0] != "$http_upgrade" {
			t.note(d, "Sluice has no variables")
		}
	case "ssl_certificate": // at the http level, for every server
		s.cert = arg(0)
	case "ssl_certificate_key":
		s.key = arg(0)
	case "ssl_protocols", "ssl_ciphers":
		t.note(d, "Sluice's TLS versions (1.2 and 1.3) and cipher suites are fixed (docs/security.md)")
	case "include":
		if strings.ContainsAny(arg(0), "*?[") { // a glob matching nothing includes nothing, in nginx too
			return true
		}
		for _, k := range knownIncludes {
			if ok, _ := path.Match(k, arg(0)); ok || strings.HasSuffix(arg(0), "/"+k) {
				return true
			}
		}
		t.note(d, "no file matches %q", arg(0))
	default:
		if same[d.Name] {
			return true
		}
		return false
	}
	return true
}

// server translates one server block into a site and its listeners.
func (t *translator) server(d *Directive, s *scope) {
	srv := &server{d: d, scope: s}
	var locations, rewrites []*Directive
	for _, e := range d.Block {
		switch e.Name {
		case "listen":
			srv.listen(t, e)
		case "server_name":
			srv.serverNames(t, e)
		case "location":
			locations = append(locations, e)
		case "ssl":
			srv.sslOn = len(e.Args) == 1 && e.Args[0] == "on"
		case "return":
			s.ret = e
		case "rewrite":
			if s.rewrite == nil && t.rewriteRedirect(e) != nil {
				s.rewrite = e
			} else {
				rewrites = append(rewrites, e)
			}
		case "if", "set":
			t.note(e, "%s", unsupported[e.Name])
		default:
			if !t.common(e, s) {
				t.note(e, "Sluice has no equivalent")
			}
		}
	}
	if len(srv.addrs) == 0 {
		srv.addrs = []listenAddr{{addr: ":80"}}
	}
	srv.cert, srv.key = s.cert, s.key
	if len(srv.names) > 0 && !strings.HasPrefix(srv.names[0], "*") {
		s.serverName = srv.names[0]
	}
	// A location ~ /\. that denies all: files answers 403 for dotfiles.
	// A location ~ \.php$ with fastcgi_pass: the site is a PHP site.
	var rest []*Directive
	for _, l := range locations {
		if len(l.Args) == 2 && (l.Args[0] == "~" || l.Args[0] == "~*") {
			switch {
			case l.Args[1] == `/\.` || l.Args[1] == `/\.ht` || l.Args[1] == `/\.(?!well-known)`:
				if onlyDeny(l) {
					s.dotfilesDeny = true
					continue
				}
			case strings.Contains(l.Args[1], `\.php`) && hasDirective(l, "fastcgi_pass"):
				if s.php == nil {
					s.php = l
					continue
				}
			}
		}
		rest = append(rest, l)
	}
	site := &convert.Site{File: d.File, Line: d.Line}
	srv.site = site
	t.servers = append(t.servers, srv)
	if challenge, ok := httpsRedirect(d); ok {
		srv.redirect = true
		if challenge != nil {
			t.note(challenge, "redirect_to_https answers the HTTP-01 challenges of Sluice's own acme certificates, not a webroot's: let Sluice obtain the certificates (tls: {acme: ...})")
		}
		return
	}
	if s.ret != nil { // before any location is chosen: the whole server
		site.Routes = append(site.Routes, t.route(d, []string{"/"}, s, ""))
		for _, l := range rest {
			t.note(l, "never reached: the server's return answers every request first")
		}
		return
	}
	explicit := map[string]bool{}
	if s.rewrite != nil { // before any location is chosen: its paths' own route
		pats := rewritePatterns(s.rewrite)
		r := &convert.Route{Match: pats, Directive: s.rewrite.Name, Line: s.rewrite.Line,
			Pipeline: []convert.Step{{Name: "redirect", Arg: t.rewriteRedirect(s.rewrite)}}}
		site.Routes = append(site.Routes, r)
		for _, p := range pats {
			explicit[p] = true
		}
		s.rewrite = nil
	}
	t.regexes, t.caret, t.caretRoutes, t.locRewrites = len(rewrites) > 0, map[*Directive]bool{}, map[*convert.Route]int{}, nil
	for _, l := range rest {
		if p, ok := locationPatterns(l); ok {
			explicit[p[0]] = true
		}
		if len(l.Args) == 2 && (l.Args[0] == "~" || l.Args[0] == "~*") {
			t.regexes = true
		}
	}
	covered := false
	for _, l := range rest {
		covered = t.location(site, l, s, explicit, "") || covered
	}
	if !covered {
		site.Routes = append(site.Routes, t.route(d, []string{"/"}, s, ""))
	}
	t.orderRegexes(site, rest)
	// Rewrites: a server's run before any location is chosen, so their
	// routes come before every expression; a location's after them.
	var first, last []*convert.Route
	for _, e := range rewrites {
		if r := t.rewriteRoute(site, e, s, nil, ""); r != nil {
			first = append(first, r)
		}
	}
	for _, lr := range t.locRewrites {
		if r := t.rewriteRoute(site, lr.d, lr.s, lr.route, lr.loc); r != nil {
			last = append(last, r)
		}
	}
	at := slices.IndexFunc(site.Routes, func(r *convert.Route) bool { return strings.HasPrefix(r.Match[0], "~ ") })
	if at < 0 {
		at = len(site.Routes)
	}
	site.Routes = slices.Insert(site.Routes, at, first...)
	site.Routes = append(site.Routes, last...)
}

// locRewrite is a rewrite in a location, translated once the server's
// routes are known.
type locRewrite struct {
	d     *Directive
	s     *scope
	route *convert.Route // the location's
	loc   string         // its pattern
}

// orderRegexes puts the routes of ^~ locations, written as expressions,
// before the other expressions, the longest prefix first: nginx takes a
// ^~ location that is the longest prefix matching without trying its
// regular expressions. A longer plain prefix under a ^~ one would have
// nginx try them; Sluice cannot, which is noted.
func (t *translator) orderRegexes(site *convert.Site, locations []*Directive) {
	if len(t.caretRoutes) == 0 {
		return
	}
	for _, l := range locations {
		if len(l.Args) != 1 || strings.HasPrefix(l.Args[0], "=") {
			continue
		}
		var under *Directive // the longest ^~ prefix of l's
		for c := range t.caret {
			if len(l.Args[0]) > len(c.Args[1]) && strings.HasPrefix(l.Args[0], c.Args[1]) && (under == nil || len(c.Args[1]) > len(under.Args[1])) {
				under = c
			}
		}
		if under != nil {
			t.note(l, "nginx tries the regular expressions for the paths under this prefix, but Sluice gives them to the ^~ %s at line %d, tried first: make this location ^~ too, or move the expressions' paths out of it", under.Args[1], under.Line)
		}
	}
	var carets, regexes []*convert.Route
	first := -1
	for i, r := range site.Routes {
		if !strings.HasPrefix(r.Match[0], "~ ") {
			continue
		}
		if first < 0 {
			first = i
		}
		if _, ok := t.caretRoutes[r]; ok {
			carets = append(carets, r)
		} else {
			regexes = append(regexes, r)
		}
	}
	slices.SortStableFunc(carets, func(a, b *convert.Route) int { return t.caretRoutes[b] - t.caretRoutes[a] })
	ordered := append(carets, regexes...)
	k := 0
	for i, r := range site.Routes {
		if strings.HasPrefix(r.Match[0], "~ ") {
			site.Routes[i] = ordered[k]
			k++
		}
	}
}

// regexPattern returns the Sluice pattern of an nginx location ~ (or ~*,
// case-insensitive) EXPR, or an error saying why Go's regular
// expressions cannot take it.
func regexPattern(mod, expr string) (string, error) {
	if mod == "~*" {
		expr = "(?i)" + expr
	}
	// PCRE's (?<name>...) is Go's too; its (?'name'...) is not.
	if _, err := regexp.Compile(expr); err != nil {
		msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
		return "", fmt.Errorf("the regular expression %q is not one Go's RE2 syntax takes (%s): rewrite it without lookaround, backreferences or possessive repeats", expr, msg)
	}
	if _, err := pipe.CompileRegex(expr); err != nil { // as the router takes it
		return "", err
	}
	return "~ " + expr, nil
}

var unsupported = map[string]string{
	"if":  "Sluice has no conditions on a request but its route's host, path and methods",
	"set": "Sluice has no variables",
}

// onlyDeny reports whether a location holds nothing but deny all (and
// access_log or log_not_found settings).
func onlyDeny(l *Directive) bool {
	deny := false
	for _, e := range l.Block {
		switch {
		case e.Name == "deny" && len(e.Args) == 1 && e.Args[0] == "all":
			deny = true
		case e.Name == "access_log" || e.Name == "log_not_found" || e.Name == "return" && len(e.Args) == 1 && e.Args[0] == "403":
			deny = deny || e.Name == "return"
		default:
			return false
		}
	}
	return deny
}

func hasDirective(l *Directive, name string) bool {
	return slices.ContainsFunc(l.Block, func(e *Directive) bool { return e.Name == name })
}

// locationPatterns returns the Sluice match patterns of a location: an
// exact = location its path, a prefix location its path as a prefix
// (and the path itself when it does not end in /). It reports false for
// the locations Sluice cannot match (regular expressions, named ones).
func locationPatterns(l *Directive) ([]string, bool) {
	var mod, uri string
	switch len(l.Args) {
	case 1:
		uri = l.Args[0]
		if strings.HasPrefix(uri, "=") && len(uri) > 1 { // location =/x
			mod, uri = "=", uri[1:]
		}
	case 2:
		mod, uri = l.Args[0], l.Args[1]
	default:
		return nil, false
	}
	if !convert.ValidPattern(uri) || strings.Contains(uri, "%") {
		return nil, false
	}
	switch mod {
	case "=":
		return []string{uri}, true
	case "", "^~":
		if strings.HasSuffix(uri, "/") {
			return []string{uri}, true
		}
		return []string{uri, uri + "/"}, true
	}
	return nil, false
}

// location translates a location block (and those nested in it) into
// routes of site. It reports whether it covers "/".
func (t *translator) location(site *convert.Site, l *Directive, parent *scope, explicit map[string]bool, outer string) bool {
	pats, ok := locationPatterns(l)
	var re *regexp.Regexp
	if !ok && len(l.Args) == 2 && (l.Args[0] == "~" || l.Args[0] == "~*") {
		expr, err := regexPattern(l.Args[0], l.Args[1])
		switch {
		case err != nil:
			t.note(l, "%v", err)
			return false
		case outer != "":
			t.note(l, "a regular expression nested in location %s: nginx tries it only for that location's paths; write it at the server's level, narrowed to them", outer)
			return false
		}
		re = regexp.MustCompile(expr[2:])
		pats, ok = []string{expr}, true
	}
	if !ok {
		switch {
		case len(l.Args) == 1 && strings.HasPrefix(l.Args[0], "@"):
			t.note(l, "a named location is reached only by try_files, error_page or a rewrite, which Sluice does not translate")
		default:
			t.note(l, "cannot translate location %s: want = /path, /prefix or ^~ /prefix", strings.Join(l.Args, " "))
		}
		return false
	}
	comment, loc := "", pats[0]
	if caret := len(l.Args) == 2 && l.Args[0] == "^~"; caret && t.regexes {
		// nginx looks for no regular expression under a ^~ prefix,
		// Sluice tries its expressions before its prefixes: the prefix
		// becomes an expression, tried before the others.
		t.caret[l] = true
		pats = []string{"~ ^" + regexp.QuoteMeta(l.Args[1])}
	}
	if len(pats) == 2 {
		// location /api also matches /apix; Sluice's prefixes end at
		// a slash. The path with a slash is another location's when
		// it is written too.
		last := path.Base(pats[0])
		switch {
		case explicit[pats[1]] || strings.Contains(last, "."):
			pats = pats[:1]
		default:
			comment = fmt.Sprintf("nginx's location %s also matched %s-old, %sx...; Sluice's prefixes end at a slash", pats[0], pats[0], pats[0])
		}
	}
	s := parent.child()
	if len(l.Args) != 1 || strings.HasPrefix(l.Args[0], "=") { // =, ^~ and ~: nginx looks for no (other) regular expression
		s.php = nil
	}
	s.regex = re
	var nested, rewrites []*Directive
	for _, e := range l.Block {
		switch e.Name {
		case "location":
			nested = append(nested, e)
		case "alias":
			if len(e.Args) == 1 {
				s.alias, s.rootD = e.Args[0], e
			}
		case "try_files":
			s.tryFiles = e
		case "return":
			s.ret = e
		case "rewrite":
			if s.rewrite == nil && t.rewriteRedirect(e) != nil {
				s.rewrite = e
			} else {
				rewrites = append(rewrites, e)
			}
		case "proxy_pass", "fastcgi_pass":
			s.content = e
		case "if", "set":
			t.note(e, "%s", unsupported[e.Name])
		case "internal":
			t.note(e, "Sluice routes have no internal-only form")
		default:
			if !t.common(e, s) {
				t.note(e, "Sluice has no equivalent")
			}
		}
	}
	r := t.route(l, pats, s, loc)
	r.Comment = comment
	if t.caret[l] {
		t.caretRoutes[r] = len(l.Args[1])
	}
	for _, e := range rewrites {
		t.locRewrites = append(t.locRewrites, locRewrite{d: e, s: s, route: r, loc: pats[0]})
	}
	site.Routes = append(site.Routes, r)
	covers := slices.Contains(pats, "/")
	for _, n := range nested {
		covers = t.location(site, n, s, explicit, loc) || covers
	}
	return covers
}

// route builds the route for patterns from what the scope holds.
func (t *translator) route(d *Directive, pats []string, s *scope, loc string) *convert.Route {
	r := &convert.Route{Match: pats, Directive: d.Name, Line: d.Line}
	if s.accessLog != nil && s.accessLog != t.http.accessLog {
		if step, ok := t.logStep(s.accessLog); ok {
			r.Pipeline = append(r.Pipeline, step)
		}
	}
	if len(s.errorPages) > 0 && !slices.Equal(s.errorPages, t.http.errorPages) {
		r.ErrorPages = t.errorPages(s)
	}
	if s.rewrite != nil { // the rewrite phase: before access and auth
		r.Pipeline = append(r.Pipeline, convert.Step{Name: "redirect", Arg: t.rewriteRedirect(s.rewrite)})
		return r
	}
	if s.ret != nil {
		if step, ok := t.returnStep(s.ret, s.serverName, s.regex); ok {
			r.Pipeline = append(r.Pipeline, step)
			return r
		}
	}
	if s.limitReq != nil {
		if step, ok := t.rateLimit(s.limitReq); ok {
			r.Pipeline = append(r.Pipeline, step)
		}
	}
	if len(s.access) > 0 {
		if step, ok := t.ipFilter(s.access); ok {
			r.Pipeline = append(r.Pipeline, step)
		}
	}
	if s.authBasic != "" && s.authBasic != "off" {
		if s.authFile == "" {
			t.note(d, "auth_basic without auth_basic_user_file: Sluice's basic_auth needs the htpasswd file")
		} else {
			r.Pipeline = append(r.Pipeline, convert.Step{Name: "basic_auth", Arg: convert.Map("realm", convert.Str(s.authBasic), "htpasswd", convert.Str(s.authFile))})
		}
	}
	if len(s.addHeaders) > 0 {
		add := convert.Map()
		for _, h := range s.addHeaders {
			if len(h.Args) < 2 || strings.Contains(h.Args[1], "$") {
				t.note(h, "want a header name and a value without variables")
				continue
			}
			convert.SetKey(add, h.Args[0], convert.Str(h.Args[1]))
		}
		if len(add.Content) > 0 {
			r.Pipeline = append(r.Pipeline, convert.Step{Name: "headers", Arg: convert.Map("add", add)})
		}
	}
	r.Pipeline = append(r.Pipeline, t.source(d, s, loc))
	if s.gzip {
		c := convert.Map("encodings", convert.Flow(convert.Strs("gzip")))
		types := []string{"text/html"}
		for _, ty := range s.gzipTypes {
			if ty == "*" {
				types = nil
				break
			}
			if ty != "text/html" {
				types = append(types, ty)
			}
		}
		if types != nil {
			convert.SetKey(c, "types", convert.Flow(convert.Strs(types...)))
		}
		if s.gzipLevel != "" {
			convert.SetKey(c, "levels", convert.Flow(convert.Map("gzip", convert.Num(s.gzipLevel))))
		}
		if s.gzipMin != "" {
			if v := size(s.gzipMin); v != "" {
				convert.SetKey(c, "min_size", convert.Str(v))
			}
		}
		r.Pipeline = append(r.Pipeline, convert.Step{Name: "compress", Arg: c})
	}
	return r
}

// source is the route's content: a proxy, PHP, FastCGI or the files of
// its root.
func (t *translator) source(d *Directive, s *scope, loc string) convert.Step {
	if s.content != nil && s.content.Name == "proxy_pass" {
		if step, ok := t.proxy(s.content, s, loc); ok {
			return step
		}
	}
	if s.content != nil && s.content.Name == "fastcgi_pass" {
		if ups := t.upstreamList(s.content, false); ups != nil {
			root := s.root
			if root == "" {
				root = "/usr/share/nginx/html"
			}
			return convert.Step{Name: "fastcgi", Arg: convert.Map("upstreams", convert.Flow(convert.Strs(ups...)), "root", convert.Str(root))}
		}
	}
	if s.php != nil && s.alias == "" {
		if step, ok := t.php(s); ok {
			return step
		}
	}
	o := convert.Map()
	switch {
	case s.alias != "" && strings.HasPrefix(loc, "~ "):
		t.note(s.rootD, "alias in a regular-expression location: give the files' root, with a rewrite of the path if it must change")
		convert.SetKey(o, "root", convert.Str(strings.TrimSuffix(s.alias, "/")))
	case s.alias != "":
		if !strings.HasSuffix(loc, "/") || !strings.HasSuffix(s.alias, "/") {
			t.note(s.rootD, "alias translates for a location ending in / to a directory ending in /")
		}
		convert.SetKey(o, "root", convert.Str(strings.TrimSuffix(s.alias, "/")))
		convert.SetKey(o, "strip_prefix", convert.Str(strings.TrimSuffix(loc, "/")))
	case s.root != "":
		convert.SetKey(o, "root", convert.Str(s.root))
	default:
		convert.SetKey(o, "root", convert.Str("/usr/share/nginx/html")) // nginx's html under Debian's prefix
	}
	if s.index != nil && !slices.Equal(s.index, []string{"index.html"}) {
		convert.SetKey(o, "index", convert.Flow(convert.Strs(s.index...)))
	}
	if s.autoindex {
		convert.SetKey(o, "browse", convert.Bool(true))
	}
	if s.dotfilesDeny {
		convert.SetKey(o, "dotfiles", convert.Str("deny"))
	}
	if s.tryFiles != nil {
		if try, ok := t.try(s.tryFiles, false); ok && len(try) > 0 && !slices.Equal(try, []string{"$path"}) {
			convert.SetKey(o, "try", convert.Flow(convert.Strs(try...)))
		}
	}
	if s.expires != nil {
		t.expires(s.expires, o)
	}
	if len(o.Content) == 2 {
		return convert.Step{Name: "files", Arg: o.Content[1]}
	}
	return convert.Step{Name: "files", Arg: o}
}

// try translates try_files into the try candidates of files or php.
func (t *translator) try(d *Directive, php bool) ([]string, bool) {
	var try []string
	for i, a := range d.Args {
		last := i == len(d.Args)-1
		if last && a == "=404" {
			break
		}
		if php && last && !strings.Contains(a, "$") {
			if c, _, _ := strings.Cut(a, "?"); strings.HasSuffix(c, ".php") {
				try = append(try, c)
				break
			}
			t.note(d, "candidate %q: the php component's fixed candidates are scripts", a)
			return nil, false
		}
		c, q, _ := strings.Cut(a, "?")
		if q != "" && q != "$args" && q != "$query_string" && q != "$is_args$args" {
			t.note(d, "a candidate's query %q: the request's query is kept as it is", q)
			return nil, false
		}
		c = strings.ReplaceAll(c, "$uri", "$path")
		rest, dollar := strings.CutPrefix(c, "$path")
		if !dollar && !convert.ValidPattern(c) || dollar && (strings.ContainsAny(rest, "$%") || !convert.ValidPattern("/x"+rest)) {
			t.note(d, "candidate %q: Sluice's try takes $uri and fixed paths, and ends in a 404", a)
			return nil, false
		}
		try = append(try, c)
	}
	return try, true
}

// expires sets a files source's caching from expires.
func (t *translator) expires(d *Directive, o *yaml.Node) {
	if len(d.Args) != 1 {
		t.note(d, "want one duration")
		return
	}
	switch a := d.Args[0]; a {
	case "off":
	case "epoch", "-1":
		convert.SetKey(o, "no_cache", convert.Bool(true))
	case "max":
		convert.SetKey(o, "max_age", convert.Str("87600h"))
	default:
		if v := duration(a); v != "" {
			convert.SetKey(o, "max_age", convert.Str(v))
		} else {
			t.note(d, "want a duration such as 24h")
		}
	}
}

// php builds the php source of a server whose location ~ \.php$ passes
// scripts to FastCGI.
func (t *translator) php(s *scope) (convert.Step, bool) {
	var pass *Directive
	for _, e := range s.php.Block {
		switch e.Name {
		case "fastcgi_pass":
			pass = e
		case "try_files", "include", "fastcgi_param", "fastcgi_split_path_info", "fastcgi_index", "fastcgi_keep_conn":
		default:
			t.note(e, "Sluice has no equivalent in its php component")
		}
	}
	ups := t.upstreamList(pass, false)
	if ups == nil {
		return convert.Step{}, false
	}
	var ok bool
	root := s.root
	if root == "" {
		t.note(s.php, "the PHP site needs a root")
		return convert.Step{}, false
	}
	o := convert.Map("root", convert.Str(root), "upstreams", convert.Flow(convert.Strs(ups...)))
	try := []string{"$path", "$path/"} // without try_files: the file, or the directory's index
	if s.tryFiles != nil {
		if try, ok = t.try(s.tryFiles, true); !ok {
			return convert.Step{}, false
		}
	}
	if !slices.Equal(try, []string{"$path", "$path/", "/index.php"}) {
		convert.SetKey(o, "try", convert.Flow(convert.Strs(try...)))
	}
	var static []string
	for _, i := range s.index {
		if !strings.HasSuffix(i, ".php") {
			static = append(static, i)
		}
	}
	if static != nil && !slices.Equal(static, []string{"index.html"}) {
		convert.SetKey(o, "static", convert.Flow(convert.Map("index", convert.Flow(convert.Strs(static...)))))
	}
	if s.dotfilesDeny {
		convert.SetKey(o, "dotfiles", convert.Str("deny"))
	}
	return convert.Step{Name: "php", Arg: o}, true
}

// returnStep translates return: a redirect, or a text answer.
func (t *translator) returnStep(d *Directive, serverName string, re *regexp.Regexp) (convert.Step, bool) {
	code, text := 302, ""
	switch len(d.Args) {
	case 1:
		if c, err := strconv.Atoi(d.Args[0]); err == nil {
			code = c
		} else {
			text = d.Args[0]
		}
	case 2:
		c, err := strconv.Atoi(d.Args[0])
		if err != nil {
			t.note(d, "want a status code first")
			return convert.Step{}, false
		}
		code, text = c, d.Args[1]
	default:
		t.note(d, "want return CODE [TEXT|URL] or return URL")
		return convert.Step{}, false
	}
	switch code {
	case 301, 302, 303, 307, 308:
		to, ok := t.vars(d, strings.ReplaceAll(text, "$server_name", serverName), re)
		if !ok {
			return convert.Step{}, false
		}
		o := convert.Map("to", convert.Str(to))
		if code != 302 {
			convert.SetKey(o, "status", convert.Int(code))
		}
		return convert.Step{Name: "redirect", Arg: o}, true
	case 444:
		t.note(d, "Sluice does not close a connection without an answer")
		return convert.Step{}, false
	}
	if code < 200 || code > 599 {
		t.note(d, "status %d: want 200 to 599", code)
		return convert.Step{}, false
	}
	if strings.Contains(text, "$") {
		t.note(d, "Sluice's text has no variables")
		return convert.Step{}, false
	}
	if code == 204 || code == 304 {
		text = ""
	}
	return convert.Step{Name: "text", Arg: convert.Map("status", convert.Int(code), "body", convert.Str(text))}, true
}

// vars rewrites nginx's variables in a redirect's URL into the redirect
// component's: $request_uri is $path$query, $uri $path, ?$args (or
// $is_args$args) $query, $host and $http_host $host; where the regular
// expression re (or nil) has matched, $1 to $9 and its groups' names
// are its groups, the route's path parameters.
func (t *translator) vars(d *Directive, s string, re *regexp.Regexp) (string, bool) {
	params := 0
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '$' {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i + 1
		var name string
		if strings.HasPrefix(s[j:], "{") {
			k := strings.IndexByte(s[j:], '}')
			if k < 0 {
				break
			}
			name, j = s[j+1:j+k], j+k+1
		} else {
			for j < len(s) && (s[j] == '_' || 'a' <= s[j] && s[j] <= 'z' || 'A' <= s[j] && s[j] <= 'Z' || '0' <= s[j] && s[j] <= '9') {
				j++
			}
			name = s[i+1 : j]
		}
		if name != "" && '1' <= name[0] && name[0] <= '9' && !strings.HasPrefix(s[i+1:], "{") && len(name) > 1 {
			name, j = name[:1], i+2 // nginx's $12 is $1 and a 2
		}
		if n, err := strconv.Atoi(name); err == nil || re != nil && slices.Contains(re.SubexpNames()[1:], name) {
			if err == nil && (re == nil || n < 1 || n > re.NumSubexp()) {
				t.note(d, "$%s names no group of the location's regular expression", name)
				return "", false
			}
			if strings.Contains(s[:i], "://") && !strings.Contains(s[strings.Index(s, "://")+3:i], "/") {
				t.note(d, "$%s in a URL's host: Sluice lets no request choose a redirect's host", name)
				return "", false
			}
			if j < len(s) && (s[j] == '_' || 'a' <= s[j] && s[j] <= 'z' || 'A' <= s[j] && s[j] <= 'Z' || '0' <= s[j] && s[j] <= '9') {
				b.WriteString("$${" + name + "}") // ${ alone would be an environment variable
				params++
			} else {
				b.WriteString("$" + name)
			}
			params++
			i = j
			continue
		}
		switch name {
		case "request_uri":
			b.WriteString("$path$query")
		case "uri", "document_uri":
			b.WriteString("$path")
		case "host", "http_host":
			b.WriteString("$host")
		case "is_args":
			if !strings.HasPrefix(s[j:], "$args") {
				t.note(d, "$is_args translates before $args only")
				return "", false
			}
			b.WriteString("$query")
			j += len("$args")
		case "args", "query_string":
			if !strings.HasSuffix(b.String(), "?") {
				t.note(d, "$%s translates after ? only", name)
				return "", false
			}
			out := strings.TrimSuffix(b.String(), "?")
			b.Reset()
			b.WriteString(out + "$query")
		default:
			t.note(d, "Sluice's redirect knows $request_uri, $uri, $args, $host and $server_name, not $%s", name)
			return "", false
		}
		i = j
	}
	if strings.Count(b.String(), "$") != params+strings.Count(b.String(), "$path")+strings.Count(b.String(), "$query")+strings.Count(b.String(), "$host") {
		t.note(d, "a $ that starts no variable in %q", s)
		return "", false
	}
	return b.String(), true
}

// logStep translates an access_log in a location or server of its own.
func (t *translator) logStep(d *Directive) (convert.Step, bool) {
	if len(d.Args) == 0 || d.Args[0] == "off" {
		return convert.Step{}, false
	}
	file := d.Args[0]
	if strings.HasPrefix(file, "syslog:") {
		t.note(d, "Sluice logs to a file, stdout or stderr")
		return convert.Step{}, false
	}
	switch file {
	case "/dev/stdout":
		file = "stdout"
	case "/dev/stderr":
		file = "stderr"
	}
	if len(d.Args) > 1 && d.Args[1] != "combined" {
		t.note(d, "log format %q: Sluice writes combined, common or json lines", d.Args[1])
	}
	if len(d.Args) > 2 {
		t.note(d, "Sluice's log has no buffer, gzip, flush or if parameters; it writes from a goroutine of its own")
	}
	return convert.Step{Name: "log", Arg: convert.Str(file)}, true
}

// errorPages translates error_page directives into an error_pages map.
func (t *translator) errorPages(s *scope) *yaml.Node {
	m := convert.Map()
	for _, d := range s.errorPages {
		if len(d.Args) < 2 {
			continue
		}
		uri := d.Args[len(d.Args)-1]
		codes := d.Args[:len(d.Args)-1]
		if strings.HasPrefix(codes[len(codes)-1], "=") {
			t.note(d, "Sluice's error pages keep the status")
			continue
		}
		if !strings.HasPrefix(uri, "/") || strings.ContainsAny(uri, "$?") {
			t.note(d, "Sluice's error pages are HTML files, not %q", uri)
			continue
		}
		root := s.root
		if root == "" {
			root = "/usr/share/nginx/html"
		}
		file := path.Join(root, uri)
		for _, c := range codes {
			n, err := strconv.Atoi(c)
			if err != nil || n < 400 || n > 599 {
				t.note(d, "status %q: Sluice's error pages are for 400 to 599", c)
				continue
			}
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: c}, convert.Str(file))
		}
	}
	if len(m.Content) == 0 {
		return nil
	}
	return m
}

// rateLimit translates limit_req with the rate of its zone.
func (t *translator) rateLimit(d *Directive) (convert.Step, bool) {
	var zone, burst string
	nodelay := false
	for _, a := range d.Args {
		switch {
		case strings.HasPrefix(a, "zone="):
			zone = a[len("zone="):]
		case strings.HasPrefix(a, "burst="):
			burst = a[len("burst="):]
		case a == "nodelay":
			nodelay = true
		}
	}
	rate, ok := t.zones[zone]
	if !ok {
		t.note(d, "zone %q has no limit_req_zone that Sluice translates", zone)
		return convert.Step{}, false
	}
	r, ok := parseRate(rate)
	if !ok {
		t.note(d, "rate %q: want Nr/s or Nr/m", rate)
		return convert.Step{}, false
	}
	b := 0
	if burst != "" {
		var err error
		if b, err = strconv.Atoi(burst); err != nil {
			t.note(d, "burst %q: want a number", burst)
			return convert.Step{}, false
		}
	}
	if !nodelay && b > 0 {
		t.note(d, "without nodelay nginx delays requests over the rate; Sluice answers them 429 at once")
	}
	return convert.Step{Name: "ratelimit", Arg: convert.Map("rate", convert.Num(r), "burst", convert.Int(b+1))}, true
}

func parseRate(s string) (string, bool) {
	n, unit, ok := strings.Cut(s, "r/")
	v, err := strconv.ParseFloat(n, 64)
	if !ok || err != nil || v <= 0 {
		return "", false
	}
	switch unit {
	case "s":
	case "m":
		v /= 60
	default:
		return "", false
	}
	return strconv.FormatFloat(v, 'f', -1, 64), true
}

// ipFilter translates allow and deny, checked in order by nginx, into
// ipfilter, where the most specific entry decides. It notes a list
// whose order the most specific entry does not reproduce.
func (t *translator) ipFilter(rules []*Directive) (convert.Step, bool) {
	var allow, deny []string
	type rule struct {
		allow bool
		p     netip.Prefix
		d     *Directive
	}
	var rs []rule
	hasAll := false
	for _, d := range rules {
		if len(d.Args) != 1 {
			t.note(d, "want one address, CIDR or all")
			return convert.Step{}, false
		}
		a := d.Args[0]
		var p netip.Prefix
		switch {
		case a == "all":
			hasAll = true
			p = netip.MustParsePrefix("0.0.0.0/0")
		case strings.Contains(a, "/"):
			var err error
			if p, err = netip.ParsePrefix(a); err != nil {
				t.note(d, "%q is not an address or CIDR", a)
				return convert.Step{}, false
			}
		default:
			ad, err := netip.ParseAddr(a)
			if err != nil {
				t.note(d, "%q is not an address or CIDR (unix: is not supported)", a)
				return convert.Step{}, false
			}
			p = netip.PrefixFrom(ad, ad.BitLen())
		}
		for _, earlier := range rs {
			if earlier.allow != (d.Name == "allow") && earlier.p.Bits() <= p.Bits() && (a == "all" || earlier.p.Addr().Is4() == p.Addr().Is4() && earlier.p.Contains(p.Addr())) {
				t.note(d, "never reached in nginx, where %s %s comes first; Sluice's ipfilter lets the most specific entry decide", earlier.d.Name, earlier.d.Args[0])
				return convert.Step{}, false
			}
		}
		rs = append(rs, rule{d.Name == "allow", p, d})
		if d.Name == "allow" {
			allow = append(allow, a)
		} else {
			deny = append(deny, a)
		}
	}
	if !hasAll && len(allow) > 0 { // nginx lets through what no rule names
		allow = append(allow, "all")
	}
	o := convert.Map()
	if len(allow) > 0 {
		convert.SetKey(o, "allow", convert.Flow(convert.Strs(allow...)))
	}
	if len(deny) > 0 {
		convert.SetKey(o, "deny", convert.Flow(convert.Strs(deny...)))
	}
	return convert.Step{Name: "ipfilter", Arg: o}, true
}

// upstreamList returns the addresses proxy_pass or fastcgi_pass names,
// those of its upstream block when it names one, as the component takes
// them; nil when it cannot (and noted).
func (t *translator) upstreamList(d *Directive, http bool) []string {
	if d == nil || len(d.Args) != 1 {
		return nil
	}
	target := d.Args[0]
	host := target
	if http {
		host = strings.TrimPrefix(target, "http://")
		host, _, _ = strings.Cut(host, "/")
	}
	if strings.Contains(host, "$") {
		t.note(d, "Sluice's upstreams are fixed: no variables")
		return nil
	}
	if u := t.upstreams[host]; u != nil {
		return t.upstreamBlock(u, http)
	}
	if a := upstreamAddr(host, http); convert.ValidUpstream(a, http) {
		return []string{a}
	}
	t.note(d, "%q is not an upstream address", target)
	return nil
}

func upstreamAddr(a string, http bool) string {
	if p, ok := strings.CutPrefix(a, "unix:"); ok {
		return "unix:" + strings.TrimSuffix(p, ":")
	}
	if http {
		return "http://" + a
	}
	return a
}

// upstreamBlock returns an upstream block's servers, noting what Sluice
// does not have.
func (t *translator) upstreamBlock(u *Directive, http bool) []string {
	var out []string
	for _, e := range u.Block {
		switch e.Name {
		case "server":
			if len(e.Args) == 0 {
				continue
			}
			down := false
			weight := ""
			for _, p := range e.Args[1:] {
				switch {
				case p == "down":
					down = true
				case p == "backup":
					t.note(e, "Sluice has no backup upstreams: this one is left out")
					down = true
				case strings.HasPrefix(p, "weight="):
					switch w, err := strconv.Atoi(strings.TrimPrefix(p, "weight=")); {
					case err != nil || w < 1:
						t.note(e, "parameter %q is not a weight", p)
					case w > upstream.MaxWeight:
						t.note(e, "weight %d is over Sluice's most, %d: given %d", w, upstream.MaxWeight, upstream.MaxWeight)
						weight = " weight=" + strconv.Itoa(upstream.MaxWeight)
					case w > 1:
						weight = " weight=" + strconv.Itoa(w)
					}
				case strings.HasPrefix(p, "max_fails="), strings.HasPrefix(p, "fail_timeout="):
				default:
					t.note(e, "parameter %q has no equivalent", p)
				}
			}
			switch a := upstreamAddr(e.Args[0], http); {
			case down:
			case convert.ValidUpstream(a, http):
				out = append(out, a+weight)
			default:
				t.note(e, "%q is not an upstream address", e.Args[0])
			}
		case "keepalive", "keepalive_requests", "keepalive_timeout", "least_conn", "ip_hash", "random", "hash", "zone":
		default:
			t.note(e, "Sluice has no equivalent")
		}
	}
	return out
}

// upstreamOptions adds an upstream block's policy and failure counting
// to a proxy's options.
func (t *translator) upstreamOptions(u *Directive, o *yaml.Node) {
	for _, e := range u.Block {
		switch e.Name {
		case "least_conn":
			convert.SetKey(o, "policy", convert.Str("least_conn"))
		case "ip_hash":
			convert.SetKey(o, "policy", convert.Str("ip_hash"))
		case "random":
			convert.SetKey(o, "policy", convert.Str("random_two"))
		case "hash":
			if len(e.Args) >= 1 && (e.Args[0] == "$request_uri" || e.Args[0] == "$uri") {
				convert.SetKey(o, "policy", convert.Str("hash"))
				convert.SetKey(o, "hash_key", convert.Str("path"))
			} else if len(e.Args) >= 1 && strings.HasPrefix(e.Args[0], "$cookie_") {
				convert.SetKey(o, "policy", convert.Str("hash"))
				convert.SetKey(o, "hash_key", convert.Str("cookie:"+strings.TrimPrefix(e.Args[0], "$cookie_")))
			} else if len(e.Args) >= 1 && strings.HasPrefix(e.Args[0], "$http_") {
				convert.SetKey(o, "policy", convert.Str("hash"))
				convert.SetKey(o, "hash_key", convert.Str("header:"+strings.ReplaceAll(strings.TrimPrefix(e.Args[0], "$http_"), "_", "-")))
			} else {
				t.note(e, "Sluice's hash takes a path, a cookie or a header")
			}
		case "server":
			for _, p := range e.Args[min(1, len(e.Args)):] {
				if v, ok := strings.CutPrefix(p, "max_fails="); ok {
					pas := passive(o)
					if v == "0" {
						convert.SetKey(pas, "failures", convert.Int(-1))
					} else {
						convert.SetKey(pas, "failures", convert.Num(v))
					}
				}
				if v, ok := strings.CutPrefix(p, "fail_timeout="); ok {
					if dur := duration(v); dur != "" {
						pas := passive(o)
						convert.SetKey(pas, "window", convert.Str(dur))
						convert.SetKey(pas, "down_for", convert.Str(dur))
					}
				}
			}
		}
	}
}

func passive(o *yaml.Node) *yaml.Node {
	p := convert.Key(o, "passive")
	if p == nil {
		p = convert.Flow(convert.Map())
		convert.SetKey(o, "passive", p)
	}
	return p
}

// proxy translates proxy_pass.
func (t *translator) proxy(d *Directive, s *scope, loc string) (convert.Step, bool) {
	if len(d.Args) != 1 {
		return convert.Step{}, false
	}
	target := d.Args[0]
	if strings.HasPrefix(target, "https://") {
		t.note(d, "Sluice's proxy speaks plain HTTP to its upstreams")
		return convert.Step{}, false
	}
	if !strings.HasPrefix(target, "http://") {
		t.note(d, "want an http:// URL")
		return convert.Step{}, false
	}
	ups := t.upstreamList(d, true)
	if len(ups) == 0 {
		return convert.Step{}, false
	}
	o := convert.Map("upstreams", convert.Flow(convert.Strs(ups...)))
	rest := strings.TrimPrefix(target, "http://")
	if strings.HasPrefix(rest, "unix:") {
		_, rest, _ = strings.Cut(strings.TrimPrefix(rest, "unix:"), ":")
	} else if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[i:]
	} else {
		rest = ""
	}
	switch {
	case rest == "" || rest == loc:
	case rest == "/" && strings.HasSuffix(loc, "/") && loc != "/":
		convert.SetKey(o, "strip_prefix", convert.Str(strings.TrimSuffix(loc, "/")))
	default:
		t.note(d, "the URI %q replaces the location's %q: Sluice's proxy strips a prefix, or sends the path as it is", rest, loc)
	}
	host, forwarded := "upstream", false
	var set [][2]string
	for _, h := range s.proxyHeaders {
		if len(h.Args) != 2 {
			continue
		}
		name, v := strings.ToLower(h.Args[0]), h.Args[1]
		switch {
		case name == "host" && (v == "$host" || v == "$http_host"):
			host = "client"
		case name == "host" && v == "$proxy_host":
		case name == "host" && !strings.Contains(v, "$"):
			host = v
		case name == "x-forwarded-for" || name == "x-forwarded-proto" || name == "x-forwarded-host" || name == "x-real-ip" || name == "forwarded":
			forwarded = true
		case name == "upgrade" || name == "connection":
			// Sluice tunnels WebSockets (any Upgrade) itself.
		case !strings.Contains(v, "$"):
			set = append(set, [2]string{h.Args[0], v})
		default:
			t.note(h, "Sluice's headers set fixed values: %q", v)
		}
	}
	if host != "client" {
		convert.SetKey(o, "host", convert.Str(host))
	}
	if !forwarded {
		convert.SetKey(o, "forwarded", convert.Str("none"))
	}
	if s.connectTimeout != "" {
		convert.SetKey(o, "connect_timeout", convert.Str(s.connectTimeout))
	}
	if s.readTimeout != "" {
		convert.SetKey(o, "response_header_timeout", convert.Str(s.readTimeout))
	}
	if d := s.nextUpstream; d != nil {
		var fail []*yaml.Node
		for _, a := range d.Args {
			switch {
			case a == "off":
				convert.SetKey(o, "retries", convert.Int(-1))
			case a == "error" || a == "timeout" || a == "invalid_header":
				// what Sluice's proxy retries after by itself
			case strings.HasPrefix(a, "http_") && len(a) == 8 && a != "http_403" && a != "http_404" && a != "http_429":
				fail = append(fail, convert.Num(a[5:]))
			default:
				t.note(d, "%q: Sluice's proxy tries another upstream after an error, a timeout or a fail_status (5xx)", a)
			}
		}
		if len(fail) > 0 {
			convert.SetKey(o, "fail_status", convert.Flow(convert.Seq(fail...)))
		}
	}
	if u := t.upstreams[strings.SplitN(strings.TrimPrefix(target, "http://"), "/", 2)[0]]; u != nil {
		t.upstreamOptions(u, o)
	}
	if len(set) > 0 {
		t.note(d, "proxy_set_header with fixed values: put a headers component with request_set before the proxy")
	}
	return convert.Step{Name: "proxy", Arg: o}, true
}

// duration converts an nginx time ("30", "30s", "1m", "1h30m", "500ms",
// "30d") to a Go duration, or "" when it is not one.
func duration(s string) string {
	if s == "" {
		return ""
	}
	units := map[string]float64{"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "M": 30 * 86400, "y": 365 * 86400}
	total := 0.0
	for s != "" {
		i := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		if i == 0 || i > 9 {
			return ""
		}
		n, _ := strconv.Atoi(s[:i])
		s = s[i:]
		j := 0
		for j < len(s) && !('0' <= s[j] && s[j] <= '9') {
			j++
		}
		u := s[:j]
		if u == "" {
			u = "s"
		}
		f, ok := units[u]
		if !ok {
			return ""
		}
		total += float64(n) * f
		s = s[j:]
	}
	if total < 1 {
		return strconv.Itoa(int(total*1000)) + "ms"
	}
	secs := int64(total)
	switch {
	case secs%3600 == 0:
		return strconv.FormatInt(secs/3600, 10) + "h"
	case secs%60 == 0:
		return strconv.FormatInt(secs/60, 10) + "m"
	}
	return strconv.FormatInt(secs, 10) + "s"
}

// size converts an nginx size ("10m", "1k", "512") to a Sluice size.
func size(s string) string {
	if s == "" {
		return ""
	}
	n, unit := s, ""
	if c := s[len(s)-1]; c < '0' || c > '9' {
		n, unit = s[:len(s)-1], strings.ToLower(s[len(s)-1:])
	}
	v, err := strconv.Atoi(n)
	if err != nil || v < 0 {
		return ""
	}
	if v == 0 {
		return "unlimited"
	}
	switch unit {
	case "":
		return n
	case "k":
		return n + "KiB"
	case "m":
		return n + "MiB"
	case "g":
		return n + "GiB"
	}
	return ""
}

// rewritePatterns returns the route patterns of the paths a rewrite
// that rewriteRedirect translates applies to: ^/old/(.*)$ is /old/,
// ^/old(.*)$ both /old and /old/.
func rewritePatterns(d *Directive) []string {
	p := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(d.Args[0], "^"), "$"), "(.*)")
	if strings.HasSuffix(p, "/") {
		return []string{p}
	}
	return []string{p, p + "/"}
}

// rewriteRedirect returns the redirect options of a rewrite that moves a
// tree — rewrite ^/old(.*)$ /new$1 permanent — or nil for any other.
func (t *translator) rewriteRedirect(d *Directive) *yaml.Node {
	if len(d.Args) != 3 || d.Args[2] != "permanent" && d.Args[2] != "redirect" {
		return nil
	}
	prefix, ok := strings.CutPrefix(d.Args[0], "^")
	if !ok {
		return nil
	}
	prefix, ok = strings.CutSuffix(strings.TrimSuffix(prefix, "$"), "(.*)")
	target, ok2 := strings.CutSuffix(d.Args[1], "$1")
	if !ok || !ok2 || !strings.HasPrefix(prefix, "/") || strings.ContainsAny(prefix, `\.*+?()[]{}|^$`) || strings.ContainsAny(target, "$?") {
		return nil
	}
	if strings.HasSuffix(prefix, "/") != strings.HasSuffix(target, "/") {
		return nil
	}
	prefix, target = strings.TrimSuffix(prefix, "/"), strings.TrimSuffix(target, "/")
	o := convert.Map("to", convert.Str(target+"$path$query"))
	if prefix != "" {
		convert.SetKey(o, "strip_prefix", convert.Str(prefix))
	}
	if d.Args[2] == "permanent" {
		convert.SetKey(o, "status", convert.Int(301))
	}
	return o
}

// rewriteRoute translates a rewrite other than a tree's move into a
// route of its expression: at the server's level (in nil), one taking
// its paths from every location, as nginx rewrites before choosing one;
// in a location (in its route, loc its pattern), one taking only paths
// of that location. A redirect's route answers with it; another's
// rewrites the path and goes on with the pipeline of the route the new
// path takes (the location's own with break), as Sluice's rewrite routes
// no request again. It returns nil, with a note, for a rewrite whose
// paths or target route cannot be told.
func (t *translator) rewriteRoute(site *convert.Site, d *Directive, s *scope, in *convert.Route, loc string) *convert.Route {
	if len(d.Args) != 2 && len(d.Args) != 3 {
		t.note(d, "want rewrite REGEX REPLACEMENT [last|break|redirect|permanent]")
		return nil
	}
	flag := ""
	if len(d.Args) == 3 {
		flag = d.Args[2]
	}
	if flag != "" && flag != "last" && flag != "break" && flag != "redirect" && flag != "permanent" {
		t.note(d, "flag %q: want last, break, redirect or permanent", flag)
		return nil
	}
	expr, err := regexPattern("~", d.Args[0])
	if err != nil {
		t.note(d, "%v", err)
		return nil
	}
	re := regexp.MustCompile(expr[2:])
	prefix := "/" // what every path the expression matches starts with
	if lit := anchoredPrefix(expr[2:]); lit != "" {
		prefix = lit
	}
	// The paths it takes must be those nginx rewrites.
	for _, r := range site.Routes {
		for _, m := range r.Match {
			switch {
			case r == in || strings.HasPrefix(m, "~ "):
			case in == nil && !strings.HasSuffix(m, "/") && re.MatchString(m):
				t.note(d, "nginx rewrites %s before choosing its location; Sluice's exact route for it is chosen before any expression: add the rewrite to that location", m)
				return nil
			case in != nil && strings.HasSuffix(m, "/") && len(m) > len(loc) && strings.HasPrefix(m, loc) && (strings.HasPrefix(m, prefix) || strings.HasPrefix(prefix, m)):
				t.note(d, "the route of its expression would take paths of location %s too, which nginx does not rewrite: narrow the expression", m)
				return nil
			}
		}
	}
	if in != nil {
		within := strings.HasPrefix(prefix, loc) && strings.HasSuffix(loc, "/")
		if l, ok := strings.CutPrefix(loc, "~ "); ok {
			within = l == expr[2:] || l == "(?i)"+expr[2:]
		}
		if !within {
			t.note(d, "its expression may match paths outside location %s, which nginx does not rewrite: anchor it to the location's prefix (^%s...), or move the rewrite to the server's level", loc, strings.TrimPrefix(loc, "~ "))
			return nil
		}
	}
	repl := d.Args[1]
	redirect := flag == "redirect" || flag == "permanent" || strings.HasPrefix(repl, "http://") || strings.HasPrefix(repl, "https://")
	ownQuery := strings.Contains(repl, "?") && !strings.HasSuffix(repl, "?") && !strings.Contains(repl, "$args") && !strings.Contains(repl, "$query_string")
	if strings.HasSuffix(repl, "?") { // nginx: the request's query is not appended
		repl = strings.TrimSuffix(repl, "?")
		if !redirect {
			repl += "?"
		}
	} else if !strings.Contains(repl, "?") && redirect {
		repl += "$is_args$args"
	}
	to, ok := t.vars(d, strings.ReplaceAll(repl, "$server_name", s.serverName), re)
	if !ok {
		return nil
	}
	if ownQuery { // nginx appends the request's query to the replacement's
		to += "&$args"
	}
	r := &convert.Route{Match: []string{expr}, Directive: d.Name, Line: d.Line}
	if redirect {
		o := convert.Map("to", convert.Str(to))
		if flag == "permanent" {
			convert.SetKey(o, "status", convert.Int(301))
		}
		r.Pipeline = []convert.Step{{Name: "redirect", Arg: o}}
		return r
	}
	if strings.Contains(to, "$host") || !strings.HasPrefix(to, "/") && !strings.HasPrefix(to, "$path") {
		t.note(d, "the replacement %q is not a path on this server", d.Args[1])
		return nil
	}
	target := in
	if flag != "break" || in == nil {
		if target = chooseRoute(site, to); target == nil {
			t.note(d, "Sluice's rewrite routes no request again, and which route the new path %s takes cannot be told here: write a route for it with the rewrite before its pipeline", d.Args[1])
			return nil
		}
	}
	pipeline := append([]convert.Step{{Name: "rewrite", Arg: convert.Str(to)}}, target.Pipeline...)
	if in != nil && in.Match[0] == expr { // the location's own expression: its route rewrites
		in.Pipeline, in.ErrorPages = pipeline, target.ErrorPages
		return nil
	}
	r.ErrorPages, r.Pipeline = target.ErrorPages, pipeline
	return r
}

// chooseRoute returns the route of site a request for the rewritten
// path to takes, as Sluice would choose it, or nil when that depends on
// the request (a placeholder in the path where routes differ after it).
func chooseRoute(site *convert.Site, to string) *convert.Route {
	p, _, _ := strings.Cut(to, "?")
	lit, _, vars := strings.Cut(p, "$")
	for _, r := range site.Routes { // exact paths first
		for _, m := range r.Match {
			switch {
			case strings.HasPrefix(m, "~ ") || strings.HasSuffix(m, "/"):
			case vars && strings.HasPrefix(m, lit):
				return nil
			case !vars && m == p:
				return r
			}
		}
	}
	for _, r := range site.Routes { // then the expressions, in order
		for _, m := range r.Match {
			if !strings.HasPrefix(m, "~ ") {
				continue
			}
			re, err := regexp.Compile(m[2:])
			if lp := anchoredPrefix(m[2:]); lp != "" && !strings.HasPrefix(lp, lit) && !strings.HasPrefix(lit, lp) {
				continue // its paths start elsewhere
			}
			if lp := anchoredPrefix(m[2:]); lp != "" && strings.HasPrefix(lit, lp) && m[2:] == "^"+regexp.QuoteMeta(lp) {
				return r // a prefix written as an expression (^~): every path under it
			}
			switch {
			case err != nil || vars:
				return nil
			case re.MatchString(p) && re.NumSubexp() == 0:
				return r
			case re.MatchString(p):
				return nil // its pipeline may use groups this path has not
			}
		}
	}
	var best *convert.Route
	bestLen := -1
	for _, r := range site.Routes { // then the longest prefix
		for _, m := range r.Match {
			switch {
			case strings.HasPrefix(m, "~ ") || !strings.HasSuffix(m, "/"):
			case vars && len(m) > len(lit) && strings.HasPrefix(m, lit):
				return nil
			case strings.HasPrefix(lit, m) && len(m) > bestLen:
				best, bestLen = r, len(m)
			}
		}
	}
	return best
}

// anchoredPrefix returns the path every match of the expression starts
// with when it is anchored at the start ("^/docs/(.*)" gives "/docs/"),
// or "".
func anchoredPrefix(expr string) string {
	rest, ok := strings.CutPrefix(expr, "^")
	if !ok {
		return ""
	}
	re, err := regexp.Compile(rest)
	if err != nil {
		return ""
	}
	lit, _ := re.LiteralPrefix()
	if !strings.HasPrefix(lit, "/") {
		return ""
	}
	return lit
}
