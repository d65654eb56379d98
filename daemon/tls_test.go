package daemon

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/certs"
	"github.com/sluice-server/sluice/sluicetest"
)

// tlsSite is a config directory with a CA and certificates for
// a.example and b.example.
type tlsSite struct {
	dir, file string
	ca        *sluicetest.CA
}

func newTLSSite(t *testing.T) *tlsSite {
	t.Helper()
	s := &tlsSite{dir: t.TempDir(), ca: sluicetest.NewCA(t)}
	s.file = filepath.Join(s.dir, "site.yaml")
	s.ca.IssueFiles(t, s.dir, "a.example")
	s.ca.IssueFiles(t, s.dir, "b.example")
	return s
}

// write writes the config: listen (YAML) and a route answering body.
func (s *tlsSite) write(t *testing.T, listen, body string) {
	t.Helper()
	writeFile(t, s.file, fmt.Sprintf("listen:\n%s\nroutes:\n  - match: /\n    pipeline:\n      - text: %q\n", listen, body))
}

// twoCerts is a TLS listener with both certificates, a.example the
// default.
const twoCerts = `  - address: 127.0.0.1:0
    tls:
      certificates:
        - {cert: a.example.crt, key: a.example.key}
        - {cert: b.example.crt, key: b.example.key}`

// The certificate is chosen by the server name the client asks for
// (SNI), the first one when it asks for none; TLS 1.2 and 1.3 are
// served with modern suites, TLS 1.1 and CBC suites are refused.
func TestTLSListenerSNIAndVersions(t *testing.T) {
	site := newTLSSite(t)
	site.write(t, twoCerts, "hi")
	s, _ := newServer(t, fileLoad(site.file))
	start(t, s)
	addr := onlyAddr(t, s)

	for _, name := range []string{"a.example", "b.example"} {
		c := sluicetest.DialTLS(t, addr.String(), site.ca.ClientConfig(name))
		if got := c.ConnectionState().PeerCertificates[0].DNSNames[0]; got != name {
			t.Errorf("SNI %s: got the certificate of %s", name, got)
		}
		if _, body := c.RoundTrip(t, getRoot); body != "hi" {
			t.Errorf("SNI %s: body %q", name, body)
		}
	}
	// No SNI (a client that dials an IP address sends none): the default.
	if got := sluicetest.Handshake(t, addr.String(), &tls.Config{InsecureSkipVerify: true}).PeerCertificates[0].DNSNames[0]; got != "a.example" {
		t.Errorf("no SNI: got the certificate of %s, want the first, a.example", got)
	}

	cfg := site.ca.ClientConfig("a.example")
	cfg.MaxVersion = tls.VersionTLS12
	if st := sluicetest.Handshake(t, addr.String(), cfg); st.Version != tls.VersionTLS12 || !slices.Contains(certs.CipherSuites, st.CipherSuite) || st.NegotiatedProtocol != "" {
		t.Errorf("TLS 1.2: version %x, suite %s, ALPN %q", st.Version, tls.CipherSuiteName(st.CipherSuite), st.NegotiatedProtocol)
	}
	cfg = site.ca.ClientConfig("a.example")
	cfg.NextProtos = []string{"h2", "http/1.1"}
	if st := sluicetest.Handshake(t, addr.String(), cfg); st.Version != tls.VersionTLS13 || st.NegotiatedProtocol != "h2" {
		t.Errorf("TLS 1.3 with ALPN h2, http/1.1: version %x, ALPN %q", st.Version, st.NegotiatedProtocol)
	}

	for what, cfg := range map[string]*tls.Config{
		"TLS 1.1":   {MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11, InsecureSkipVerify: true},
		"CBC suite": {MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}, InsecureSkipVerify: true},
	} {
		if c, err := tls.Dial("tcp", addr.String(), cfg); err == nil {
			c.Close()
			t.Errorf("%s: the handshake succeeded; want it refused", what)
		}
	}
}

// A client that keeps a session resumes it on its next connection, with
// TLS 1.3 and 1.2 (session tickets).
func TestTLSListenerResumption(t *testing.T) {
	site := newTLSSite(t)
	site.write(t, twoCerts, "hi")
	s, _ := newServer(t, fileLoad(site.file))
	start(t, s)
	addr := onlyAddr(t, s)
	for _, version := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		cfg := site.ca.ClientConfig("b.example")
		cfg.MaxVersion = version
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
		for i, want := range []bool{false, true} {
			c := sluicetest.DialTLS(t, addr.String(), cfg)
			// TLS 1.3 sends its ticket after the handshake: reading the
			// response takes it in.
			c.RoundTrip(t, getRoot)
			if got := c.ConnectionState().DidResume; got != want {
				t.Errorf("%s, connection %d: DidResume %v, want %v", tls.VersionName(version), i+1, got, want)
			}
			c.Close()
		}
	}
}

// A reload reads the certificates again: new connections get the new
// one, while a keep-alive connection opened before stays open and its
// next request is answered by the new config.
func TestTLSListenerReloadCertificate(t *testing.T) {
	site := newTLSSite(t)
	site.write(t, twoCerts, "one")
	s, _ := newServer(t, fileLoad(site.file))
	start(t, s)
	addr := onlyAddr(t, s)
	old := sluicetest.DialTLS(t, addr.String(), site.ca.ClientConfig("a.example"))
	if _, body := old.RoundTrip(t, getRoot); body != "one" {
		t.Fatalf("before the reload: %q", body)
	}
	oldSerial := old.ConnectionState().PeerCertificates[0].SerialNumber

	site.ca.IssueFiles(t, site.dir, "a.example") // renewed
	site.write(t, twoCerts, "two")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := onlyAddr(t, s); got.String() != addr.String() {
		t.Fatalf("the reload moved the listener from %s to %s", addr, got)
	}
	if resp, body := old.RoundTrip(t, getRoot); body != "two" || resp.Close {
		t.Errorf("the old connection after the reload: %q, close %v; want two, kept open", body, resp.Close)
	}
	c := sluicetest.DialTLS(t, addr.String(), site.ca.ClientConfig("a.example"))
	if serial := c.ConnectionState().PeerCertificates[0].SerialNumber; serial.Cmp(oldSerial) == 0 {
		t.Errorf("a new connection after the reload got the old certificate (serial %v)", serial)
	}
	if _, body := c.RoundTrip(t, getRoot); body != "two" {
		t.Errorf("a new connection: %q", body)
	}
	newSerial := c.ConnectionState().PeerCertificates[0].SerialNumber

	// A key that does not match its certificate rejects the reload; the
	// certificates in memory keep serving.
	b, err := os.ReadFile(filepath.Join(site.dir, "b.example.key"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(site.dir, "a.example.key"), string(b))
	site.write(t, twoCerts, "three")
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), "does not match the certificate") {
		t.Errorf("a reload with a mismatched key: %v; want it rejected", err)
	}
	c = sluicetest.DialTLS(t, addr.String(), site.ca.ClientConfig("a.example"))
	if _, body := c.RoundTrip(t, getRoot); body != "two" || c.ConnectionState().PeerCertificates[0].SerialNumber.Cmp(newSerial) != 0 {
		t.Errorf("after the rejected reload: %q; want two, with the certificate before it", body)
	}
}

// A plain listener with redirect_to_https answers 308 with the same
// path and query over HTTPS, on the TLS listener's port (true) or the
// one given; HSTS goes out on the TLS listener's responses only.
func TestTLSListenerRedirectAndHSTS(t *testing.T) {
	site := newTLSSite(t)
	site.write(t, `  - address: 127.0.0.1:0
    tls: {cert: a.example.crt, key: a.example.key}
    hsts: {max_age: 8760h, include_subdomains: true}
  - {address: 127.0.0.2:0, redirect_to_https: true}
  - {address: 127.0.0.3:0, redirect_to_https: 443}
  - 127.0.0.4:0`, "hi")
	s, _ := newServer(t, fileLoad(site.file))
	start(t, s)
	addrs := s.Addrs()
	if len(addrs) != 4 {
		t.Fatalf("Addrs %v", addrs)
	}
	tlsPort := addrs[0].(*net.TCPAddr).Port

	for i, want := range []string{
		fmt.Sprintf("https://a.example:%d/p/a%%20th?q=1&r", tlsPort),
		"https://a.example/p/a%20th?q=1&r",
	} {
		resp, _ := dial(t, addrs[1+i]).RoundTrip(t, "POST /p/a%20th?q=1&r HTTP/1.1\r\nHost: a.example:8080\r\nContent-Length: 3\r\n\r\nabc")
		if resp.StatusCode != 308 || resp.Header.Get("Location") != want || resp.Header.Get("Strict-Transport-Security") != "" {
			t.Errorf("redirect listener %d: %d, Location %q, HSTS %q; want 308 to %s, no HSTS", i+1, resp.StatusCode,
				resp.Header.Get("Location"), resp.Header.Get("Strict-Transport-Security"), want)
		}
	}
	if resp, _ := dial(t, addrs[1]).RoundTrip(t, "GET / HTTP/1.0\r\n\r\n"); resp.StatusCode != 400 {
		t.Errorf("redirect without a Host: %s; want 400", resp.Status)
	}

	tc := sluicetest.DialTLS(t, addrs[0].String(), site.ca.ClientConfig("a.example"))
	if resp, body := tc.RoundTrip(t, getRoot); body != "hi" || resp.Header.Get("Strict-Transport-Security") != "max-age=31536000; includeSubDomains" {
		t.Errorf("TLS listener: %q, HSTS %q", body, resp.Header.Get("Strict-Transport-Security"))
	}
	if resp, body := dial(t, addrs[3]).RoundTrip(t, getRoot); body != "hi" || resp.Header.Get("Strict-Transport-Security") != "" {
		t.Errorf("plain listener: %q, HSTS %q; want no HSTS", body, resp.Header.Get("Strict-Transport-Security"))
	}

	// A reload that drops hsts and the redirect applies to the listeners
	// kept open.
	site.write(t, `  - {address: 127.0.0.1:0, tls: {cert: a.example.crt, key: a.example.key}}
  - 127.0.0.2:0
  - 127.0.0.3:0
  - 127.0.0.4:0`, "hi")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if resp, _ := tc.RoundTrip(t, getRoot); resp.Header.Get("Strict-Transport-Security") != "" {
		t.Errorf("after the reload: HSTS %q", resp.Header.Get("Strict-Transport-Security"))
	}
	if resp, body := dial(t, addrs[1]).RoundTrip(t, getRoot); resp.StatusCode != 200 || body != "hi" {
		t.Errorf("after the reload the former redirect listener answers %d %q", resp.StatusCode, body)
	}
	if !strings.HasPrefix(s.Addrs()[0].String(), "127.0.0.1:") {
		t.Errorf("Addrs after the reload: %v", s.Addrs())
	}
}

// Certificates rotate under load without a failed request: while
// clients make requests — HTTP/2 on kept connections, and HTTP/1.1 with
// a new handshake for each — the certificate is renewed and the config
// reloaded five times; every request succeeds, and at the end a new
// connection gets the last certificate.
func TestTLSRotationUnderLoad(t *testing.T) {
	site := newTLSSite(t)
	site.write(t, twoCerts, "ok")
	s, _ := newServer(t, fileLoad(site.file))
	start(t, s)
	addr := onlyAddr(t, s)
	url := "https://" + addr.String() + "/"
	clients := []*http.Client{
		{Transport: &http.Transport{TLSClientConfig: site.ca.ClientConfig("a.example"), ForceAttemptHTTP2: true}},
		{Transport: &http.Transport{TLSClientConfig: site.ca.ClientConfig("a.example"), DisableKeepAlives: true}},
	}
	for _, c := range clients {
		c.Timeout = 20 * time.Second
		defer c.CloseIdleConnections()
	}
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func(c *http.Client) {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Get(url)
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || string(b) != "ok" {
						err = fmt.Errorf("%s %q", resp.Status, b)
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				ok.Add(1)
			}
		}(clients[i%2])
	}
	waitOK := func(n int64) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ok.Load() < n; {
			if time.Now().After(deadline) {
				t.Fatalf("only %d requests answered", ok.Load())
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitOK(20)
	var serial *big.Int
	for range 5 {
		site.ca.IssueFiles(t, site.dir, "a.example") // renewed
		if err := s.Reload(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(site.dir, "a.example.crt"))
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(b)
		leaf, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		serial = leaf.SerialNumber
		waitOK(ok.Load() + 20) // requests go on after each reload
	}
	close(stop)
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Errorf("%d of %d requests failed during the rotations; the first: %v", n, n+ok.Load(), firstErr.Load())
	}
	if got := sluicetest.Handshake(t, addr.String(), site.ca.ClientConfig("a.example")).PeerCertificates[0].SerialNumber; got.Cmp(serial) != 0 {
		t.Errorf("after the rotations a new connection got serial %v, want the last certificate's %v", got, serial)
	}
}
