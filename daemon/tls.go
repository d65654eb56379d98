package daemon

import (
	"crypto/tls"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/sluice-server/sluice/certs"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/engine"
)

// TLS listeners. A listen entry with tls is served by the engine over
// TLS (engine.ListenerOptions.TLS) with one tls.Config per listener, made
// when the listener opens and kept while it stays open: its
// GetCertificate reads the listener's certificates of the moment
// (certs.Endpoint), which a reload swaps, so new handshakes get the new
// certificates while open connections carry on. The certificates, ACME
// and OCSP stapling are package certs's; the Server keeps one
// certs.Manager across reloads.

// listenState is how a listener serves, as the config of the moment
// says: a reload replaces it whole.
type listenState struct {
	hsts     string         // the Strict-Transport-Security value, or ""
	altSvc   string         // the Alt-Svc value announcing HTTP/3, or ""
	redirect bool           // answer with a redirect to HTTPS
	port     string         // the redirect's ":port", "" for 443
	names    *redirectNames // the hosts the redirect is for; nil: any

	challenges *certs.Challenges // a plain listener's: the HTTP-01 answers of the config's acme sections, or nil
}

// newTLSConfig returns the TLS config of listener l: it offers "h2"
// then "http/1.1" by ALPN if l serves HTTP/2, else "http/1.1" alone
// (and "acme-tls/1", see certs.Endpoint.TLSConfig), and serves the
// certificates of the moment of l.certs.
func newTLSConfig(l *listener) *tls.Config {
	if l.h2 {
		return l.certs.TLSConfig("h2", "http/1.1")
	}
	return l.certs.TLSConfig("http/1.1")
}

// setState makes l serve as o says (nil: plain HTTP with no options):
// a TLS listener's certificates are stored in l.certs. The redirect's
// port is that of o, or else the bound port of the first TLS listener of
// cfg among s's listeners.
func (s *Server) setState(l *listener, o *config.ListenOptions, cfg *config.Config) {
	st := &listenState{}
	if o == nil || o.TLS == nil {
		st.challenges = s.certs.Challenges(cfg)
	}
	if o != nil {
		if o.TLS != nil {
			l.certs.Store(s.certs.Set(o.TLS, cfg))
		}
		if o.HSTS != nil {
			st.hsts = o.HSTS.Value()
		}
		if l.h3 != nil {
			st.altSvc = l.h3.altSvc()
		}
		if r := o.RedirectToHTTPS; r != nil {
			st.redirect = true
			port := r.Port
			if port == 0 {
				if a := cfg.HTTPSListener(); a != nil {
					if hl := s.listening(*a); hl != nil {
						if ta, ok := hl.ln.Addr().(*net.TCPAddr); ok {
							port = ta.Port
						}
					}
				}
			}
			if port != 0 && port != 443 {
				st.port = ":" + strconv.Itoa(port)
			}
			st.names = servedNames(cfg)
		}
	}
	l.state.Store(st)
}

// servesHTTP2 reports whether cfg serves HTTP/2 on a: over TLS unless
// http2: false, in cleartext with h2c: true.
func servesHTTP2(cfg *config.Config, a config.Address) bool {
	o := cfg.ListenOptions[a]
	return o != nil && (o.TLS != nil && !o.NoHTTP2 || o.H2C)
}

// answerACMEChallenge answers r if it asks for an HTTP-01 challenge
// token one of the config's acme sections knows, and reports whether it
// did.
func answerACMEChallenge(w engine.ResponseWriter, r *engine.Request, c *certs.Challenges) bool {
	if !strings.HasPrefix(string(r.Path), certs.ChallengePath) || string(r.Method) != "GET" {
		return false
	}
	body, ok := c.Answer(string(r.Host), string(r.Path))
	if !ok {
		return false
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(200)
	w.Write(body)
	return true
}

// isTLS reports whether cfg serves a over TLS.
func isTLS(cfg *config.Config, a config.Address) bool {
	o := cfg.ListenOptions[a]
	return o != nil && o.TLS != nil
}

// listenerHandler serves the requests of one listener: a redirect to
// HTTPS, or the config's routes with the listener's HSTS field.
type listenerHandler struct {
	l    *listener
	next engine.Handler
}

func (h listenerHandler) Serve(w engine.ResponseWriter, r *engine.Request) {
	st := h.l.state.Load()
	if st.challenges != nil && answerACMEChallenge(w, r, st.challenges) {
		return
	}
	if st.redirect {
		redirectToHTTPS(w, r, st.port, st.names)
		return
	}
	if st.hsts != "" {
		w.Header().Set("Strict-Transport-Security", st.hsts)
	}
	if st.altSvc != "" && r.ProtoMajor < 3 {
		w.Header().Set("Alt-Svc", st.altSvc)
	}
	h.next.Serve(w, r)
}

// redirectToHTTPS answers 308 Permanent Redirect to the request's URL
// over HTTPS, on port (":8443", or "" for 443). 308 rather than 301: a
// client must repeat the request as it was, method and body included
// (RFC 9110 §15.4.9), where after a 301 it may turn a POST into a GET.
// A host names does not hold (unless names is nil) is answered 421
// Misdirected Request: the Location is built from the client's Host, and
// names the config serves only.
func redirectToHTTPS(w engine.ResponseWriter, r *engine.Request, port string, names *redirectNames) {
	host := string(r.Host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" || !validRedirectHost(host) {
		engine.Error(w, 400, "no host to redirect to: send a Host field")
		return
	}
	if !names.holds(host) {
		engine.Error(w, 421, "not a host this server serves")
		return
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	path := string(r.RawPath)
	if !strings.HasPrefix(path, "/") {
		path = "/"
	}
	url := "https://" + host + port + path
	if len(r.Query) > 0 {
		url += "?" + string(r.Query)
	}
	w.Header().Set("Location", url)
	w.WriteHeader(308)
}

// redirectNames are the hosts a config serves over HTTPS, which its
// redirects to HTTPS are limited to: names in lower case without a
// trailing dot ("*.example.com" for its subdomains), and addresses.
type redirectNames struct {
	names map[string]bool
	wild  []string // the suffixes of wildcards: ".example.com"
	addrs map[netip.Addr]bool
}

// servedNames returns the hosts cfg serves: the names and addresses of
// its TLS listeners' certificates, the domains of their acme sections,
// and the hosts of its routes and sites. Nil if it names none (certificates for
// addresses only, routes for any host, and no TLS listener: HTTPS served
// by something in front), which leaves the redirect open to any host.
func servedNames(cfg *config.Config) *redirectNames {
	n := &redirectNames{names: map[string]bool{}, addrs: map[netip.Addr]bool{}}
	add := func(name string) {
		name = strings.TrimSuffix(strings.ToLower(name), ".")
		if a, err := netip.ParseAddr(name); err == nil {
			n.addrs[a.Unmap()] = true
		} else if strings.HasPrefix(name, "*.") {
			n.wild = append(n.wild, name[1:])
		} else if name != "" {
			n.names[name] = true
		}
	}
	for _, a := range cfg.Listen {
		o := cfg.ListenOptions[a]
		if o == nil || o.TLS == nil {
			continue
		}
		for _, c := range o.TLS.Certificates {
			if leaf := c.Pair.Leaf; leaf != nil {
				for _, d := range leaf.DNSNames {
					add(d)
				}
				for _, ip := range leaf.IPAddresses {
					add(ip.String())
				}
			}
		}
		if o.TLS.ACME != nil {
			for _, d := range o.TLS.ACME.Domains {
				add(d)
			}
		}
	}
	for _, r := range cfg.Routes {
		add(r.Host)
	}
	for _, s := range cfg.Sites {
		for _, h := range s.Hosts {
			add(h)
		}
	}
	if len(n.names) == 0 && len(n.wild) == 0 {
		// A certificate for an address alone says nothing of the names
		// a client may use for it.
		return nil
	}
	return n
}

// holds reports whether n holds host, a Host without port or brackets:
// always when n is nil.
func (n *redirectNames) holds(host string) bool {
	if n == nil {
		return true
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return n.addrs[a.Unmap()]
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if n.names[host] {
		return true
	}
	for _, w := range n.wild {
		if len(host) > len(w) && strings.HasSuffix(host, w) {
			return true
		}
	}
	return false
}

// validRedirectHost reports whether host may go into a Location field:
// a name, an IPv4 address or an IPv6 address's characters.
func validRedirectHost(host string) bool {
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == ':' || c == '_') {
			return false
		}
	}
	return true
}
