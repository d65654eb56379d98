package nginx

import (
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-server/sluice/convert"
)

// server is a server block being translated.
type server struct {
	d         *Directive
	scope     *scope
	site      *convert.Site
	addrs     []listenAddr
	names     []string
	cert, key string
	sslOn     bool
	isDefault bool
	redirect  bool // the server only redirects to HTTPS
}

type listenAddr struct {
	addr string
	ssl  bool
	d    *Directive
}

// listen reads a listen directive.
func (srv *server) listen(t *translator, d *Directive) {
	if len(d.Args) == 0 {
		return
	}
	a := d.Args[0]
	switch {
	case strings.HasPrefix(a, "unix:"):
	case !strings.Contains(a, ":") || strings.HasPrefix(a, "[") && strings.HasSuffix(a, "]"):
		if _, err := strconv.Atoi(a); err == nil {
			a = ":" + a
		} else {
			a += ":80"
		}
	case strings.HasPrefix(a, "*:"):
		a = a[1:]
	}
	if h, p, err := net.SplitHostPort(a); err == nil && h == "::" && !strings.HasPrefix(a, "unix:") {
		a = "[::]:" + p
	}
	if !convert.ValidListen(a) {
		t.note(d, "%q is not an address to listen on", d.Args[0])
		return
	}
	la := listenAddr{addr: a, d: d}
	for _, p := range d.Args[1:] {
		switch {
		case p == "ssl":
			la.ssl = true
		case p == "default_server" || p == "default":
			srv.isDefault = true
		case p == "http2" || strings.HasPrefix(p, "backlog=") || p == "reuseport" || strings.HasPrefix(p, "ipv6only=") || p == "deferred":
		default:
			t.note(d, "parameter %q has no equivalent", p)
		}
	}
	srv.addrs = append(srv.addrs, la)
}

// names reads server_name.
func (srv *server) serverNames(t *translator, d *Directive) {
	for _, n := range d.Args {
		if len(n) > 1 {
			n = strings.TrimSuffix(n, ".") // example.com. is example.com
		}
		switch {
		case n == "_" || n == "" || n == "localhost" && len(d.Args) == 1:
		case strings.HasPrefix(n, "~"):
			t.note(d, "name %q: Sluice matches host names exactly, or *.domain", n)
		case strings.HasPrefix(n, ".") && convert.ValidHost(n[1:]):
			srv.names = append(srv.names, strings.ToLower(n[1:]), strings.ToLower("*"+n))
		case strings.HasSuffix(n, ".*") || strings.Count(n, "*") > 1 || strings.Contains(n, "*") && !strings.HasPrefix(n, "*."):
			t.note(d, "name %q: Sluice's wildcards are *.domain only", n)
		case !convert.ValidHost(n):
			t.note(d, "name %q is not a host name", n)
		default:
			srv.names = append(srv.names, strings.ToLower(n))
		}
	}
}

// finish gives the sites their hosts and the config its listeners, and
// the server-wide settings.
func (t *translator) finish(http *scope) {
	var routed []*server
	for _, srv := range t.servers {
		if !srv.redirect && len(srv.site.Routes) > 0 {
			routed = append(routed, srv)
		}
	}
	if len(routed) > 1 {
		def := routed[0]
		for _, srv := range routed {
			if srv.isDefault {
				def = srv
				break
			}
		}
		for _, srv := range routed {
			srv.site.Hosts = srv.names
		}
		def.site.Default = true
	}
	for _, srv := range routed {
		t.cfg.Sites = append(t.cfg.Sites, srv.site)
	}
	// Listeners: every server's addresses; TLS with every certificate
	// of the servers on that address.
	for _, srv := range t.servers {
		for _, a := range srv.addrs {
			l := t.cfg.Listener(a.addr)
			switch {
			case srv.redirect:
				l.RedirectToHTTPS = true
			case a.ssl || srv.sslOn:
				if srv.cert == "" || srv.key == "" {
					t.note(a.d, "ssl without ssl_certificate and ssl_certificate_key in its server")
					continue
				}
				if c := [2]string{srv.cert, srv.key}; !slices.Contains(l.Certs, c) {
					l.Certs = append(l.Certs, c)
				}
			}
		}
	}
	// [::]:PORT beside :PORT: Sluice's :PORT takes both.
	t.cfg.Listen = slices.DeleteFunc(t.cfg.Listen, func(l *convert.Listen) bool {
		p, ok := strings.CutPrefix(l.Address, "[::]")
		if !ok {
			return false
		}
		for _, o := range t.cfg.Listen {
			if o.Address == p {
				return true
			}
		}
		return false
	})
	// Plain and TLS on one address cannot be.
	for _, l := range t.cfg.Listen {
		if len(l.Certs) > 0 && l.RedirectToHTTPS {
			l.RedirectToHTTPS = false
		}
	}
	if http.accessLog != nil {
		if step, ok := t.logStep(http.accessLog); ok {
			t.cfg.Set("access_log", step.Arg)
		}
	}
	if len(http.errorPages) > 0 {
		pages := http
		for _, srv := range t.servers {
			if srv.d == t.single { // the server's own, under its root
				pages = srv.scope
			}
		}
		if ep := t.errorPages(pages); ep != nil {
			t.cfg.Set("error_pages", ep)
		}
	}
}
