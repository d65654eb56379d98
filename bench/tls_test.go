package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-server/sluice/bench/machine"
	"github.com/sluice-server/sluice/bench/peers"
	"github.com/sluice-server/sluice/bench/report"
	"github.com/sluice-server/sluice/bench/tlscert"
	"github.com/sluice-server/sluice/sluicetest"
)

// The tls scenario runs only when named, and every TLS peer stands for
// a --servers name.
func TestParseTLS(t *testing.T) {
	if slices.Contains(defaultScenarios, report.TLS) {
		t.Errorf("the default scenarios %v include tls", defaultScenarios)
	}
	o, code := parse([]string{"--scenarios", "tls", "--servers", "sluice,nginx,h2o,caddy"}, io.Discard)
	if code != -1 {
		t.Fatalf("parse: exit %d", code)
	}
	if !slices.Equal(o.scenarios, []string{report.TLS}) {
		t.Errorf("scenarios %v", o.scenarios)
	}
	for _, p := range peers.TLS() {
		if !slices.Contains(serverNames(), peers.TLSBase(p.Name)) {
			t.Errorf("TLS peer %s: its base %q is not a --servers name", p.Name, peers.TLSBase(p.Name))
		}
	}
}

const h2loadOK = `starting benchmark...
spawning thread #0: 100 total client(s). Timing-based test with 0s of warm-up time and 2s of main duration for measurements.
TLS Protocol: TLSv1.3
Cipher: TLS_AES_128_GCM_SHA256
Server Temp Key: X25519 253 bits
Application protocol: h2
Main benchmark duration is over for thread #0. Stopping all clients.
Stopped all clients for thread #0

finished in 2.00s, 74546.50 req/s, 15.93MB/s
requests: 149093 total, 150093 started, 149093 done, 149093 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 149093 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 31.86MB (33402180) total, 1.85MB (1938209) headers (space savings 93.11%), 21.47MB (22513043) data
                     min         max         mean         sd        +/- sd
time for request:      162us     62.34ms     13.21ms      6.01ms    70.52%
time for connect:     6.54ms     32.03ms     19.88ms      7.42ms    57.00%
time to 1st byte:    20.11ms     40.95ms     30.26ms      6.10ms    59.00%
req/s           :     734.62      762.41      745.44        6.31    68.00%
`

// A run in which nginx's keepalive_requests 1000 ended every connection
// after 1,000 requests, as docs/benchmarks.md's figures taken by hand record.
const h2loadFailed = `finished in 2.86s, 34965.03 req/s, 6.41MB/s
requests: 300000 total, 100200 started, 100000 done, 100000 succeeded, 200000 failed, 200000 errored, 0 timeout
status codes: 100000 2xx, 0 3xx, 0 4xx, 0 5xx
time for request:      301us     48.63ms     20.20ms      9.11ms    64.21%
`

func TestParseH2load(t *testing.T) {
	r, err := parseH2load(h2loadOK)
	if err != nil {
		t.Fatal(err)
	}
	if r.succeeded != 149093 || r.errors() != 0 || r.rps != 74546.50 || r.meanMs != 13.21 || r.maxMs != 62.34 || r.errText != "" {
		t.Errorf("parseH2load = %+v", r)
	}
	r, err = parseH2load(h2loadFailed)
	if err != nil {
		t.Fatal(err)
	}
	if r.succeeded != 100000 || r.errors() != 200000 || !strings.HasPrefix(r.errText, "requests: 300000 total") {
		t.Errorf("parseH2load of failed requests = %+v, errors %d", r, r.errors())
	}
	// Answered with 5xx: done and counted as failed by no field but the
	// status codes.
	r, _ = parseH2load("finished in 1s, 10 req/s, 0B/s\nrequests: 10 total, 10 started, 10 done, 10 succeeded, 0 failed, 0 errored, 0 timeout\nstatus codes: 6 2xx, 0 3xx, 0 4xx, 4 5xx\n")
	if r.errors() != 4 {
		t.Errorf("4 answers 5xx: errors() = %d", r.errors())
	}
	if _, err := parseH2load("connect: Connection refused\n"); err == nil {
		t.Error("parseH2load of no report: no error")
	}
}

// The TLS peers' configurations name the run's certificate and key, log
// no request, and nginx's lets a connection carry more requests than
// any run sends (its default, 1000, fails HTTP/2 loads).
func TestTLSConfigs(t *testing.T) {
	env := peers.Env{Dir: "/run/x", Root: "/run/root", Host: "127.0.0.1", Port: 8443, NoFile: 4096, Cert: "/run/c.pem", Key: "/run/k.pem"}
	for _, p := range peers.TLS() {
		text, err := p.Config(env)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		argv := strings.Join(p.CommandLine(env, "/run/x/conf"), " ")
		if !strings.Contains(text+argv, "/run/c.pem") || !strings.Contains(text+argv, "/run/k.pem") {
			t.Errorf("%s: neither the configuration nor the command names the certificate and key:\n%s\n%s", p.Name, argv, text)
		}
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "access_log") && line != "access_log off;" || strings.HasPrefix(line, "access-log") || strings.HasPrefix(line, "log ") || line == "log" {
				t.Errorf("%s logs requests: %q", p.Name, line)
			}
			if v, ok := strings.CutPrefix(line, "keepalive_requests "); ok && len(strings.TrimSuffix(v, ";")) < 9 {
				t.Errorf("%s: %q: a connection of a run could reach it", p.Name, line)
			}
		}
	}
}

// TestTLSPeers starts every TLS peer installed here with a certificate
// from tlscert and checks one HTTPS GET over HTTP/1.1 and one over
// HTTP/2 (ALPN), each answering the 151-byte page, and that a
// handshake with no session cache is a full one. Sluice is built from
// this repository.
func TestTLSPeers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	// Readable by every user: nginx's and h2o's workers drop privileges,
	// and t.TempDir's parent is not.
	dir, err := os.MkdirTemp("", "sluicebench-tls")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	root := filepath.Join(dir, "root")
	if err := makeDocroot(root); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := tlscert.Write(cert, key); err != nil {
		t.Fatal(err)
	}
	tools := map[string][2]string{
		"nginx-tls": {"nginx", "Debian package nginx"},
		"h2o-tls":   {"h2o", "Debian package h2o"},
		"caddy-tls": {"caddy", "Debian package caddy"},
	}
	for _, p := range peers.TLS() {
		t.Run(p.Name, func(t *testing.T) {
			port, err := machine.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			env := peers.Env{Dir: t.TempDir(), Root: root, Host: "127.0.0.1", Port: port, NoFile: machine.RaiseNofile(), Cert: cert, Key: key}
			if p.Name == "sluice-tls" {
				env.Sluice = buildSluice(t)
			} else {
				tool, ok := tools[p.Name]
				if !ok {
					t.Fatalf("no program known for %s", p.Name)
				}
				sluicetest.NeedTool(t, tool[0], tool[1])
			}
			srv, err := peers.Start(p, env, allCPUs())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Stop)
			for _, proto := range []string{"http/1.1", "h2"} {
				if err := checkTLSGet(env.Addr(), proto, string(page)); err != nil {
					t.Error(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resumed, err := tlsGet(ctx, env.Addr(), fullHandshakeConfig(), true)
			if err != nil || resumed {
				t.Errorf("a GET with no session cache: resumed %v, %v", resumed, err)
			}
		})
	}
}

// buildSluice builds the sluice binary of this repository once per test
// binary and returns its path.
func buildSluice(t *testing.T) string {
	t.Helper()
	sluiceOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sluicebench-test")
		if err != nil {
			sluiceErr = err
			return
		}
		sluiceBin = filepath.Join(dir, "sluice")
		cmd := exec.Command("go", "build", "-o", sluiceBin, "./cmd/sluice")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			sluiceErr = fmt.Errorf("go build ./cmd/sluice: %v: %s", err, out)
		}
	})
	if sluiceErr != nil {
		t.Fatal(sluiceErr)
	}
	return sluiceBin
}

var (
	sluiceOnce sync.Once
	sluiceBin  string
	sluiceErr  error
)

// TestMain removes the binary buildSluice built, with its directory,
// once the tests are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if sluiceBin != "" {
		os.RemoveAll(filepath.Dir(sluiceBin))
	}
	os.Exit(code)
}
