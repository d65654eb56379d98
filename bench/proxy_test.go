package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-server/sluice/bench/load"
	"github.com/sluice-server/sluice/bench/machine"
	"github.com/sluice-server/sluice/bench/peers"
	"github.com/sluice-server/sluice/bench/report"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// The proxy scenario runs only when named, and takes haproxy, which no
// other scenario measures, as a server.
func TestParseProxy(t *testing.T) {
	if slices.Contains(defaultScenarios, report.Proxy) {
		t.Errorf("the default scenarios %v include proxy", defaultScenarios)
	}
	o, code := parse([]string{"--scenarios", "proxy", "--servers", "sluice,nginx,caddy,haproxy"}, io.Discard)
	if code != -1 {
		t.Fatalf("parse: exit %d", code)
	}
	if !slices.Equal(o.servers, []string{"sluice", "nginx", "caddy", "haproxy"}) || !slices.Equal(o.scenarios, []string{report.Proxy}) {
		t.Errorf("servers %v, scenarios %v", o.servers, o.scenarios)
	}
	if !slices.Contains(serverNames(), "haproxy") || slices.Contains(serverNames(), "haproxy-proxy") {
		t.Errorf("serverNames() = %v", serverNames())
	}
	for _, p := range peers.Proxies() {
		if !slices.Contains(serverNames(), proxyBase(p.Name)) {
			t.Errorf("proxy %s: its base %q is not a --servers name", p.Name, proxyBase(p.Name))
		}
	}
}

func TestParseStubStatus(t *testing.T) {
	n, err := parseStubStatus("Active connections: 3 \nserver accepts handled requests\n 1207 1207 531442 \nReading: 0 Writing: 1 Waiting: 2 \n")
	if err != nil || n != 1207 {
		t.Errorf("parseStubStatus = %d, %v; want 1207", n, err)
	}
	if _, err := parseStubStatus("<html>404</html>"); err == nil {
		t.Error("parseStubStatus of a page that is not stub_status: no error")
	}
}

func TestNginxBody(t *testing.T) {
	got, err := peers.Env{Body: "a \"quoted\" \\ line\n"}.NginxBody()
	if want := "a \\\"quoted\\\" \\\\ line\n"; err != nil || got != want {
		t.Errorf("NginxBody = %q, %v; want %q", got, err, want)
	}
	if _, err := (peers.Env{Body: "costs $5"}).NginxBody(); err == nil {
		t.Error("NginxBody of a body with '$': no error")
	}
}

// testPage is the docroot's 151-byte index.html, the upstream's body.
func testPage(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := makeDocroot(root); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	return string(page)
}

// allCPUs is the taskset list of every CPU, for peers started by tests.
func allCPUs() string { return fmt.Sprintf("0-%d", runtime.NumCPU()-1) }

// The upstream answers every path with its body, byte for byte, and its
// stub_status counts the connections it accepted: upstreamAccepts, read
// before and after three requests on three new connections, differs by
// those three and the second reading's own connection.
func TestUpstreamPeer(t *testing.T) {
	sluicetest.NeedTool(t, "nginx", "Debian package nginx")
	page := testPage(t)
	port, err := machine.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	env := peers.Env{Dir: t.TempDir(), Host: "127.0.0.1", Port: port, NoFile: 1024, Body: page}
	up, err := peers.Start(peers.Upstream(), env, allCPUs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(up.Stop)
	a0, err := upstreamAccepts(env.Addr())
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/index.html", "/any/path"} {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + env.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != page || resp.ContentLength != 151 {
			t.Errorf("GET %s: %s, Content-Length %d, body %q; want 200 and the 151-byte page", path, resp.Status, resp.ContentLength, body)
		}
	}
	a1, err := upstreamAccepts(env.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if a1-a0-1 != 3 {
		t.Errorf("accepted %d then %d: %d connections counted between, want 3", a0, a1, a1-a0-1)
	}
}

// forwarded is what a test upstream saw of a request.
type forwarded struct{ host, xff, xfp, xfh string }

// TestProxyPeers starts every proxy of the proxy scenario in front of an
// upstream that records what it is sent, and checks that each is
// configured alike: GET / answers the upstream's page; the upstream gets
// the client's Host and X-Forwarded-For, -Proto and -Host; and, once a
// load at 10 keep-alive connections has filled its pool, a second load
// of 2,000 requests opens fewer new connections to the upstream than it
// has (none, but for a race at its start). Sluice's configuration is
// loaded in this process; the others' programs are skipped when not
// installed.
func TestProxyPeers(t *testing.T) {
	page := testPage(t)
	var mu sync.Mutex
	var last forwarded
	upstream := sluicetest.NewServer(t, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		mu.Lock()
		last = forwarded{string(r.Host), string(r.HeaderList("X-Forwarded-For")), string(r.Header("X-Forwarded-Proto")), string(r.Header("X-Forwarded-Host"))}
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		w.WriteString(page)
	}))
	tools := map[string][2]string{
		"nginx-proxy": {"nginx", "Debian package nginx"},
		"caddy-proxy": {"caddy", "Debian package caddy"},
		"haproxy":     {"haproxy", "Debian package haproxy"},
	}
	for _, p := range peers.Proxies() {
		t.Run(p.Name, func(t *testing.T) {
			port, err := machine.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			// NoFile as the harness gives it: the hard limit.
			env := peers.Env{Dir: t.TempDir(), Host: "127.0.0.1", Port: port, NoFile: machine.RaiseNofile(),
				Upstream: upstream.Addr, IdleConns: proxyIdleConns}
			addr := env.Addr()
			if p.Name == "sluice-proxy" {
				addr = startSluiceConfig(t, p, env)
			} else {
				tool, ok := tools[p.Name]
				if !ok {
					t.Fatalf("no program known for %s", p.Name)
				}
				sluicetest.NeedTool(t, tool[0], tool[1])
				srv, err := peers.Start(p, env, allCPUs())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(srv.Stop)
			}
			if err := checkProxied(addr, page); err != nil {
				t.Fatal(err)
			}

			req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
			req.Host = "bench.example:8080"
			resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			got := last
			mu.Unlock()
			want := forwarded{"bench.example:8080", "127.0.0.1", "http", "bench.example:8080"}
			if got != want {
				t.Errorf("the upstream got Host, X-Forwarded-For, -Proto, -Host = %+v; want %+v", got, want)
			}

			cfg := load.Config{Addr: addr, Conns: 10, Requests: 2000, Timeout: 5 * time.Second}
			if _, err := load.Run(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			before := upstream.Engine.Stats().Accepted
			res, err := load.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.OK != cfg.Requests || res.Errors.Total() != 0 {
				t.Errorf("second load: %d OK, errors %v (first: %v)", res.OK, res.Errors, res.FirstError)
			}
			// A connection of the first load's last requests may not be
			// back in the pool yet when the second load starts, and be
			// replaced by a new one; a pool that does not keep them
			// opens hundreds (one per request past its size).
			if dials := upstream.Engine.Stats().Accepted - before; dials >= uint64(cfg.Conns) {
				t.Errorf("the proxy opened %d new upstream connections for a load at %d connections after one at %d: its pool did not keep them", dials, cfg.Conns, cfg.Conns)
			}
		})
	}
}

// startSluiceConfig loads the configuration p writes for env in this
// process and serves it on a fresh loopback port, whose address it
// returns.
func startSluiceConfig(t *testing.T, p peers.Peer, env peers.Env) string {
	t.Helper()
	text, err := p.Config(env)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), p.Name+".yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	t.Cleanup(func() { cfg.Close() })
	srv := sluicetest.NewServer(t, cfg.Handler())
	return srv.Addr
}

// The proxies' configurations name the upstream and the idle pool given,
// and none turns an access log on.
func TestProxyConfigs(t *testing.T) {
	env := peers.Env{Dir: "/run/x", Host: "127.0.0.1", Port: 8080, NoFile: 4096, Upstream: "127.0.0.1:9999", IdleConns: 77}
	for _, p := range peers.Proxies() {
		text, err := p.Config(env)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if !strings.Contains(text, "127.0.0.1:9999") || !strings.Contains(text, "77") {
			t.Errorf("%s: the configuration lacks the upstream or the pool size:\n%s", p.Name, text)
		}
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "#") {
				continue
			}
			if strings.HasPrefix(line, "access_log") && line != "access_log off;" || strings.HasPrefix(line, "log ") || line == "log" {
				t.Errorf("%s logs requests: %q", p.Name, line)
			}
		}
	}
	// And the scenario's pool holds every client connection.
	if proxyIdleConns < kaConns {
		t.Errorf("proxyIdleConns %d < kaConns %d: proxies would redial during a run", proxyIdleConns, kaConns)
	}
}
