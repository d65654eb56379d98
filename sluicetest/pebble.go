package sluicetest

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"go/build"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/sluice-server/sluice/sluicetest/freeport"
)

// A Pebble is Let's Encrypt's test ACME server, pebble, started by a
// test (StartPebble) on loopback: it issues certificates for any name,
// resolving every name to 127.0.0.1 to validate its challenges there.
type Pebble struct {
	// Directory is its ACME directory's URL, and CAFile a PEM file of the
	// CA its HTTPS certificate chains to (tls.acme.ca_roots).
	Directory string
	CAFile    string

	mgmt   string // its management API's URL
	client *http.Client
	log    Buffer
}

// StartPebble starts pebble, validating challenges on httpPort
// (HTTP-01) and tlsPort (TLS-ALPN-01) of 127.0.0.1, issuing certificates
// valid for validity, and kills it when the test ends. The test is
// skipped if pebble is not installed (go install
// github.com/letsencrypt/pebble/v2/cmd/pebble; .ci/run does), or fails
// under CI (see NeedTool).
func StartPebble(t testing.TB, httpPort, tlsPort int, validity time.Duration) *Pebble {
	t.Helper()
	bin := filepath.Join(build.Default.GOPATH, "bin", "pebble")
	if _, err := os.Stat(bin); err != nil {
		bin = NeedTool(t, "pebble", "github.com/letsencrypt/pebble/v2/cmd/pebble (go install)")
	}
	dir := t.TempDir()
	p := &Pebble{}
	ca := NewCA(t)
	p.CAFile = ca.WriteFiles(t, dir)
	certFile, keyFile := ca.IssueFiles(t, dir, "localhost")
	port, mgmtPort := FreePort(t), FreePort(t)
	p.Directory = fmt.Sprintf("https://localhost:%d/dir", port)
	p.mgmt = fmt.Sprintf("https://localhost:%d", mgmtPort)
	cfg := fmt.Sprintf(`{"pebble": {
  "listenAddress": "127.0.0.1:%d", "managementListenAddress": "127.0.0.1:%d",
  "certificate": %q, "privateKey": %q,
  "httpPort": %d, "tlsPort": %d, "ocspResponderURL": "", "externalAccountBindingRequired": false,
  "retryAfter": {"authz": 1, "order": 1}, "keyAlgorithm": "ecdsa",
  "profiles": {"default": {"description": "short", "validityPeriod": %d}}}}`,
		port, mgmtPort, certFile, keyFile, httpPort, tlsPort, int(validity/time.Second))
	cfgFile := filepath.Join(dir, "pebble.json")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-config", cfgFile, "-dnsserver", fakeDNS(t))
	cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_VA_ALWAYS_VALID=0", "PEBBLE_WFE_NONCEREJECT=0", "PEBBLE_AUTHZREUSE=0")
	cmd.Stdout, cmd.Stderr = &p.log, &p.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("pebble's log:\n%s", p.log.String())
		}
	})
	p.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}}, Timeout: 10 * time.Second}
	t.Cleanup(p.client.CloseIdleConnections)
	WaitFor(t, "pebble to serve its directory", func() bool {
		resp, err := p.client.Get(p.Directory)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return p
}

// Roots returns the root pebble issues certificates under, from its
// management API: what a client of the sites it certifies trusts.
func (p *Pebble) Roots(t testing.TB) *x509.CertPool {
	t.Helper()
	resp, err := p.client.Get(p.mgmt + "/roots/0")
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

// Orders returns how many orders (requests for a certificate) pebble
// has received so far, as its log counts them.
func (p *Pebble) Orders() int {
	return strings.Count(p.log.String(), "Added order")
}

// FreePort returns a TCP port free at the time of asking, on every
// local address, chosen as freeport.Ports chooses (outside the range
// outgoing connections take ports from, and never the same twice in
// one process).
func FreePort(t testing.TB) int {
	t.Helper()
	return FreePorts(t, 1)[0]
}

// FreePorts returns n TCP ports, each free at the time of asking (see
// FreePort).
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := freeport.Ports(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// fakeDNS answers every A query with 127.0.0.1 and every other query
// with no records, over TCP on loopback (pebble's -dnsserver asks over
// TCP), until the test ends.
func fakeDNS(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
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
