package certs

import (
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/sluicetest"
)

// testServer serves a config file's listen entries through a Manager as
// a server's listeners do (package daemon's), each on a loopback socket
// of its own (the addresses the entries name are not listened on): a
// TLS entry with the certificates of its Set, a plain one
// answering the HTTP-01 challenges of the Manager's Challenges; both
// answer every other request "hi" (HTTP/1.1, net/http). It is not
// sluicetest.NewTLSServer, which serves a tls.Config of its own making:
// the test is of the Endpoint's (TLSConfig).
type testServer struct {
	m    *Manager
	log  *sluicetest.Buffer
	file string
	cfg  *config.Config
	eps  []*testEndpoint // by listen entry
}

// testEndpoint is one listen entry being served.
type testEndpoint struct {
	addr       string
	certs      Endpoint                   // a TLS entry's
	challenges atomic.Pointer[Challenges] // a plain entry's
}

// serveConfig serves the config file named file with a new Manager
// (cacheOnly: NewManager's), started, until the test ends.
func serveConfig(t *testing.T, file string, cacheOnly bool, prepare func(*Manager)) *testServer {
	t.Helper()
	logger, buf := sluicetest.Logger()
	ts := &testServer{m: NewManager(logger, cacheOnly), log: buf, file: file}
	if prepare != nil {
		prepare(ts.m)
	}
	t.Cleanup(ts.m.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the log:\n%s", buf.String())
		}
	})
	cfg := ts.load(t)
	for _, a := range cfg.Listen {
		te := &testEndpoint{}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		te.addr = ln.Addr().String()
		srv := &http.Server{
			Handler:      te,
			ErrorLog:     log.New(io.Discard, "", 0),
			TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){}, // no h2: ALPN is the endpoint's alone
		}
		if o := cfg.ListenOptions[a]; o != nil && o.TLS != nil {
			srv.TLSConfig = te.certs.TLSConfig("http/1.1")
			go srv.ServeTLS(ln, "", "")
		} else {
			go srv.Serve(ln)
		}
		t.Cleanup(func() { srv.Close() })
		ts.eps = append(ts.eps, te)
	}
	ts.apply(cfg)
	ts.m.Start(cfg)
	return ts
}

// load loads the config file.
func (ts *testServer) load(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Load(ts.file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cfg.Close() })
	return cfg
}

// apply makes the endpoints serve cfg, as a reload does.
func (ts *testServer) apply(cfg *config.Config) {
	for i, a := range cfg.Listen {
		if o := cfg.ListenOptions[a]; o != nil && o.TLS != nil {
			ts.eps[i].certs.Store(ts.m.Set(o.TLS, cfg))
		} else {
			ts.eps[i].challenges.Store(ts.m.Challenges(cfg))
		}
	}
	if ts.cfg != nil {
		ts.m.Retain(cfg, ts.cfg)
	}
	ts.cfg = cfg
}

// reload loads the config file again and serves it, on the same
// endpoints.
func (ts *testServer) reload(t *testing.T) {
	t.Helper()
	ts.apply(ts.load(t))
}

func (te *testEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if c := te.challenges.Load(); c != nil && strings.HasPrefix(r.URL.Path, ChallengePath) && r.Method == "GET" {
		if body, ok := c.Answer(r.Host, r.URL.Path); ok {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(body)
			return
		}
	}
	io.WriteString(w, "hi")
}

func writeFile(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
