package certs

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// acmeDomain is the name the tests serve certificates for.
const acmeDomain = "sluice.test"

// writeCached writes the certificate of ca for domain into the data
// directory dir as autocert.DirCache keeps it under key: the private key,
// then the certificate, in PEM; written aside and renamed, as DirCache
// does.
func writeCached(t *testing.T, ca *sluicetest.CA, dir, key, domain string) {
	t.Helper()
	tmp := t.TempDir()
	certFile, keyFile := ca.IssueFiles(t, tmp, domain)
	certPEM, _ := os.ReadFile(certFile)
	keyPEM, _ := os.ReadFile(keyFile)
	os.MkdirAll(dir, 0o700)
	writeFile(t, filepath.Join(dir, key+".tmp"), string(keyPEM)+string(certPEM))
	if err := os.Rename(filepath.Join(dir, key+".tmp"), filepath.Join(dir, key)); err != nil {
		t.Fatal(err)
	}
}

// A cache-only Manager (a worker's) never asks the authority: it serves the certificate another process keeps in the data directory,
// and a new one once the file is replaced (a renewal), while a keep-alive
// connection carries on; it answers the HTTP-01 and TLS-ALPN-01
// challenges another process's order wrote there; a domain whose
// certificate is not there yet fails its handshake at once.
func TestACMECacheOnly(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "acme")
	ca := sluicetest.NewCA(t)
	writeCached(t, ca, data, acmeDomain, acmeDomain)
	file := filepath.Join(dir, "site.yaml")
	writeFile(t, file, fmt.Sprintf(`listen:
  - %s
  - address: %s
    tls:
      acme:
        domains: [%s, other.test]
        directory: https://127.0.0.1:1/dir
        data: acme
routes:
  - match: /
    pipeline:
      - text: hi
`, "127.0.0.1:8080", "127.0.0.1:8443", acmeDomain))
	ts := serveConfig(t, file, true, nil)
	plainAddr, tlsAddr := ts.eps[0].addr, ts.eps[1].addr

	client := ca.ClientConfig(acmeDomain)
	keep := &http.Transport{TLSClientConfig: client} // one keep-alive connection
	defer keep.CloseIdleConnections()
	// get asks for / on keep's connection: the body, the serial of the
	// certificate the connection got, and whether it was open already.
	get := func() (body string, serial *big.Int, reused bool) {
		t.Helper()
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "https://"+tlsAddr+"/", nil)
		resp, err := keep.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), resp.TLS.PeerCertificates[0].SerialNumber, reused
	}
	body, first, _ := get()
	if body != "hi" {
		t.Fatalf("body %q", body)
	}
	if c, err := tls.Dial("tcp", tlsAddr, ca.ClientConfig("other.test")); err == nil {
		c.Close()
		t.Errorf("other.test, whose certificate is not in the data directory: the handshake succeeded")
	}

	writeCached(t, ca, data, acmeDomain, acmeDomain) // renewed by another process
	sluicetest.WaitFor(t, "the renewed certificate served", func() bool {
		return sluicetest.Handshake(t, tlsAddr, client).PeerCertificates[0].SerialNumber.Cmp(first) != 0
	})
	if body, serial, reused := get(); body != "hi" || !reused || serial.Cmp(first) != 0 {
		t.Errorf("the keep-alive connection from before the renewal: body %q, open before %v, its certificate the first %v", body, reused, serial.Cmp(first) == 0)
	}

	// Challenges of another process's order.
	writeFile(t, filepath.Join(data, "tok123+http-01"), "tok123.thumbprint")
	req, _ := http.NewRequest("GET", "http://"+plainAddr+"/.well-known/acme-challenge/tok123", nil)
	req.Host = acmeDomain
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "tok123.thumbprint" {
		t.Errorf("HTTP-01 token from the data directory: %d %q", resp.StatusCode, b)
	}
	tokenCA := sluicetest.NewCA(t)
	writeCached(t, tokenCA, data, acmeDomain+"+token", acmeDomain)
	sluicetest.Handshake(t, tlsAddr, &tls.Config{RootCAs: tokenCA.Pool, ServerName: acmeDomain, NextProtos: []string{"acme-tls/1"}}) // TLS-ALPN-01 from the data directory
	if strings.Contains(ts.log.String(), "certificate ready") || strings.Contains(ts.log.String(), "cannot obtain") {
		t.Errorf("a cache-only server asked the authority:\n%s", ts.log)
	}
}
