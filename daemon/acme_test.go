package daemon

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"go/build"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/sluicetest"
)

// acmeDomain is the name the tests obtain certificates for; fakeDNS
// resolves it (and every name) to 127.0.0.1 for pebble.
const acmeDomain = "sluice.test"

// pebbleServer is a pebble (Let's Encrypt's test ACME server) the test
// started.
type pebbleServer struct {
	dir     string // its directory URL
	mgmt    string // its management API's URL
	ca      *sluicetest.CA
	caFile  string // the CA of its HTTPS certificate, PEM
	rootsOf func() *x509.CertPool
}

// freePort returns a loopback port free at the time of asking.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// fakeDNS answers every A query with 127.0.0.1 and every other query
// with no records, over TCP on loopback (pebble's -dnsserver asks over
// TCP), until the test ends.
func fakeDNS(t *testing.T) string {
	t.Helper()
	ln := loopbackListener(t)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(time.Minute))
				for {
					var size [2]byte
					if _, err := io.ReadFull(c, size[:]); err != nil {
						return
					}
					buf := make([]byte, int(size[0])<<8|int(size[1]))
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					out, err := answerDNS(buf)
					if err != nil {
						return
					}
					c.Write(append([]byte{byte(len(out) >> 8), byte(len(out))}, out...))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// answerDNS answers the query msg: 127.0.0.1 for A, nothing otherwise.
func answerDNS(msg []byte) ([]byte, error) {
	var m dnsmessage.Message
	if err := m.Unpack(msg); err != nil {
		return nil, err
	}
	if len(m.Questions) == 0 {
		return nil, io.ErrUnexpectedEOF
	}
	m.Header.Response, m.Header.Authoritative = true, true
	q := m.Questions[0]
	m.Questions = m.Questions[:1]
	m.Answers, m.Authorities, m.Additionals = nil, nil, nil
	if q.Type == dnsmessage.TypeA {
		m.Answers = []dnsmessage.Resource{{
			Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 1},
			Body:   &dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}},
		}}
	}
	return m.Pack()
}

// startPebble starts pebble, validating challenges on httpPort (HTTP-01)
// and tlsPort (TLS-ALPN-01) of 127.0.0.1, issuing certificates valid for
// validity. It is killed when the test ends.
func startPebble(t *testing.T, httpPort, tlsPort int, validity time.Duration) *pebbleServer {
	t.Helper()
	bin := filepath.Join(build.Default.GOPATH, "bin", "pebble")
	if _, err := os.Stat(bin); err != nil {
		bin = sluicetest.NeedTool(t, "pebble", "github.com/letsencrypt/pebble/v2/cmd/pebble (go install)")
	}
	dir := t.TempDir()
	p := &pebbleServer{ca: sluicetest.NewCA(t)}
	p.caFile = p.ca.WriteFiles(t, dir)
	certFile, keyFile := p.ca.IssueFiles(t, dir, "localhost")
	port, mgmtPort := freePort(t), freePort(t)
	p.dir = fmt.Sprintf("https://localhost:%d/dir", port)
	p.mgmt = fmt.Sprintf("https://localhost:%d", mgmtPort)
	cfg := fmt.Sprintf(`{"pebble": {
  "listenAddress": "127.0.0.1:%d", "managementListenAddress": "127.0.0.1:%d",
  "certificate": %q, "privateKey": %q,
  "httpPort": %d, "tlsPort": %d, "ocspResponderURL": "", "externalAccountBindingRequired": false,
  "retryAfter": {"authz": 1, "order": 1}, "keyAlgorithm": "ecdsa",
  "profiles": {"default": {"description": "short", "validityPeriod": %d}}}}`,
		port, mgmtPort, certFile, keyFile, httpPort, tlsPort, int(validity/time.Second))
	cfgFile := filepath.Join(dir, "pebble.json")
	writeFile(t, cfgFile, cfg)
	cmd := exec.Command(bin, "-config", cfgFile, "-dnsserver", fakeDNS(t))
	cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_VA_ALWAYS_VALID=0", "PEBBLE_WFE_NONCEREJECT=0", "PEBBLE_AUTHZREUSE=0")
	log := &sluicetest.Buffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("pebble's log:\n%s", log.String())
		}
	})
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.ca.Pool}}, Timeout: 10 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	sluicetest.WaitFor(t, "pebble to serve its directory", func() bool {
		resp, err := client.Get(p.dir)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	p.rootsOf = func() *x509.CertPool { // the root pebble issues under, from its management API
		resp, err := client.Get(p.mgmt + "/roots/0")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			t.Fatalf("pebble's /roots/0: no PEM certificate in %q", b)
		}
		return pool
	}
	return p
}

// acmeSite starts a Server with a plain listener (its YAML entry
// plainEntry, "%s" for its address) on plainLn and a TLS listener with
// tls.acme for acmeDomain from p on tlsLn; it returns it and the
// config's directory.
func acmeSite(t *testing.T, p *pebbleServer, plainEntry string, plainLn, tlsLn net.Listener) (*Server, *sluicetest.Buffer, string) {
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
`, fmt.Sprintf(plainEntry, plainLn.Addr()), tlsLn.Addr(), acmeDomain, p.dir, p.caFile))
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
	p := startPebble(t, portOfListener(plainLn), portOfListener(tlsLn), 12*time.Second)
	_, log, dir := acmeSite(t, p, "%s", plainLn, tlsLn)
	roots := p.rootsOf()

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
	keep := tlsDial(t, tlsLn.Addr(), client)
	kr := bufio.NewReader(keep)
	if _, body := ask(t, keep, kr, "/"); body != "hi" {
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
	if _, body := ask(t, keep, kr, "/"); body != "hi" {
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
	p := startPebble(t, portOfListener(plainLn), freePort(t), time.Hour)
	s, log, _ := acmeSite(t, p, "{address: \"%s\", redirect_to_https: true}", plainLn, tlsLn)
	client := &tls.Config{RootCAs: p.rootsOf(), ServerName: acmeDomain}
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
	c := tlsDial(t, tlsLn.Addr(), client)
	if got := c.ConnectionState().PeerCertificates[0].SerialNumber.String(); got != serial {
		t.Errorf("after a reload: certificate %s, want the same, %s", got, serial)
	}
	if n := strings.Count(log.String(), "certificate ready"); n != 1 {
		t.Errorf("%d \"certificate ready\" in the log, want 1: the reload asked again\n%s", n, log)
	}
	// Anything else under the challenge path is redirected as before.
	pc, br := dial(t, plainLn.Addr())
	fmt.Fprintf(pc, "GET /.well-known/acme-challenge/unknown HTTP/1.1\r\nHost: %s\r\n\r\n", acmeDomain)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 308 {
		t.Errorf("an unknown token: status %d, want the redirect, 308", resp.StatusCode)
	}
}
