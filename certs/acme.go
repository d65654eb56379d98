package certs

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"

	"github.com/sluice-server/sluice/config"
)

// Automatic certificates. A TLS endpoint with tls.acme takes its
// certificates from an autocert.Manager (golang.org/x/crypto's ACME
// client): one per distinct acme section (config.ACME.Key), made when a
// config first names it and kept by the Manager across reloads, so a
// reload neither repeats an issuance nor loses a renewal timer. The
// autocert manager answers the TLS-ALPN-01 challenge in the endpoint's
// GetCertificate ("acme-tls/1" is offered by ALPN) and the HTTP-01
// challenge on every plain endpoint (Challenges, under ChallengePath,
// answered before routes and before redirect_to_https). Certificates and the
// account key are kept in the section's data directory (autocert.DirCache:
// the directory 0700, files 0600), and renewed in the background a third
// of their lifetime before they expire.

// acmeManager is the autocert manager of one acme section.
type acmeManager struct {
	m    *autocert.Manager
	http http.Handler // HTTP-01 answers
	stop context.CancelFunc

	// files, if set, are the certificates another process obtains
	// (NewManager's cacheOnly): read from the data directory, never
	// ordered. m then serves only the challenges.
	files *cachedCerts
}

// newACMEManager makes the manager of a, its certificates and challenges
// kept in a's data directory through cache (nil: autocert.DirCache).
func newACMEManager(a *config.ACME, cache autocert.Cache) *acmeManager {
	client := &acme.Client{DirectoryURL: a.Directory, UserAgent: "sluice"}
	if a.CARoots != nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = &tls.Config{RootCAs: a.CARoots}
		client.HTTPClient = &http.Client{Transport: t}
	}
	if cache == nil {
		cache = autocert.DirCache(a.Data)
	}
	m := &autocert.Manager{
		Prompt:     autocert.AcceptTOS,
		Cache:      cache,
		HostPolicy: autocert.HostWhitelist(a.Domains...),
		Email:      a.Email,
		Client:     client,
	}
	return &acmeManager{m: m, http: m.HTTPHandler(nil), stop: func() {}}
}

// obtainAll asks for the certificates of a's domains in the background,
// until stop.
func (am *acmeManager) obtainAll(a *config.ACME, log *slog.Logger) {
	ctx, stop := context.WithCancel(context.Background())
	am.stop = stop
	for _, d := range a.Domains {
		go am.obtain(ctx, d, log.Info, log.Warn)
	}
}

// getCertificate is GetCertificate for the manager's endpoints: the
// challenge certificate an ACME validator asks for (TLS-ALPN-01), or
// the domain's certificate, obtained (at its first handshake if need be)
// or, with files, read from the data directory.
func (am *acmeManager) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if am.files != nil && !wantsTokenCert(hello) {
		return am.files.get(hello.ServerName)
	}
	return am.m.GetCertificate(hello) // a token certificate: from memory or the data directory
}

// obtain asks for the certificate of domain until it has one or ctx is
// done, so that the first client does not wait for the issuance: once
// at once, then after a wait that doubles up to an hour.
func (am *acmeManager) obtain(ctx context.Context, domain string, info, warn func(string, ...any)) {
	hello := &tls.ClientHelloInfo{ // as a client that supports ECDSA: the certificate most get
		ServerName:        domain,
		CipherSuites:      []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
		SignatureSchemes:  []tls.SignatureScheme{tls.ECDSAWithP256AndSHA256},
		SupportedCurves:   []tls.CurveID{tls.CurveP256},
		SupportedVersions: []uint16{tls.VersionTLS13, tls.VersionTLS12},
	}
	wait := 10 * time.Second
	for {
		cert, err := am.m.GetCertificate(hello) // bounded by autocert: 5 minutes
		if err == nil {
			info("certificate ready", "domain", domain, "expires", cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
			return
		}
		if ctx.Err() != nil {
			return
		}
		warn("cannot obtain a certificate; trying again", "domain", domain, "error", err, "in", wait.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Hour)
	}
}

// ChallengePath is the path under which HTTP-01 challenges are asked
// for (RFC 8555 §8.3): "/.well-known/acme-challenge/TOKEN".
const ChallengePath = "/.well-known/acme-challenge/"

// Challenges are the HTTP-01 answers of a config's acme sections, which
// its plain endpoints give before their routes and before
// redirect_to_https (Manager.Challenges). Safe for concurrent use.
type Challenges struct {
	hs []http.Handler // autocert's, one per acme section
}

// Answer returns the answer to a GET of path (under ChallengePath) with
// the Host field host (a port is ignored), and reports whether one of
// the sections knows the token: the key authorization, to be sent with
// status 200 as application/octet-stream.
func (c *Challenges) Answer(host, path string) ([]byte, bool) {
	req, err := http.NewRequest("GET", path, nil)
	if err != nil {
		return nil, false
	}
	req.Host = host
	if h, _, err := net.SplitHostPort(req.Host); err == nil {
		req.Host = h // the host policy compares names
	}
	for _, h := range c.hs {
		rec := &tokenRecorder{header: http.Header{}, code: http.StatusOK}
		h.ServeHTTP(rec, req)
		if rec.code == http.StatusOK {
			return rec.body, true
		}
	}
	return nil, false
}

// tokenRecorder is the http.ResponseWriter autocert's HTTP-01 handler
// answers into: a status and a short body (the key authorization).
type tokenRecorder struct {
	header http.Header
	code   int
	body   []byte
}

func (r *tokenRecorder) Header() http.Header  { return r.header }
func (r *tokenRecorder) WriteHeader(code int) { r.code = code }
func (r *tokenRecorder) Write(b []byte) (int, error) {
	r.body = append(r.body, b...)
	return len(b), nil
}

var errNoACME = errors.New("acme-tls/1 asked of a listener without tls.acme")

// getACMECertificate is GetCertificate for an endpoint serving s: from
// its acme section if it has one. A TLS-ALPN-01 validation (a client
// offering "acme-tls/1" alone) is refused by an endpoint without one.
func (s *Set) getACMECertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, bool, error) {
	if s.acme != nil {
		c, err := s.acme.getCertificate(hello)
		return c, true, err
	}
	if wantsTokenCert(hello) {
		return nil, true, errNoACME
	}
	return nil, false, nil
}

// wantsTokenCert reports whether hello is an ACME validator's asking for
// a TLS-ALPN-01 challenge certificate: "acme-tls/1" alone by ALPN.
func wantsTokenCert(hello *tls.ClientHelloInfo) bool {
	return slices.Equal(hello.SupportedProtos, []string{acme.ALPNProto})
}
