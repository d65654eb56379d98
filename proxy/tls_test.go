package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// tlsUpstream starts a net/http server over TLS presenting cert, with
// configure (if any) adjusting its TLS config, answering h; it returns
// its https URL.
func tlsUpstream(t *testing.T, cert tls.Certificate, configure func(*tls.Config), h http.Handler) string {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes failed on purpose
	if configure != nil {
		configure(s.TLS)
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s.URL
}

var hello = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.TLS == nil {
		http.Error(w, "not over TLS", http.StatusInternalServerError)
		return
	}
	w.Write([]byte("hello over TLS"))
})

// Verification of an upstream's certificate, and the advice a failure
// logs: each case is the upstream's certificate and the proxy's tls
// options, and either a 200 or a 502 with what the log says to do.
func TestTLSVerification(t *testing.T) {
	dir := t.TempDir()
	ca := sluicetest.NewCA(t)
	caFile := ca.WriteFiles(t, dir)
	other := sluicetest.NewCA(t)
	clientCert, clientKey := ca.IssueFiles(t, dir, "sluice-client")
	past := time.Now().Add(-48 * time.Hour)
	// The test CA's certificates are for servers (ExtKeyUsageServerAuth):
	// the upstream checks the chain, not the usage.
	requireClientCert := func(c *tls.Config) {
		c.ClientAuth = tls.RequireAnyClientCert
		c.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			leaf, err := x509.ParseCertificate(raw[0])
			if err != nil {
				return err
			}
			_, err = leaf.Verify(x509.VerifyOptions{Roots: ca.Pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
			return err
		}
	}
	for _, c := range []struct {
		name      string
		cert      tls.Certificate
		configure func(*tls.Config)
		opts      TLSOptions
		advice    string // "" for a 200
	}{
		{"trusted CA", ca.Issue(t, "127.0.0.1"), nil, TLSOptions{CA: caFile}, ""},
		{"unknown CA", other.Issue(t, "127.0.0.1"), nil, TLSOptions{CA: caFile}, "name the CA that signed it in tls.ca"},
		{"system roots", ca.Issue(t, "127.0.0.1"), nil, TLSOptions{}, "tls.ca"},
		{"wrong name", ca.Issue(t, "backend.internal"), nil, TLSOptions{CA: caFile}, "not for 127.0.0.1 (it holds backend.internal): set tls.server_name"},
		{"server_name", ca.Issue(t, "backend.internal"), nil, TLSOptions{CA: caFile, ServerName: "backend.internal"}, ""},
		{"expired", ca.IssueValid(t, past, past.Add(time.Hour), "127.0.0.1"), nil, TLSOptions{CA: caFile}, "expired or is not yet valid"},
		{"insecure_skip_verify", other.Issue(t, "elsewhere"), nil, TLSOptions{InsecureSkipVerify: true}, ""},
		{"client certificate", ca.Issue(t, "127.0.0.1"), requireClientCert, TLSOptions{CA: caFile, Cert: clientCert, Key: clientKey}, ""},
		{"client certificate missing", ca.Issue(t, "127.0.0.1"), requireClientCert, TLSOptions{CA: caFile}, "certificate required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := tlsUpstream(t, c.cert, c.configure, hello)
			logger, logs := sluicetest.Logger()
			srv, _ := front(t, Options{Upstreams: []string{url}, TLS: c.opts, Logger: logger, Retries: -1})
			resp, body := sluicetest.Get(t, srv.URL+"/")
			if c.advice == "" {
				if resp.StatusCode != 200 || body != "hello over TLS" {
					t.Fatalf("got %d %q, want 200 hello over TLS; log:\n%s", resp.StatusCode, body, logs)
				}
				return
			}
			if resp.StatusCode != http.StatusBadGateway {
				t.Fatalf("got %d %q, want 502", resp.StatusCode, body)
			}
			if !strings.Contains(logs.String(), c.advice) {
				t.Fatalf("log does not say %q:\n%s", c.advice, logs)
			}
		})
	}
}

// An https upstream that speaks plain HTTP is told apart, and so is an
// h2 upstream that does not choose h2 by ALPN.
func TestTLSWrongProtocol(t *testing.T) {
	_, urls := upstreams(t, 1, func(int) http.Handler { return hello })
	plain := "https://" + strings.TrimPrefix(urls[0], "http://")
	ca := sluicetest.NewCA(t)
	caFile := ca.WriteFiles(t, t.TempDir())
	h1only := tlsUpstream(t, ca.Issue(t, "127.0.0.1"), func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }, hello)
	for _, c := range []struct {
		name string
		opts Options
		want string
	}{
		{"plain upstream", Options{Upstreams: []string{plain}}, "does not speak TLS"},
		{"h2 without ALPN h2", Options{Upstreams: []string{h1only}, Transport: TransportH2, TLS: TLSOptions{CA: caFile}}, "transport h2 needs an upstream serving HTTP/2 over TLS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			logger, logs := sluicetest.Logger()
			c.opts.Logger, c.opts.Retries = logger, -1
			srv, _ := front(t, c.opts)
			resp, _ := sluicetest.Get(t, srv.URL+"/")
			if resp.StatusCode != http.StatusBadGateway || !strings.Contains(logs.String(), c.want) {
				t.Fatalf("got %d, want 502 and %q in the log:\n%s", resp.StatusCode, c.want, logs)
			}
		})
	}
}

// A new connection to an upstream resumes the TLS session of the one
// before (the proxy's session cache), rather than a full handshake.
func TestTLSSessionResumption(t *testing.T) {
	ca := sluicetest.NewCA(t)
	caFile := ca.WriteFiles(t, t.TempDir())
	var resumed, full atomic.Int64
	url := tlsUpstream(t, ca.Issue(t, "127.0.0.1"), nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS.DidResume {
			resumed.Add(1)
		} else {
			full.Add(1)
		}
	}))
	// No idle connection kept: each request dials anew.
	srv, _ := front(t, Options{Upstreams: []string{url}, TLS: TLSOptions{CA: caFile}, MaxIdleConns: -1})
	for range 3 {
		if resp, _ := sluicetest.Get(t, srv.URL+"/"); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	if full.Load() != 1 || resumed.Load() != 2 {
		t.Fatalf("%d full handshakes and %d resumed, want 1 and 2", full.Load(), resumed.Load())
	}
}

// Keep-alive connections over TLS are reused.
func TestTLSReuse(t *testing.T) {
	ca := sluicetest.NewCA(t)
	caFile := ca.WriteFiles(t, t.TempDir())
	var conns atomic.Int64
	s := httptest.NewUnstartedServer(hello)
	s.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "127.0.0.1")}}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	srv, _ := front(t, Options{Upstreams: []string{s.URL}, TLS: TLSOptions{CA: caFile}})
	for range 5 {
		if resp, _ := sluicetest.Get(t, srv.URL+"/"); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for five requests in a row, want 1", n)
	}
}

// The active health checks go over TLS, verified as requests are: an
// upstream whose certificate fails verification is marked down.
func TestTLSHealth(t *testing.T) {
	ca := sluicetest.NewCA(t)
	caFile := ca.WriteFiles(t, t.TempDir())
	var checks atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" && r.TLS != nil {
			checks.Add(1)
		}
		w.Write([]byte("hello over TLS"))
	})
	good := tlsUpstream(t, ca.Issue(t, "127.0.0.1"), nil, h)
	bad := tlsUpstream(t, sluicetest.NewCA(t).Issue(t, "127.0.0.1"), nil, h)
	logger, logs := sluicetest.Logger()
	srv, _ := front(t, Options{Upstreams: []string{bad, good}, TLS: TLSOptions{CA: caFile}, Logger: logger,
		Health: Health{Path: "/healthz", Interval: 10 * time.Millisecond, Fall: 1}})
	sluicetest.WaitFor(t, "health checks over TLS", func() bool { return checks.Load() >= 2 })
	sluicetest.WaitFor(t, "the upstream with an unknown CA marked down", func() bool {
		return strings.Contains(logs.String(), "upstream down: health check failed")
	})
	if !strings.Contains(logs.String(), bad) {
		t.Fatalf("the log names another upstream down:\n%s", logs)
	}
	for range 4 {
		if resp, body := sluicetest.Get(t, srv.URL+"/"); resp.StatusCode != 200 {
			t.Fatalf("status %d %q", resp.StatusCode, body)
		}
	}
}

// The options a TLS transport refuses, with what to write instead.
func TestTLSOptionErrors(t *testing.T) {
	dir := t.TempDir()
	ca := sluicetest.NewCA(t)
	caFile := ca.WriteFiles(t, dir)
	cert, _ := ca.IssueFiles(t, dir, "client")
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{Upstreams: []string{"https://a", "http://b"}}, "mix https:// and http://"},
		{Options{Upstreams: []string{"http://a"}, Transport: "https"}, "write https://a"},
		{Options{Upstreams: []string{"https://a"}, Transport: "http"}, "or use transport https"},
		{Options{Upstreams: []string{"https://a"}, Transport: "h2c"}, "or use transport h2"},
		{Options{Upstreams: []string{"unix:/x.sock"}, Transport: "h2"}, "use transport h2c"},
		{Options{Upstreams: []string{"http://a"}, Transport: "spdy"}, `transport "spdy": want http, https, h2c or h2`},
		{Options{Upstreams: []string{"http://a"}, TLS: TLSOptions{CA: caFile}}, "write https:// upstreams"},
		{Options{Upstreams: []string{"https://a"}, TLS: TLSOptions{CA: dir + "/none.pem"}}, "tls ca"},
		{Options{Upstreams: []string{"https://a"}, TLS: TLSOptions{CA: cert + ".missing"}}, "no such file"},
		{Options{Upstreams: []string{"https://a"}, TLS: TLSOptions{Cert: cert}}, "cert and key go together"},
		{Options{Upstreams: []string{"https://a"}, TLS: TLSOptions{ServerName: "a:443"}}, "want a host name"},
		{Options{Upstreams: []string{"http://a"}, MaxStreams: 10}, "max_streams applies to HTTP/2"},
	} {
		if _, err := New(c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.opts, err, c.want)
		}
	}
	// A CA file without a certificate says what it wants.
	bad := dir + "/bad.pem"
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Upstreams: []string{"https://a"}, TLS: TLSOptions{CA: bad}}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("CA without a certificate: %v", err)
	}
}
