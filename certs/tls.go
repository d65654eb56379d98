package certs

import (
	"crypto/tls"
	"errors"
	"sync/atomic"

	"golang.org/x/crypto/acme"
)

// CipherSuites are the TLS 1.2 cipher suites a TLS endpoint offers:
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

// An Endpoint is one TLS endpoint's certificates of the moment: a Set,
// which Store swaps whole when a reload brings new certificates. Its
// TLSConfig is made once, when the endpoint opens, and kept while it
// stays open; its GetCertificate reads the Set of the moment, so new
// handshakes get the new certificates while open connections carry on.
//
// An Endpoint is safe for concurrent use: Store may run while
// handshakes call GetCertificate. The zero value has no Set: its
// handshakes fail until the first Store. An Endpoint must not be copied
// after first use.
type Endpoint struct {
	set atomic.Pointer[Set]
}

// Store makes s the endpoint's certificates for the handshakes that
// follow.
func (e *Endpoint) Store(s *Set) { e.set.Store(s) }

var errNoSet = errors.New("certs: no certificates stored for this endpoint")

// GetCertificate is tls.Config.GetCertificate for the endpoint: the
// certificate of its Set of the moment for hello (see Set.GetCertificate).
func (e *Endpoint) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	s := e.set.Load()
	if s == nil {
		return nil, errNoSet
	}
	return s.GetCertificate(hello)
}

// TLSConfig returns a new TLS config for the endpoint, for any
// transport (a TCP listener, QUIC): TLS 1.2 or 1.3, the suites of
// CipherSuites, the application protocols protos offered by ALPN in
// their order ("h2", "http/1.1"), then "acme-tls/1", which only an ACME
// validator asks for (TLS-ALPN-01, RFC 8737) and is answered if the
// endpoint's Set has an acme section; and the endpoint's GetCertificate.
// Session tickets are crypto/tls's own: keys made at random when the
// endpoint opens, rotated every 24 hours and accepted for 7
// days (per process: a worker resumes only the sessions it began).
func (e *Endpoint) TLSConfig(protos ...string) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		CipherSuites:   CipherSuites,
		NextProtos:     append(protos[:len(protos):len(protos)], acme.ALPNProto),
		GetCertificate: e.GetCertificate,
	}
}

// A Set is the certificates a TLS endpoint serves under one config,
// made by Manager.Set: those of the tls section, or those of its acme
// section, with their OCSP responses stapled unless ocsp_stapling is
// false. A Set is not changed once made, and is safe for concurrent use.
type Set struct {
	certs []*tls.Certificate // the tls section's, the default first

	acme *acmeManager // with tls.acme

	ocsp  *ocspStapler // staples OCSP responses to certs, or nil (ocsp_stapling: false)
	owner any          // what the certificates are kept for in ocsp: the config, or acme
}

// GetCertificate returns the certificate for hello, with the OCSP
// response of the moment stapled if there is one: the acme section's
// (the challenge certificate an ACME validator asks for, or the
// domain's, obtained at its first handshake if need be), else the first
// of the tls section's whose names match the server name asked for
// (SNI), the first of all if none does. A TLS-ALPN-01 validation (a
// client offering "acme-tls/1" alone) is refused without an acme
// section.
func (s *Set) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c, ok, err := s.getACMECertificate(hello); ok {
		if err != nil || s.ocsp == nil || wantsTokenCert(hello) {
			return c, err
		}
		return s.ocsp.stapleLatest(c, s.owner), nil // a renewal replaces the certificate
	}
	c := s.certs[0] // no name matches, or no SNI: the default
	for _, sc := range s.certs {
		if hello.SupportsCertificate(sc) == nil {
			c = sc
			break
		}
	}
	if s.ocsp != nil {
		return s.ocsp.staple(c, s.owner), nil
	}
	return c, nil
}
