package daemon

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/sluicetest"
)

// acmeDomain is the name the tests obtain certificates for; pebble
// resolves it (and every name) to 127.0.0.1.
const acmeDomain = "sluice.test"

// acmeSite starts a Server with a plain listener (its YAML entry
// plainEntry, "%s" for its address) on plainLn and a TLS listener with
// tls.acme for acmeDomain from p on tlsLn; it returns it and the
// config's directory.
func acmeSite(t *testing.T, p *sluicetest.Pebble, plainEntry string, plainLn, tlsLn net.Listener) (*Server, *sluicetest.Buffer, string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	writeFile(t, file, fmt.Sprintf(`listen:
  - %s
  - address: %s
    tls:
      acme:
        email: admin@example.com
        domains: [%s]
        directory: %s
        data: acme
        ca_roots: %s
routes:
  - match: /
    pipeline:
      - text: hi
`, fmt.Sprintf(plainEntry, plainLn.Addr()), tlsLn.Addr(), acmeDomain, p.Directory, p.CAFile))
	s, log := newServer(t, fileLoad(file))
	s.Listen = func(a config.Address) (net.Listener, error) {
		for _, ln := range []net.Listener{plainLn, tlsLn} {
			if a.Addr == ln.Addr().String() {
				return ln, nil
			}
		}
		return nil, fmt.Errorf("no listener for %s", a)
	}
	start(t, s)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sluice's log:\n%s", log.String())
		}
	})
	return s, log, dir
}

func loopbackListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func portOfListener(ln net.Listener) int { return ln.Addr().(*net.TCPAddr).Port }

// A certificate is obtained from the ACME server by TLS-ALPN-01 at
// start, served (it chains to the authority's root), kept in the data
// directory with its key 0600, and renewed before it expires: new
// handshakes get the new one while a keep-alive connection made on the
// old one carries on.
func TestACMEObtainAndRenew(t *testing.T) {
	plainLn, tlsLn := loopbackListener(t), loopbackListener(t)
	p := sluicetest.StartPebble(t, portOfListener(plainLn), portOfListener(tlsLn), 12*time.Second)
	_, log, dir := acmeSite(t, p, "%s", plainLn, tlsLn)
	roots := p.Roots(t)

	client := &tls.Config{RootCAs: roots, ServerName: acmeDomain}
	var first *x509.Certificate
	sluicetest.WaitFor(t, "a certificate from pebble", func() bool {
		c, err := tls.Dial("tcp", tlsLn.Addr().String(), client)
		if err != nil {
			return false
		}
		first = c.ConnectionState().PeerCertificates[0]
		c.Close()
		return true
	})
	if first.DNSNames[0] != acmeDomain {
		t.Fatalf("certificate for %v, want %s", first.DNSNames, acmeDomain)
	}
	keep := sluicetest.DialTLS(t, tlsLn.Addr().String(), client)
	if _, body := keep.RoundTrip(t, getRoot); body != "hi" {
		t.Fatalf("body %q", body)
	}

	var files []string
	filepath.WalkDir(filepath.Join(dir, "acme"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, d.Name())
			if info, _ := d.Info(); info.Mode().Perm() != 0o600 {
				t.Errorf("%s: mode %v, want 0600", path, info.Mode().Perm())
			}
		}
		return nil
	})
	if len(files) < 2 || !strings.Contains(strings.Join(files, " "), acmeDomain) {
		t.Errorf("data directory holds %v, want the account key and the certificate of %s", files, acmeDomain)
	}

	sluicetest.WaitFor(t, "the certificate renewed", func() bool {
		c, err := tls.Dial("tcp", tlsLn.Addr().String(), client)
		if err != nil {
			return false
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.Cmp(first.SerialNumber) != 0
	})
	if _, body := keep.RoundTrip(t, getRoot); body != "hi" {
		t.Errorf("the keep-alive connection from before the renewal: body %q", body)
	}
	if !strings.Contains(log.String(), "certificate ready") {
		t.Errorf("log has no \"certificate ready\":\n%s", log)
	}
}

// With TLS-ALPN-01 out of reach (the authority validates on a port where
// nothing listens), the certificate is obtained by HTTP-01: the plain
// listener answers the challenge before its redirect to HTTPS.
func TestACMEHTTP01(t *testing.T) {
	plainLn, tlsLn := loopbackListener(t), loopbackListener(t)
	p := sluicetest.StartPebble(t, portOfListener(plainLn), sluicetest.FreePort(t), time.Hour)
	s, log, _ := acmeSite(t, p, "{address: \"%s\", redirect_to_https: true}", plainLn, tlsLn)
	client := &tls.Config{RootCAs: p.Roots(t), ServerName: acmeDomain}
	var serial string
	sluicetest.WaitFor(t, "a certificate from pebble", func() bool {
		c, err := tls.Dial("tcp", tlsLn.Addr().String(), client)
		if err != nil {
			return false
		}
		serial = c.ConnectionState().PeerCertificates[0].SerialNumber.String()
		c.Close()
		return true
	})
	sluicetest.WaitFor(t, "certificate ready logged", func() bool { return strings.Contains(log.String(), "certificate ready") })

	// A reload keeps the manager: no second issuance, the same certificate.
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := sluicetest.Handshake(t, tlsLn.Addr().String(), client).PeerCertificates[0].SerialNumber.String(); got != serial {
		t.Errorf("after a reload: certificate %s, want the same, %s", got, serial)
	}
	if n := strings.Count(log.String(), "certificate ready"); n != 1 {
		t.Errorf("%d \"certificate ready\" in the log, want 1: the reload asked again\n%s", n, log)
	}
	// Anything else under the challenge path is redirected as before.
	resp, _ := dial(t, plainLn.Addr()).RoundTrip(t, "GET /.well-known/acme-challenge/unknown HTTP/1.1\r\nHost: "+acmeDomain+"\r\n\r\n")
	if resp.StatusCode != 308 {
		t.Errorf("an unknown token: status %d, want the redirect, 308", resp.StatusCode)
	}
}
