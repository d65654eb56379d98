package certs

import (
	"crypto/tls"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// twoCertsConfig is a config whose TLS listener has the certificates of
// the names, the first the default.
func twoCertsConfig(names ...string) string {
	s := "listen:\n  - address: 127.0.0.1:8443\n    tls:\n      certificates:\n"
	for _, n := range names {
		s += "        - {cert: " + n + ".crt, key: " + n + ".key}\n"
	}
	return s + "routes:\n  - match: /\n    pipeline:\n      - text: hi\n"
}

// An Endpoint's TLSConfig serves the certificate of its Set chosen by
// the name the client asks for (SNI), the first when it asks for none or
// for no name listed; TLS 1.2 with CipherSuites or 1.3; ALPN as given;
// TLS 1.1, CBC suites and a TLS-ALPN-01 validation (no acme section)
// refused. A Set stored later serves the handshakes that follow.
func TestEndpoint(t *testing.T) {
	dir := t.TempDir()
	ca := sluicetest.NewCA(t)
	ca.IssueFiles(t, dir, "a.example")
	ca.IssueFiles(t, dir, "b.example")
	file := filepath.Join(dir, "site.yaml")
	writeFile(t, file, twoCertsConfig("a.example", "b.example"))
	ts := serveConfig(t, file, false, nil)
	addr := ts.eps[0].addr

	served := func(cfg *tls.Config) (string, tls.ConnectionState) {
		t.Helper()
		st := sluicetest.Handshake(t, addr, cfg)
		return st.PeerCertificates[0].DNSNames[0], st
	}
	for _, name := range []string{"a.example", "b.example"} {
		if got, _ := served(ca.ClientConfig(name)); got != name {
			t.Errorf("SNI %s: got the certificate of %s", name, got)
		}
	}
	if got, _ := served(&tls.Config{InsecureSkipVerify: true}); got != "a.example" {
		t.Errorf("no SNI: got the certificate of %s, want the first, a.example", got)
	}
	if got, _ := served(&tls.Config{InsecureSkipVerify: true, ServerName: "c.example"}); got != "a.example" {
		t.Errorf("SNI c.example, not listed: got the certificate of %s, want the first, a.example", got)
	}
	cfg := ca.ClientConfig("a.example")
	cfg.MaxVersion = tls.VersionTLS12
	if _, st := served(cfg); st.Version != tls.VersionTLS12 || !slices.Contains(CipherSuites, st.CipherSuite) {
		t.Errorf("TLS 1.2: version %x, suite %s", st.Version, tls.CipherSuiteName(st.CipherSuite))
	}
	cfg = ca.ClientConfig("a.example")
	cfg.NextProtos = []string{"h2", "http/1.1"}
	if _, st := served(cfg); st.Version != tls.VersionTLS13 || st.NegotiatedProtocol != "http/1.1" {
		t.Errorf("TLS 1.3, ALPN h2, http/1.1 to an endpoint offering http/1.1: version %x, ALPN %q", st.Version, st.NegotiatedProtocol)
	}
	for what, cfg := range map[string]*tls.Config{
		"TLS 1.1":    {MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11, InsecureSkipVerify: true},
		"CBC suite":  {MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}, InsecureSkipVerify: true},
		"acme-tls/1": {NextProtos: []string{"acme-tls/1"}, InsecureSkipVerify: true, ServerName: "a.example"},
	} {
		if c, err := tls.Dial("tcp", addr, cfg); err == nil {
			c.Close()
			t.Errorf("%s: the handshake succeeded; want it refused", what)
		}
	}

	writeFile(t, file, twoCertsConfig("b.example"))
	ts.reload(t)
	if got, _ := served(&tls.Config{InsecureSkipVerify: true, ServerName: "a.example"}); got != "b.example" {
		t.Errorf("after a Set with b.example alone: got the certificate of %s", got)
	}

	var empty Endpoint
	if _, err := empty.GetCertificate(&tls.ClientHelloInfo{ServerName: "a.example"}); err == nil {
		t.Errorf("an Endpoint with no Set gave a certificate")
	}
}
