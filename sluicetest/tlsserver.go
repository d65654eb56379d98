package sluicetest

import (
	"crypto/tls"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
)

// CertificateFrom has a TLS server present a certificate issued by ca,
// for a test that uses the CA elsewhere too (a proxy trusting it, say),
// instead of one from a CA of its own. NewServer ignores it.
func CertificateFrom(ca *CA) Option {
	return func(o *options) { o.ca = ca }
}

// Certificate has a TLS server present cert (an expired one, say, or one
// for other names) instead of one issued for it. Its CA is still the one
// a client is made to trust: its own, or CertificateFrom's. NewServer
// ignores it.
func Certificate(cert tls.Certificate) Option {
	return func(o *options) { o.cert = &cert }
}

// ConfigureTLS calls f with a TLS server's config before it serves, to
// set its fields (MinVersion, GetCertificate, ...); Certificates and
// NextProtos are already set. Several ConfigureTLS options run in order.
// NewServer ignores it.
func ConfigureTLS(f func(*tls.Config)) Option {
	return func(o *options) { o.configureTLS = append(o.configureTLS, f) }
}

// NewTLSServer is NewServer serving over TLS, as engine.ServeWith does
// with ListenerOptions.TLS: the server presents a certificate for its
// listener's IP address and "localhost" (the name it is checked against
// over a Unix socket) issued by a fresh CA, or by CertificateFrom's, and
// offers "http/1.1" by ALPN, and "h2" before it with the HTTP2 option.
// Its URL starts "https://"; Client, ClientConfig and Dial trust the CA.
func NewTLSServer(t testing.TB, h engine.Handler, opts ...Option) *Server {
	t.Helper()
	return newServer(t, h, true, opts)
}

// StartTLS is NewTLSServer for code without a testing.TB, such as an
// Example: it returns the error if it cannot listen or make the
// certificate, and the caller must Close the server.
func StartTLS(h engine.Handler, opts ...Option) (*Server, error) {
	return start(h, true, opts)
}

// setupTLS sets s.CA, s.TLS and s.serverName for a server listening on
// addr, as o says.
func (s *Server) setupTLS(addr net.Addr, o *options) error {
	s.serverName = "localhost"
	if a, ok := addr.(*net.TCPAddr); ok {
		s.serverName = a.IP.String()
	}
	s.CA = o.ca
	if s.CA == nil {
		ca, err := newCA()
		if err != nil {
			return err
		}
		s.CA = ca
	}
	var cert tls.Certificate
	if o.cert != nil {
		cert = *o.cert
	} else {
		c, err := s.CA.issue(time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour),
			[]string{s.serverName, "localhost"})
		if err != nil {
			return err
		}
		cert = c
	}
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
	if o.h2 {
		s.TLS.NextProtos = []string{"h2", "http/1.1"}
	}
	for _, f := range o.configureTLS {
		f(s.TLS)
	}
	return nil
}

// ClientConfig returns a new TLS client config that trusts the server's
// CA and checks its certificate against the name it was issued for (the
// listener's IP address, or "localhost"); it offers no ALPN protocol,
// so a connection made with it speaks HTTP/1.1. The caller may modify
// it. It returns nil for a server without TLS.
func (s *Server) ClientConfig() *tls.Config {
	if s.CA == nil {
		return nil
	}
	return s.CA.ClientConfig(s.serverName)
}

// Client returns an HTTP client for the server, configured as the
// package's Client is (no redirects followed, no compression asked for,
// a minute's timeout). For a TLS server it is the server's own client,
// trusting its CA and, with the HTTP2 option, speaking HTTP/2; Close
// closes its idle connections. For a server without TLS it is Client
// itself, which speaks HTTP/1.1 even to an HTTP2 server. It is safe for
// concurrent use.
func (s *Server) Client() *http.Client {
	if s.TLS == nil {
		return Client
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		s.client = &http.Client{
			CheckRedirect: Client.CheckRedirect,
			Timeout:       Client.Timeout,
			Transport: &http.Transport{
				DisableCompression: true,
				TLSClientConfig:    s.ClientConfig(),
				ForceAttemptHTTP2:  s.h2,
			},
		}
	}
	return s.client
}
