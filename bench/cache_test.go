package bench

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-server/sluice/bench/machine"
	"github.com/sluice-server/sluice/bench/peers"
	"github.com/sluice-server/sluice/bench/report"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// The cache scenario runs only when named, takes varnish, which no other
// scenario measures, as a server, and measures Sluice's proxy alone
// beside the caches.
func TestParseCache(t *testing.T) {
	if slices.Contains(defaultScenarios, report.Cache) {
		t.Errorf("the default scenarios %v include cache", defaultScenarios)
	}
	o, code := parse([]string{"--scenarios", "cache", "--servers", "sluice,nginx,varnish"}, io.Discard)
	if code != -1 {
		t.Fatalf("parse: exit %d", code)
	}
	if !slices.Equal(o.servers, []string{"sluice", "nginx", "varnish"}) || !slices.Equal(o.scenarios, []string{report.Cache}) {
		t.Errorf("servers %v, scenarios %v", o.servers, o.scenarios)
	}
	var names, bases []string
	for _, v := range cacheAll() {
		names, bases = append(names, v.peer.Name), append(bases, v.base)
		if !slices.Contains(serverNames(), v.base) {
			t.Errorf("cache variant %s: its base %q is not a --servers name", v.peer.Name, v.base)
		}
	}
	if !slices.Equal(names, []string{"sluice-cache", "nginx-cache", "varnish", "sluice-proxy"}) || !slices.Equal(bases, []string{"sluice", "nginx", "varnish", "sluice"}) {
		t.Errorf("cache variants %v standing for %v", names, bases)
	}
	for _, v := range cacheAll() {
		if v.caching != (v.peer.Name != cacheProxyName) {
			t.Errorf("%s: caching %v", v.peer.Name, v.caching)
		}
	}
}

// The caches' configurations name the origin, the idle pool and the
// store's budget, none turns an access log on, and each is what the
// scenario promises: nginx with one worker, proxy_cache in its scratch
// directory, Varnish with its own working directory, malloc storage and
// one thread pool; the origin with max-age.
func TestCacheConfigs(t *testing.T) {
	env := peers.Env{Dir: "/run/x", Root: "/srv/root", Host: "127.0.0.1", Port: 8080, NoFile: 4096, Upstream: "127.0.0.1:9999", IdleConns: 77}
	want := map[string][]string{
		"sluice-cache": {"- cache: {size: 256MB", "- proxy: {upstreams: [\"http://127.0.0.1:9999\"], max_idle_conns: 77}"},
		"nginx-cache": {"worker_processes 1;", "proxy_cache_path /run/x/cache ", "max_size=256m", "keys_zone=bench:", "proxy_cache bench;",
			"proxy_cache_valid 200 1h;", "server 127.0.0.1:9999;", "keepalive 77;", "add_header X-Cache-Status $upstream_cache_status;"},
		"varnish": {".host = \"127.0.0.1\";", ".port = \"9999\";"},
	}
	for _, p := range peers.Caches() {
		text, err := p.Config(env)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		w, ok := want[p.Name]
		if !ok {
			t.Errorf("no expectations for cache peer %s", p.Name)
		}
		for _, s := range w {
			if !strings.Contains(text, s) {
				t.Errorf("%s: the configuration lacks %q:\n%s", p.Name, s, text)
			}
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
	i := slices.IndexFunc(peers.Caches(), func(p peers.Peer) bool { return p.Name == "varnish" })
	argv := strings.Join(peers.Caches()[i].CommandLine(env, "/run/x/varnish.vcl"), " ")
	for _, s := range []string{"varnishd -F ", "-n /run/x/varnish ", "-a 127.0.0.1:8080 ", "-f /run/x/varnish.vcl ", "-s malloc,256m ", "-p thread_pools=1"} {
		if !strings.Contains(argv+" ", s) {
			t.Errorf("varnishd's command line lacks %q: %s", s, argv)
		}
	}
	text, err := peers.CacheOrigin().Config(env)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"root /srv/root;", "expires 1h;", "location = " + peers.UpstreamStatusPath, "stub_status;", "access_log off;"} {
		if !strings.Contains(text, s) {
			t.Errorf("the origin's configuration lacks %q:\n%s", s, text)
		}
	}
}

// cacheHit reads each server's own account of a hit, and nothing else.
func TestCacheHit(t *testing.T) {
	for _, c := range []struct {
		name, field, value string
		want               bool
	}{
		{"sluice-cache", "Cache-Status", "Sluice; hit; ttl=3599", true},
		{"sluice-cache", "Cache-Status", "Sluice; hit", true},
		{"sluice-cache", "Cache-Status", "Sluice; fwd=uri-miss; fwd-status=200; stored; ttl=3600", false},
		{"sluice-cache", "Cache-Status", "Sluice; fwd=miss; detail=hit", false},
		{"sluice-cache", "Cache-Status", "hit", false},
		{"sluice-cache", "Cache-Status", "", false},
		{"nginx-cache", "X-Cache-Status", "HIT", true},
		{"nginx-cache", "X-Cache-Status", "MISS", false},
		{"nginx-cache", "X-Cache-Status", "EXPIRED", false},
		{"nginx-cache", "Cache-Status", "Sluice; hit", false},
		{"varnish", "X-Varnish", "32770 3", true},
		{"varnish", "X-Varnish", "32770", false},
		{"varnish", "X-Varnish", "", false},
		{"sluice-proxy", "Cache-Status", "Sluice; hit", false},
	} {
		h := http.Header{}
		if c.value != "" {
			h.Set(c.field, c.value)
		}
		if got := cacheHit(c.name, h); got != c.want {
			t.Errorf("cacheHit(%s, %s: %q) = %v, want %v", c.name, c.field, c.value, got, c.want)
		}
	}
}

func TestParseStubRequests(t *testing.T) {
	n, err := parseStubRequests("Active connections: 3 \nserver accepts handled requests\n 1207 1207 531442 \nReading: 0 Writing: 1 Waiting: 2 \n")
	if err != nil || n != 531442 {
		t.Errorf("parseStubRequests = %d, %v; want 531442", n, err)
	}
	if _, err := parseStubRequests("<html>404</html>"); err == nil {
		t.Error("parseStubRequests of a page that is not stub_status: no error")
	}
}

// The origin answers each object byte for byte with max-age=3600 and an
// ETag, whatever the query, and its stub_status counts the requests:
// originRequests, read before and after three requests, differs by those
// three and the second reading's own.
func TestOriginPeer(t *testing.T) {
	sluicetest.NeedTool(t, "nginx", "Debian package nginx")
	o, root := startTestOrigin(t)
	env := o.Env
	r0, err := originRequests(env.Addr())
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{cacheObjects[0].path, cacheObjects[1].path + "?miss=x-1", cacheObjects[1].path + "?miss=x-2"} {
		want, err := os.ReadFile(filepath.Join(root, strings.TrimPrefix(strings.Split(path, "?")[0], "/")))
		if err != nil {
			t.Fatal(err)
		}
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + env.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != string(want) || resp.Header.Get("Cache-Control") != "max-age=3600" || resp.Header.Get("ETag") == "" {
			t.Errorf("GET %s: %s, Cache-Control %q, ETag %q, %d bytes; want 200, max-age=3600, an ETag and the %d-byte file", path, resp.Status,
				resp.Header.Get("Cache-Control"), resp.Header.Get("ETag"), len(body), len(want))
		}
	}
	r1, err := originRequests(env.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if r1-r0-1 != 3 {
		t.Errorf("requests %d then %d: %d counted between, want 3", r0, r1, r1-r0-1)
	}
}

// TestCachePeers starts every cache of the cache scenario in front of an
// origin that counts what it is asked, and checks what the harness
// relies on: each answers each object byte for byte, its second answer
// is a hit by its own account, and only the first reached the origin.
// Varnish, which no other test needs, is skipped where it is not
// installed (CI does not install it).
func TestCachePeers(t *testing.T) {
	root := t.TempDir()
	if err := makeDocroot(root); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	asked := map[string]int{}
	origin := sluicetest.NewServer(t, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		mu.Lock()
		asked[string(r.Path)]++
		mu.Unlock()
		name := filepath.Base(string(r.Path))
		if string(r.Path) == "/" {
			name = "index.html" // the peers' start probe
		}
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			w.WriteHeader(404)
			return
		}
		w.Header().Set("Cache-Control", "max-age=3600")
		w.Write(data)
	}))
	tools := map[string][2]string{
		"nginx-cache": {"nginx", "Debian package nginx"},
		"varnish":     {"varnishd", "Debian package varnish"},
	}
	for _, p := range peers.Caches() {
		t.Run(p.Name, func(t *testing.T) {
			port, err := machine.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			env := peers.Env{Dir: phpTestDir(t), Host: "127.0.0.1", Port: port, NoFile: machine.RaiseNofile(),
				Upstream: origin.Addr, IdleConns: proxyIdleConns}
			addr := env.Addr()
			if p.Name == "sluice-cache" {
				addr = startSluiceConfig(t, p, env)
			} else {
				tool, ok := tools[p.Name]
				if !ok {
					t.Fatalf("no program known for %s", p.Name)
				}
				if p.Name == "varnish" {
					if _, err := exec.LookPath(tool[0]); err != nil {
						t.Skipf("%s (%s) is not installed", tool[0], tool[1])
					}
				} else {
					sluicetest.NeedTool(t, tool[0], tool[1])
				}
				srv, err := peers.Start(p, env, allCPUs())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(srv.Stop)
			}
			for _, obj := range cacheObjects {
				want, err := os.ReadFile(filepath.Join(root, strings.TrimPrefix(obj.path, "/")))
				if err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				before := asked[obj.path]
				mu.Unlock()
				if err := checkCached(addr, obj.path, want, p.Name, true); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				n := asked[obj.path] - before
				mu.Unlock()
				if n != 1 {
					t.Errorf("%s: two GETs reached the origin %d times, want once", obj.path, n)
				}
			}
		})
	}
}

// The miss script asks for the object with a distinct query string on
// every request: every request wrk makes is a new key.
func TestMissScript(t *testing.T) {
	wrk := sluicetest.NeedTool(t, "wrk", "Debian package wrk")
	var mu sync.Mutex
	seen := map[string]int{}
	paths := map[string]bool{}
	srv := sluicetest.NewServer(t, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		mu.Lock()
		seen[string(r.Query)]++
		paths[string(r.Path)] = true
		mu.Unlock()
		w.WriteString("ok\n")
	}))
	script := filepath.Join(t.TempDir(), "miss.lua")
	if err := os.WriteFile(script, []byte(missScript("/size-102400.bin", "sluice-cache-2")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(wrk, "-t1", "-c4", "-d1s", "-s", script, "http://"+srv.Addr+"/").CombinedOutput()
	if err != nil {
		t.Fatalf("wrk: %v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 100 {
		t.Fatalf("wrk made %d distinct requests in a second:\n%s", len(seen), out)
	}
	for q, n := range seen {
		if n != 1 || !strings.HasPrefix(q, "miss=sluice-cache-2-") {
			t.Errorf("query %q asked %d times; want each once, miss=sluice-cache-2-N", q, n)
		}
	}
	if len(paths) != 1 || !paths["/size-102400.bin"] {
		t.Errorf("paths asked: %v", paths)
	}
}

// cacheObjects are the docroot's 4 KB page and 100 KB file, the sizes
// the report labels.
func TestCacheObjects(t *testing.T) {
	root := t.TempDir()
	if err := makeDocroot(root); err != nil {
		t.Fatal(err)
	}
	for _, obj := range cacheObjects {
		fi, err := os.Stat(filepath.Join(root, strings.TrimPrefix(obj.path, "/")))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != int64(obj.size) {
			t.Errorf("%s: %d bytes; want %d", obj.path, fi.Size(), obj.size)
		}
	}
}

// fillStore sends misses until the origin has answered enough to fill a
// cacheStore-byte store and a tenth more, and says so when the server is
// gone. Here the origin stands in for the cache: every miss reaches it.
func TestFillStore(t *testing.T) {
	sluicetest.NeedTool(t, "nginx", "Debian package nginx")
	sluicetest.NeedTool(t, "wrk", "Debian package wrk")
	o, _ := startTestOrigin(t)
	env := o.Env
	h := &harness{ctx: context.Background(), o: options{quick: true, clientCPU: allCPUs()}, tmp: t.TempDir()}
	if err := os.Mkdir(filepath.Join(h.tmp, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	obj := cacheObjects[1]
	r0, err := originRequests(env.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.fillStore(o, o, obj.path, obj.size, "fill-test"); err != nil {
		t.Fatal(err)
	}
	r1, err := originRequests(env.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if need := int64(cacheStore/obj.size) * 11 / 10; r1-r0 < need {
		t.Errorf("the origin answered %d requests while filling, want at least %d", r1-r0, need)
	}
	o.Stop()
	if err := h.fillStore(o, o, obj.path, obj.size, "fill-gone"); err == nil {
		t.Error("filling through a server that is gone: no error")
	}
}

// startTestOrigin starts the cache scenario's origin on a docroot of its
// own, stopped when the test ends, and returns it with the docroot.
func startTestOrigin(t *testing.T) (*peers.Server, string) {
	t.Helper()
	root := phpTestDir(t) // nginx's worker (nobody, under root) reads it
	if err := makeDocroot(root); err != nil {
		t.Fatal(err)
	}
	port, err := machine.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	env := peers.Env{Dir: t.TempDir(), Root: root, Host: "127.0.0.1", Port: port, NoFile: 1024}
	o, err := peers.Start(peers.CacheOrigin(), env, allCPUs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Stop)
	return o, root
}
