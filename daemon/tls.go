package daemon

import (
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/crypto/acme"

	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/engine"
)

// TLS listeners. A listen entry with tls is served by the engine over
// TLS (engine.ListenerOptions.TLS) with one tls.Config per listener, made
// when the listener opens and kept while it stays open: its
// GetCertificate reads the listener's certificates of the moment, which a
// reload swaps, so new handshakes get the new certificates while open
// connections carry on. Session tickets are crypto/tls's own: keys made
// at random when the listener opens, rotated every 24 hours and accepted
// for 7 days (per process: a worker resumes only the sessions it began).

// CipherSuites are the TLS 1.2 cipher suites a TLS listener offers:
// ECDHE key exchange (forward secrecy) with an AEAD cipher, as Mozilla's
// "intermediate" profile. TLS 1.3's suites (AES-128-GCM, AES-256-GCM,
// ChaCha20-Poly1305) are crypto/tls's and not configurable. TLS 1.0 and
// 1.1 are refused.
var CipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// listenState is how a listener serves, as the config of the moment
// says: a reload replaces it whole.
type listenState struct {
	certs    []*tls.Certificate // a TLS listener's, the default first
	hsts     string             // the Strict-Transport-Security value, or ""
	redirect bool               // answer with a redirect to HTTPS
	port     string             // the redirect's ":port", "" for 443

	acme       *acmeManager   // a TLS listener's with tls.acme
	challenges []http.Handler // a plain listener's: the HTTP-01 answers of the config's acme sections

	ocsp  *ocspStapler // staples OCSP responses to certs, or nil (ocsp_stapling: false)
	owner any          // what the certificates are kept for in ocsp: the config, or acme
}

// newTLSConfig returns the TLS config of listener l: it offers "h2"
// then "http/1.1" by ALPN if l serves HTTP/2, else "http/1.1" alone,
// and then "acme-tls/1", which only an ACME validator asks for
// (TLS-ALPN-01, RFC 8737), answered if the listener has tls.acme.
func newTLSConfig(l *listener) *tls.Config {
	protos := []string{"http/1.1", acme.ALPNProto}
	if l.h2 {
		protos = []string{"h2", "http/1.1", acme.ALPNProto}
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		CipherSuites: CipherSuites,
		NextProtos:   protos,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			st := l.state.Load()
			if c, ok, err := getACMECertificate(st, hello); ok {
				if err != nil || st.ocsp == nil || wantsTokenCert(hello) {
					return c, err
				}
				return st.ocsp.stapleLatest(c, st.owner), nil // a renewal replaces the certificate
			}
			c := st.certs[0] // no name matches, or no SNI: the default
			for _, sc := range st.certs {
				if hello.SupportsCertificate(sc) == nil {
					c = sc
					break
				}
			}
			if st.ocsp != nil {
				return st.ocsp.staple(c, st.owner), nil
			}
			return c, nil
		},
	}
}

// setState makes l serve as o says (nil: plain HTTP with no options).
// The redirect's port is that of o, or else the bound port of the first
// TLS listener of cfg among s's listeners.
func (s *Server) setState(l *listener, o *config.ListenOptions, cfg *config.Config) {
	st := &listenState{}
	if o == nil || o.TLS == nil {
		st.challenges = s.acmeHTTP(cfg)
	}
	if o != nil {
		if o.TLS != nil && o.TLS.ACME != nil {
			st.acme = s.acmeManager(o.TLS.ACME)
		}
		if o.TLS != nil {
			for i := range o.TLS.Certificates {
				st.certs = append(st.certs, &o.TLS.Certificates[i].Pair)
			}
			if !o.TLS.NoOCSPStapling {
				st.ocsp, st.owner = s.ocsp, cfg
				if st.acme != nil {
					st.owner = st.acme
				}
				for _, c := range st.certs {
					s.ocsp.staple(c, cfg) // fetched now, not at the first handshake
				}
			}
		}
		if o.HSTS != nil {
			st.hsts = o.HSTS.Value()
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
	if answerACMEChallenge(w, r, st.challenges) {
		return
	}
	if st.redirect {
		redirectToHTTPS(w, r, st.port)
		return
	}
	if st.hsts != "" {
		w.Header().Set("Strict-Transport-Security", st.hsts)
	}
	h.next.Serve(w, r)
}

// redirectToHTTPS answers 308 Permanent Redirect to the request's URL
// over HTTPS, on port (":8443", or "" for 443). 308 rather than 301: a
// client must repeat the request as it was, method and body included
// (RFC 9110 §15.4.9), where after a 301 it may turn a POST into a GET.
func redirectToHTTPS(w engine.ResponseWriter, r *engine.Request, port string) {
	host := string(r.Host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" || !validRedirectHost(host) {
		engine.Error(w, 400, "no host to redirect to: send a Host field")
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
