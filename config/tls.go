package config

import (
	"crypto/tls"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ListenOptions are the options of a listen entry written as a map: how
// the connections of its address are served beyond plain HTTP/1.1.
type ListenOptions struct {
	// TLS, if set, serves HTTPS: HTTP/1.1 over TLS with its certificates.
	TLS *TLS

	// HSTS, if set, adds a Strict-Transport-Security field to the
	// responses of a TLS listener.
	HSTS *HSTS

	// RedirectToHTTPS, if set, makes a plain listener answer every
	// request with a redirect to the same URL over HTTPS.
	RedirectToHTTPS *HTTPSRedirect

	// NoHTTP2 (http2: false) makes a TLS listener offer only HTTP/1.1
	// by ALPN; by default it offers "h2" first, then "http/1.1".
	NoHTTP2 bool

	// H2C (h2c: true) makes a plain listener serve HTTP/2 to clients
	// with prior knowledge beside HTTP/1.1 (engine.ListenerOptions.H2C).
	H2C bool

	// HTTP3, if set (http3: true, or a map of HTTP3Keys), makes a TLS
	// listener serve HTTP/3 over QUIC on the UDP port of its address as
	// well, and announce it with Alt-Svc on its HTTP/1.1 and HTTP/2
	// responses.
	HTTP3 *HTTP3
}

// HTTP3 is the http3 option of a TLS listener: HTTP/3 (RFC 9114) over
// QUIC on the UDP port of the listener's address, with the listener's
// certificates, routes and limits.
type HTTP3 struct {
	// EarlyData (early_data: true) accepts TLS 1.3 early data (0-RTT) on
	// resumed connections, for requests with safe methods (GET, HEAD,
	// OPTIONS, TRACE); any other method arriving before the handshake
	// completes is answered 425 Too Early (RFC 8470). Off by default:
	// early data can be replayed.
	EarlyData bool
}

// TLS is the tls section of a listen entry: the certificates a TLS
// listener presents. They are read, and checked against their keys, when
// the config is loaded (and so again by every reload).
type TLS struct {
	// Certificates are the certificates to choose from, in the order
	// written: a client is given the first whose names match the server
	// name it asks for (SNI), and one that asks for none, or for a name
	// none matches, the first.
	Certificates []Certificate

	// ACME, if set, obtains the listener's certificates from an ACME
	// authority instead (tls: {acme: ...}); Certificates is then empty.
	ACME *ACME

	// NoOCSPStapling (ocsp_stapling: false) serves the certificates
	// without OCSP responses stapled. By default a certificate that
	// names an OCSP responder and comes with its issuer (its file holds
	// the chain) is served with the responder's answer of the moment.
	NoOCSPStapling bool
}

// Certificate is one certificate of a TLS listener: the files it was
// read from, and their contents.
type Certificate struct {
	CertFile, KeyFile string          // as resolved against the config file's directory
	Pair              tls.Certificate // with its Leaf parsed
}

// HSTS is the Strict-Transport-Security field a TLS listener adds to its
// responses (RFC 6797).
type HSTS struct {
	MaxAge            time.Duration // how long a browser keeps to HTTPS; whole seconds are sent
	IncludeSubdomains bool
	Preload           bool
}

// Value returns the field's value: "max-age=31536000; includeSubDomains".
func (h *HSTS) Value() string {
	v := "max-age=" + strconv.FormatInt(int64(h.MaxAge/time.Second), 10)
	if h.IncludeSubdomains {
		v += "; includeSubDomains"
	}
	if h.Preload {
		v += "; preload"
	}
	return v
}

// HTTPSRedirect is a plain listener's redirect_to_https: every request is
// answered 308 Permanent Redirect to https://HOST[:Port]PATH?QUERY, if
// the config serves HOST (a name of its certificates, acme domains or
// routes' hosts; any host if it names none), else 421.
type HTTPSRedirect struct {
	// Port is the port HTTPS is served on; 0 means that of the config's
	// first TLS listener (HTTPSListener), as it is bound. Port 443 is left
	// out of the URL.
	Port int
}

// HTTPSListener returns the first address of Listen served over TLS, or
// nil.
func (c *Config) HTTPSListener() *Address {
	for i, a := range c.Listen {
		if o := c.ListenOptions[a]; o != nil && o.TLS != nil {
			return &c.Listen[i]
		}
	}
	return nil
}

// explain describes o for Explain: " (TLS, 2 certificates, HSTS
// max-age=…)", " (redirect to HTTPS)", or "" for nil.
func (o *ListenOptions) explain() string {
	var parts []string
	switch {
	case o == nil:
		return ""
	case o.TLS != nil && o.TLS.ACME != nil:
		parts = append(parts, "TLS, "+o.TLS.ACME.String())
	case o.TLS != nil && len(o.TLS.Certificates) == 1:
		parts = append(parts, "TLS")
	case o.TLS != nil:
		parts = append(parts, fmt.Sprintf("TLS, %d certificates", len(o.TLS.Certificates)))
	case o.RedirectToHTTPS != nil:
		parts = append(parts, "redirect to HTTPS")
	}
	switch {
	case o.TLS != nil && !o.NoHTTP2:
		parts = append(parts, "HTTP/2")
	case o.H2C:
		parts = append(parts, "h2c")
	}
	if o.HTTP3 != nil {
		parts = append(parts, "HTTP/3")
		if o.HTTP3.EarlyData {
			parts = append(parts, "0-RTT")
		}
	}
	if o.TLS != nil && o.TLS.NoOCSPStapling {
		parts = append(parts, "no OCSP stapling")
	}
	if o.HSTS != nil {
		parts = append(parts, "HSTS "+o.HSTS.Value())
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// ListenKeys are the keys of a listen entry written as a map; TLSKeys
// those of its tls section (a certificate in certificates has cert and
// key); HSTSKeys those of its hsts section; HTTP3Keys those of its http3
// section written as a map.
var (
	ListenKeys = []string{"address", "tls", "hsts", "redirect_to_https", "http2", "h2c", "http3"}
	HTTP3Keys  = []string{"early_data"}
	TLSKeys    = []string{"cert", "key", "certificates", "acme", "ocsp_stapling"}
	HSTSKeys   = []string{"max_age", "include_subdomains", "preload"}
)

// listenEntry reads a listen entry written as a map. It returns the
// address's node (nil if the entry has none), the options, and the
// node of redirect_to_https if it is true (to be checked once every
// entry is read).
func (p *parser) listenEntry(e *yaml.Node) (addr *yaml.Node, opts *ListenOptions, redirectNode *yaml.Node) {
	errs := len(p.errs)
	pairs, ok := p.mapping(e, "listen key", ListenKeys)
	if !ok {
		return nil, nil, nil
	}
	opts = &ListenOptions{}
	var hstsKey, redirectKey, http2Key, h2cKey, http3Key *yaml.Node
	for _, kv := range pairs {
		switch kv.key.Value {
		case "address":
			addr = kv.val
		case "tls":
			opts.TLS = p.tls(kv.key, kv.val)
		case "hsts":
			hstsKey = kv.key
			opts.HSTS = p.hsts(kv.val)
		case "redirect_to_https":
			redirectKey = kv.key
			opts.RedirectToHTTPS, redirectNode = p.redirectToHTTPS(kv.val)
		case "http2":
			http2Key = kv.key
			opts.NoHTTP2 = !p.boolean(kv.val, "http2")
		case "h2c":
			h2cKey = kv.key
			opts.H2C = p.boolean(kv.val, "h2c")
		case "http3":
			http3Key = kv.key
			opts.HTTP3 = p.http3(kv.val)
		}
	}
	if addr == nil {
		if len(p.errs) > errs {
			return nil, nil, nil // a misspelt address, most likely: reported
		}
		p.errorf(e, "listen: an entry written as a map needs an address, e.g. {address: \":8443\", tls: {cert: site.crt, key: site.key}}")
		return nil, nil, nil
	}
	hasTLS := false
	for _, kv := range pairs {
		hasTLS = hasTLS || kv.key.Value == "tls"
	}
	if hstsKey != nil && !hasTLS {
		p.errorf(hstsKey, "hsts: only a TLS listener sends Strict-Transport-Security (browsers ignore it over plain HTTP): add tls to this entry")
	}
	if http2Key != nil && !hasTLS {
		p.errorf(http2Key, "http2: HTTP/2 is chosen by ALPN on a TLS listener; for HTTP/2 over plain TCP write h2c: true")
	}
	if h2cKey != nil && hasTLS {
		p.errorf(h2cKey, "h2c: this listener serves TLS, where HTTP/2 is offered by ALPN (http2: true, the default)")
	}
	if opts.H2C && opts.RedirectToHTTPS != nil {
		p.errorf(h2cKey, "h2c: a listener that redirects to HTTPS serves no HTTP/2")
	}
	switch {
	case opts.HTTP3 != nil && !hasTLS:
		p.errorf(http3Key, "http3: HTTP/3 runs over QUIC, which is always encrypted: add tls to this entry (HTTP/3 then shares its certificates and port)")
	case opts.HTTP3 != nil && strings.HasPrefix(deref(addr).Value, "unix:"):
		p.errorf(http3Key, "http3: HTTP/3 runs over UDP, which a Unix socket does not carry: serve it on a host:port listener")
	}
	if redirectKey != nil && hasTLS {
		p.errorf(redirectKey, "redirect_to_https: this listener serves TLS already; the option belongs on a plain HTTP listener")
	}
	return addr, opts, redirectNode
}

// http3 reads an http3 option: true, false, or a map of HTTP3Keys. It
// returns nil for false.
func (p *parser) http3(n *yaml.Node) *HTTP3 {
	if deref(n).Kind == yaml.ScalarNode {
		if !p.boolean(n, "http3") {
			return nil
		}
		return &HTTP3{}
	}
	pairs, ok := p.mapping(n, "http3 key", HTTP3Keys)
	if !ok {
		return nil
	}
	h := &HTTP3{}
	for _, kv := range pairs {
		switch kv.key.Value {
		case "early_data":
			h.EarlyData = p.boolean(kv.val, "http3.early_data")
		}
	}
	return h
}

// tls reads a tls section: cert and key, certificates (a list of
// {cert, key} maps), or acme.
func (p *parser) tls(key, n *yaml.Node) *TLS {
	pairs, ok := p.mapping(n, "tls key", TLSKeys)
	if !ok {
		return nil
	}
	var cert, keyFile, list *yaml.Node
	var acme pair
	noStapling := false
	for _, kv := range pairs {
		switch kv.key.Value {
		case "ocsp_stapling":
			noStapling = !p.boolean(kv.val, "tls.ocsp_stapling")
		case "acme":
			acme = kv
		case "cert":
			cert = kv.val
		case "key":
			keyFile = kv.val
		case "certificates":
			list = kv.val
		}
	}
	if acme.key != nil {
		if cert != nil || keyFile != nil || list != nil {
			p.errorf(acme.key, "tls: give acme, or certificates from files (cert and key, or certificates), not both")
		}
		if a := p.acme(acme.key, acme.val); a != nil {
			return &TLS{ACME: a, NoOCSPStapling: noStapling}
		}
		return nil
	}
	t := &TLS{NoOCSPStapling: noStapling}
	switch {
	case list != nil && (cert != nil || keyFile != nil):
		p.errorf(key, "tls: give cert and key, or certificates (a list of {cert, key}), not both")
	case list != nil:
		l := deref(list)
		if l.Kind != yaml.SequenceNode || len(l.Content) == 0 {
			p.errorf(list, "tls.certificates: want a list of {cert: FILE, key: FILE} maps, got %s", describe(l))
			break
		}
		for _, e := range l.Content {
			pairs, ok := p.mapping(e, "tls.certificates key", []string{"cert", "key"})
			if !ok {
				continue
			}
			var c, k *yaml.Node
			for _, kv := range pairs {
				if kv.key.Value == "cert" {
					c = kv.val
				} else {
					k = kv.val
				}
			}
			if c == nil || k == nil {
				p.errorf(e, "tls.certificates: each entry needs a cert and a key")
				continue
			}
			if cf, ok := p.certificate(c, k); ok {
				t.Certificates = append(t.Certificates, cf)
			}
		}
	case cert == nil || keyFile == nil:
		p.errorf(key, "tls: want a cert and a key (PEM files), e.g. tls: {cert: site.crt, key: site.key}")
	default:
		if cf, ok := p.certificate(cert, keyFile); ok {
			t.Certificates = append(t.Certificates, cf)
		}
	}
	return t
}

// certificate reads the certificate and key files named at certNode and
// keyNode and checks that they belong together, reporting errors at
// their positions; a certificate out of its validity period is a
// warning.
func (p *parser) certificate(certNode, keyNode *yaml.Node) (Certificate, bool) {
	certName, ok1 := p.scalar(certNode, "tls.cert", "a certificate file (PEM)")
	keyName, ok2 := p.scalar(keyNode, "tls.key", "a private key file (PEM)")
	if !ok1 || !ok2 {
		return Certificate{}, false
	}
	certName, keyName = p.path(certName), p.path(keyName)
	certPEM, err := os.ReadFile(certName)
	if err != nil {
		p.errorf(certNode, "tls.cert: %s", withFix(err))
	}
	keyPEM, kerr := os.ReadFile(keyName)
	if kerr != nil {
		p.errorf(keyNode, "tls.key: %s", withFix(kerr))
	}
	if err != nil || kerr != nil {
		return Certificate{}, false
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		msg := err.Error()
		switch {
		case strings.Contains(msg, "does not match"):
			p.errorf(keyNode, "tls.key: the key in %s does not match the certificate in %s: name the key the certificate was made with", keyName, certName)
		case strings.Contains(msg, "PEM inputs may have been switched"):
			p.errorf(certNode, "tls.cert: %s holds a private key, not a certificate: name the certificate's file (are cert and key the wrong way round?)", certName)
		case strings.Contains(msg, "rather than a key"):
			p.errorf(keyNode, "tls.key: %s holds a certificate, not a private key: name the key's file (are cert and key the wrong way round?)", keyName)
		case strings.Contains(msg, "certificate input"):
			p.errorf(certNode, "tls.cert: %s holds no PEM certificate (-----BEGIN CERTIFICATE-----): give the certificate chain in PEM "+
				"(a DER file converts with openssl x509 -inform der -in FILE -out FILE.pem)", certName)
		case strings.Contains(msg, "key input"):
			p.errorf(keyNode, "tls.key: %s holds no PEM private key (-----BEGIN PRIVATE KEY-----, or RSA or EC PRIVATE KEY): give the certificate's private key in PEM", keyName)
		default:
			p.errorf(keyNode, "tls.key: %s: %s", keyName, strings.TrimPrefix(msg, "tls: "))
		}
		return Certificate{}, false
	}
	now := time.Now()
	switch leaf := pair.Leaf; {
	case leaf == nil:
	case now.After(leaf.NotAfter):
		p.warn(certNode, "", fmt.Sprintf("tls.cert: the certificate in %s expired at %s: clients will refuse it", certName, leaf.NotAfter.UTC().Format(time.RFC3339)))
	case now.Before(leaf.NotBefore):
		p.warn(certNode, "", fmt.Sprintf("tls.cert: the certificate in %s is not valid before %s: clients will refuse it until then", certName, leaf.NotBefore.UTC().Format(time.RFC3339)))
	}
	return Certificate{CertFile: certName, KeyFile: keyName, Pair: pair}, true
}

// hsts reads an hsts section: a max-age duration, or a map of HSTSKeys.
func (p *parser) hsts(n *yaml.Node) *HSTS {
	h := &HSTS{}
	maxAge := func(v *yaml.Node) bool {
		s, ok := p.scalar(v, "hsts.max_age", "a duration")
		if !ok {
			return false
		}
		d, err := ParseDuration(s)
		if err != nil || d < 0 {
			p.errorf(v, `hsts.max_age: want how long browsers keep to HTTPS, a duration such as "8760h" (a year), got %q`, s)
			return false
		}
		h.MaxAge = d
		return true
	}
	if deref(n).Kind == yaml.ScalarNode {
		if !maxAge(n) {
			return nil
		}
		return h
	}
	pairs, ok := p.mapping(n, "hsts key", HSTSKeys)
	if !ok {
		return nil
	}
	set := false
	for _, kv := range pairs {
		switch kv.key.Value {
		case "max_age":
			set = maxAge(kv.val)
		case "include_subdomains":
			h.IncludeSubdomains = p.boolean(kv.val, "hsts.include_subdomains")
		case "preload":
			h.Preload = p.boolean(kv.val, "hsts.preload")
		}
	}
	if !set {
		p.errorf(n, `hsts: want a max_age, e.g. hsts: {max_age: 8760h, include_subdomains: true}`)
		return nil
	}
	return h
}

// redirectToHTTPS reads redirect_to_https: true, false or a port. It
// returns the node when the value is true, to be checked against the
// config's TLS listeners.
func (p *parser) redirectToHTTPS(n *yaml.Node) (*HTTPSRedirect, *yaml.Node) {
	s, ok := p.scalar(n, "redirect_to_https", "true or a port")
	if !ok {
		return nil, nil
	}
	switch s {
	case "true", "True", "TRUE":
		return &HTTPSRedirect{}, n
	case "false", "False", "FALSE":
		return nil, nil
	}
	port, err := strconv.Atoi(s)
	if err != nil || port < 1 || port > 65535 {
		p.errorf(n, "redirect_to_https: want true (to the port of the config's TLS listener) or the port HTTPS is served on, from 1 to 65535, got %q", s)
		return nil, nil
	}
	return &HTTPSRedirect{Port: port}, nil
}

// boolean reads a true or false.
func (p *parser) boolean(n *yaml.Node, name string) bool {
	s, ok := p.scalar(n, name, "true or false")
	if !ok {
		return false
	}
	switch s {
	case "true", "True", "TRUE":
		return true
	case "false", "False", "FALSE":
		return false
	}
	p.errorf(n, "%s: want true or false, got %q", name, s)
	return false
}
