package main_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// adminClient is an HTTP client of the admin API on a Unix socket.
type adminClient struct {
	c    *http.Client
	base string
	auth string
}

func unixAdmin(path string) *adminClient {
	return &adminClient{c: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}, base: "http://admin"}
}

// do sends method path with body and returns the status and the body.
func (a *adminClient) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, a.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if a.auth != "" {
		req.Header.Set("Authorization", a.auth)
	}
	resp, err := a.c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// adminSite is a config with the admin API on sock, listening on
// listen, with workers, a text route and a cache behind cache_purge.
func adminSite(listen, sock, state string, workers int, extra string) string {
	return fmt.Sprintf(`listen: %s
workers: %d
health: {interval: 100ms, timeout: 1s}
admin: {socket: %s, state: %s}
routes:
  - match: /
    pipeline:
      - text: "home\n"
%s`, listen, workers, sock, state, extra)
}

const newRoute = `  - match: /new
    pipeline:
      - text: "new\n"
`

// slowBackend starts a backend whose every response, 10 bytes long,
// sends "first" at once and "-last" only once release is called (or the
// test ends); it returns the backend's URL. The test's cleanup releases
// the responses, then stops the backend.
func slowBackend(t *testing.T) (url string, release func()) {
	ch := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		io.WriteString(w, "first")
		w.(http.Flusher).Flush()
		<-ch
		io.WriteString(w, "-last")
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(release)
	return slow.URL, release
}

// slowRequest sends GET /slow to addr on a connection of its own, for a
// route to a slowBackend, and returns the connection once the first half
// of the response has come; the test's cleanup closes it.
func slowRequest(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /slow HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	buf := make([]byte, 4096)
	for got := ""; !strings.HasSuffix(got, "first"); {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("the long request: %v after %q", err, got)
		}
		got += string(buf[:n])
	}
	return c
}

// The admin API of a server in one process: its socket's mode, the
// running config, a bad config refused with its lines while the old
// serves, a good one applied while a long request on the old finishes,
// and --resume after a restart.
func TestAdminOneProcess(t *testing.T) {
	slow, release := slowBackend(t)
	dir := t.TempDir()
	file, sock, state := filepath.Join(dir, "site.yaml"), filepath.Join(dir, "admin.sock"), filepath.Join(dir, "state.json")
	slowRoute := "  - match: /slow\n    pipeline:\n      - proxy: " + slow + "\n"
	writeConfig(t, file, adminSite("127.0.0.1:0", sock, state, 0, slowRoute))
	s := start(t, "serve", "-c", file)
	s.waitLog(t, "admin API listening", 1)
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("the admin socket: %v, %v; want a socket with mode 0600", fi.Mode(), err)
	}
	a := unixAdmin(sock)
	var cfg struct{ File, YAML string }
	code, body := a.do(t, "GET", "/config", "")
	if json.Unmarshal([]byte(body), &cfg); code != 200 || cfg.File != file || !strings.Contains(cfg.YAML, "match: /slow") {
		t.Fatalf("GET /config = %d %s", code, body)
	}

	// A bad config: 400 with each error's file and line; the old serves.
	code, body = a.do(t, "POST", "/load", adminSite(s.addr, sock, state, 0, "  - match: /x\n    pipeline: [{txet: x}]\n"))
	var e struct {
		Error  string
		Errors []struct {
			File    string
			Line    int
			Message string
		}
	}
	if json.Unmarshal([]byte(body), &e); code != 400 || len(e.Errors) != 1 || e.Errors[0].File != file || e.Errors[0].Line != 10 || !strings.Contains(e.Errors[0].Message, `unknown component "txet"`) {
		t.Errorf("POST /load of a bad config = %d %s", code, body)
	}
	if code, _, body := get(t, "http://"+s.addr+"/"); code != 200 || body != "home\n" {
		t.Errorf("after a bad load, GET / = %d %q", code, body)
	}

	// A long request under way on the old config survives the load.
	c := slowRequest(t, s.addr)
	next := adminSite(s.addr, sock, state, 0, slowRoute+newRoute)
	if code, body := a.do(t, "POST", "/load", next); code != 200 {
		t.Fatalf("POST /load = %d %s\n%s", code, body, s.stderr())
	}
	if code, _, body := get(t, "http://"+s.addr+"/new"); code != 200 || body != "new\n" {
		t.Errorf("after the load, GET /new = %d %q", code, body)
	}
	release()
	rest, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(rest), "-last") {
		t.Errorf("the long request across the load ended with %q, want -last", rest)
	}
	if !strings.Contains(s.stderr(), `msg="admin: config loaded" by="uid=`) {
		t.Errorf("the log does not say who loaded the config:\n%s", s.stderr())
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d\n%s", code, s.stderr())
	}
	if _, err := os.Lstat(sock); err == nil {
		t.Errorf("the socket outlived the server")
	}

	// --resume starts from the loaded config; without it the file wins.
	s = start(t, "serve", "-c", file, "--resume")
	if code, _, body := get(t, "http://"+s.addr+"/new"); code != 200 || body != "new\n" {
		t.Errorf("with --resume, GET /new = %d %q\n%s", code, body, s.stderr())
	}
	if !strings.Contains(s.stderr(), "resuming from the admin API's saved state") {
		t.Errorf("the log does not say it resumes:\n%s", s.stderr())
	}
	s.stop(t, syscall.SIGTERM)
	s = start(t, "serve", "-c", file)
	if code, _, body := get(t, "http://"+s.addr+"/new"); body != "home\n" {
		t.Errorf("without --resume, GET /new = %d %q, want the file's config's home", code, body)
	}
	s.stop(t, syscall.SIGTERM)
}

// --resume without an admin section is refused.
func TestResumeNeedsAdmin(t *testing.T) {
	file := filepath.Join(t.TempDir(), "site.yaml")
	writeConfig(t, file, "listen: 127.0.0.1:0\nroutes:\n  - match: /\n    pipeline: [{text: hi}]\n")
	r := sluice(t, "serve", "-c", file, "--resume")
	if r.code != 1 || !strings.Contains(r.stderr, "has no admin section") {
		t.Errorf("serve --resume without admin = %d %s", r.code, r.stderr)
	}
}

// On a TCP address the API wants a token: none or a wrong one is 401.
func TestAdminTokens(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	port := sluicetest.FreePort(t)
	writeConfig(t, file, fmt.Sprintf(`listen: 127.0.0.1:0
admin: {listen: 127.0.0.1:%d, tokens: {ci: 0123456789abcdef0123}, state: %s}
routes:
  - match: /
    pipeline: [{text: hi}]
`, port, filepath.Join(dir, "state.json")))
	s := start(t, "serve", "-c", file)
	s.waitLog(t, "admin API listening", 1)
	a := &adminClient{c: http.DefaultClient, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	for _, tt := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer 0123456789abcdef0124", 401}, {"Bearer 0123456789abcdef0123", 200}} {
		a.auth = tt.auth
		if code, body := a.do(t, "GET", "/config", ""); code != tt.want {
			t.Errorf("Authorization %q: %d %s, want %d", tt.auth, code, body, tt.want)
		}
	}
	s.stop(t, syscall.SIGTERM)
}

// With workers the API runs in the master: a posted config reaches
// every worker, a bad one is refused while the old serves, a purge
// reaches every worker's cache, and an upstream change is asked of
// every worker.
func TestAdminWorkers(t *testing.T) {
	needWorkers(t)
	var version atomic.Value
	version.Store("v1")
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, version.Load().(string))
	}))
	defer origin.Close()
	slow, release := slowBackend(t)
	dir := t.TempDir()
	file, sock, state := filepath.Join(dir, "site.yaml"), filepath.Join(dir, "admin.sock"), filepath.Join(dir, "state.json")
	cached := "  - match: /c\n    pipeline:\n      - cache: {}\n      - proxy: " + origin.URL + "\n" +
		"  - match: /slow\n    pipeline:\n      - proxy: " + slow + "\n"
	writeConfig(t, file, adminSite("127.0.0.1:0", sock, state, 2, cached))
	s := start(t, "serve", "-c", file)
	s.waitLog(t, "workers ready", 1)
	s.waitLog(t, "admin API listening", 1)
	a := unixAdmin(sock)

	code, body := a.do(t, "POST", "/load", adminSite(s.addr, sock, state, 2, "  - match: /x\n    pipeline: [{txet: x}]\n"))
	if code != 400 || !strings.Contains(body, `"line":10`) {
		t.Errorf("POST /load of a bad config = %d %s", code, body)
	}

	// Both workers store v1, then a purge through the API reaches both.
	for i := 0; i < 50; i++ {
		if _, body := getOnce(t, s.addr, "GET", "/c"); body != "v1" {
			t.Fatalf("GET /c = %q", body)
		}
	}
	version.Store("v2")
	code, body = a.do(t, "POST", "/purge", `{"host": "`+s.addr+`", "urls": ["/c"]}`)
	var p struct{ Purged, Processes int }
	if json.Unmarshal([]byte(body), &p); code != 200 || p.Processes != 2 || p.Purged < 1 {
		t.Errorf("POST /purge = %d %s, want both workers", code, body)
	}
	for i := 0; i < 50; i++ {
		if _, body := getOnce(t, s.addr, "GET", "/c"); body != "v2" {
			t.Fatalf("after the purge, a worker answered %q", body)
		}
	}

	// Upstream changes are asked of every worker; none has a set "nope".
	if code, body := a.do(t, "GET", "/upstreams", ""); code != 200 || !strings.Contains(body, `"sets":`) {
		t.Errorf("GET /upstreams = %d %s", code, body)
	}
	if code, body := a.do(t, "PATCH", "/upstreams/nope", `{"remove": ["http://127.0.0.1:1"]}`); code != 404 {
		t.Errorf("PATCH /upstreams/nope = %d %s, want 404", code, body)
	}

	// A good config: answered once the new workers serve it; a long
	// request under way on an old worker finishes there; every
	// connection reaches the new config after.
	c := slowRequest(t, s.addr)
	if code, body := a.do(t, "POST", "/load", adminSite(s.addr, sock, state, 2, cached+newRoute)); code != 200 {
		t.Fatalf("POST /load = %d %s\n%s", code, body, s.stderr())
	}
	release()
	if rest, _ := io.ReadAll(c); !strings.HasPrefix(string(rest), "-last") {
		t.Errorf("the long request across the load ended with %q, want -last", rest)
	}
	// The old workers stop accepting as their drain begins, a moment
	// after the answer; holding nothing, they then exit.
	s.waitLog(t, "worker stopped", 2)
	for i := 0; i < 50; i++ {
		if code, body := getOnce(t, s.addr, "GET", "/new"); code != 200 || body != "new\n" {
			t.Fatalf("after the load, GET /new = %d %q", code, body)
		}
	}
	var cfg struct{ YAML string }
	if _, body := a.do(t, "GET", "/config", ""); json.Unmarshal([]byte(body), &cfg) != nil || !strings.Contains(cfg.YAML, "match: /new") {
		t.Errorf("GET /config after the load: %s", body)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit %d\n%s", code, s.stderr())
	}

	// The master resumes too.
	s = start(t, "serve", "-c", file, "--resume")
	s.waitLog(t, "workers ready", 1)
	if code, body := getOnce(t, s.addr, "GET", "/new"); code != 200 || body != "new\n" {
		t.Errorf("with --resume, GET /new = %d %q", code, body)
	}
	s.stop(t, syscall.SIGTERM)
}

// Under a bounded load of many keep-alive clients, half of them through
// a proxy, upstream sets changed, configs loaded and caches purged
// through the API, one after another, fail no request: in one process
// and with workers. SLUICE_ADMIN_LOAD_SECONDS sets how
// long (default 3 s, kept short for CI; the figures are logged).
func TestAdminUnderLoad(t *testing.T) {
	seconds := 3
	if s := os.Getenv("SLUICE_ADMIN_LOAD_SECONDS"); s != "" {
		fmt.Sscan(s, &seconds)
	}
	for _, workers := range []int{0, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			if workers > 0 {
				needWorkers(t)
			}
			var backends [2]string
			for i := range backends {
				b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "up") }))
				defer b.Close()
				backends[i] = b.URL
			}
			proxied := "  - match: /p\n    pipeline:\n      - proxy: {name: app, upstreams: [" + backends[0] + "]}\n"
			dir := t.TempDir()
			file, sock, state := filepath.Join(dir, "site.yaml"), filepath.Join(dir, "admin.sock"), filepath.Join(dir, "state.json")
			// A port of its own from the start: a reload from port 0 to
			// the port it got would move the listener (in one process).
			writeConfig(t, file, adminSite(fmt.Sprintf("127.0.0.1:%d", sluicetest.FreePort(t)), sock, state, workers, proxied))
			s := start(t, "serve", "-c", file)
			s.waitLog(t, "admin API listening", 1)
			a := unixAdmin(sock)

			// 32 clients, half of them on /, half through the proxy.
			get := func(path string) func(*http.Client) error {
				return func(c *http.Client) error {
					resp, err := c.Get("http://" + s.addr + path)
					if err == nil {
						_, err = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if err == nil && resp.StatusCode != 200 {
							err = fmt.Errorf("status %d", resp.StatusCode)
						}
					}
					return err
				}
			}
			client := func() *http.Client {
				return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			}
			onRoot, onProxy := sluicetest.StartLoad(t, 16, client, get("/")), sluicetest.StartLoad(t, 16, client, get("/p"))
			begin := time.Now()
			loads, changes := 0, 0
			for i := 0; time.Since(begin) < time.Duration(seconds)*time.Second; i++ {
				// Three upstream changes, a purge, then a load, which
				// brings back the config's set.
				if i%5 == 4 {
					route := fmt.Sprintf("  - match: /v%d\n    pipeline:\n      - text: \"v%d\\n\"\n", i, i)
					if code, body := a.do(t, "POST", "/load", adminSite(s.addr, sock, state, workers, proxied+route)); code != 200 {
						t.Errorf("POST /load %d = %d %s", i, code, body)
					}
					loads++
					continue
				}
				change := `{"hosts": [{"name": "` + backends[i%2] + `"}]}`
				method := "PUT"
				if i%5 == 1 {
					method, change = "PATCH", `{"add": [{"name": "`+backends[0]+`", "weight": 2}, {"name": "`+backends[1]+`", "drain": false}]}`
				}
				if code, body := a.do(t, method, "/upstreams/app", change); code != 200 {
					t.Errorf("%s /upstreams/app %s = %d %s", method, change, code, body)
				}
				changes++
				if code, body := a.do(t, "POST", "/purge", `{"host": "`+s.addr+`", "prefixes": ["/"]}`); code != 200 {
					t.Errorf("POST /purge = %d %s", code, body)
				}
			}
			okRoot, failedRoot, firstRoot := onRoot.Stop()
			okProxy, failedProxy, firstProxy := onProxy.Stop()
			ok, failed, first := okRoot+okProxy, failedRoot+failedProxy, cmp.Or(firstRoot, firstProxy)
			elapsed := time.Since(begin)
			t.Logf("%d requests in %v (%.0f/s) across %d upstream changes and %d loads, %d failed", ok, elapsed.Round(time.Millisecond), float64(ok)/elapsed.Seconds(), changes, loads, failed)
			if failed > 0 {
				t.Errorf("%d requests failed, the first: %v", failed, first)
			}
			if ok == 0 || loads < 2 {
				t.Errorf("%d requests served, %d loads: the load did not run", ok, loads)
			}
			s.stop(t, syscall.SIGTERM)
		})
	}
}

// A proxy's upstream set changed through the API while clients keep
// requesting through it: no request fails, once a change is answered
// every process (each worker, with workers) follows it, and --resume
// brings the changed set back after a restart.
func TestAdminUpstreams(t *testing.T) {
	for _, workers := range []int{0, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			if workers > 0 {
				needWorkers(t)
			}
			testAdminUpstreams(t, workers)
		})
	}
}

func testAdminUpstreams(t *testing.T, workers int) {
	backend := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, name) }))
		t.Cleanup(s.Close)
		return s
	}
	a, b := backend("a"), backend("b")
	dir := t.TempDir()
	file, sock, state := filepath.Join(dir, "site.yaml"), filepath.Join(dir, "admin.sock"), filepath.Join(dir, "state.json")
	proxied := "  - match: /p\n    pipeline:\n      - proxy: {name: app, upstreams: [" + a.URL + "]}\n"
	writeConfig(t, file, adminSite("127.0.0.1:0", sock, state, workers, proxied))
	s := start(t, "serve", "-c", file)
	if workers > 0 {
		s.waitLog(t, "workers ready", 1)
	}
	s.waitLog(t, "admin API listening", 1)
	api := unixAdmin(sock)

	load := sluicetest.StartLoad(t, 16, func() *http.Client {
		return &http.Client{Timeout: 30 * time.Second}
	}, func(c *http.Client) error {
		resp, err := c.Get("http://" + s.addr + "/p")
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil && (resp.StatusCode != 200 || (string(body) != "a" && string(body) != "b")) {
			err = fmt.Errorf("%d %q", resp.StatusCode, body)
		}
		return err
	})
	// every asks n new connections (which spread over the workers) and
	// checks that each is answered want.
	every := func(what, want string) {
		t.Helper()
		for range 40 {
			if code, body := getOnce(t, s.addr, "GET", "/p"); code != 200 || body != want {
				t.Fatalf("%s: GET /p = %d %q, want %q\n%s", what, code, body, want, s.stderr())
			}
		}
	}
	every("at the start", "a")
	if code, body := api.do(t, "PATCH", "/upstreams/app", `{"add": [{"name": "`+b.URL+`", "weight": 3}]}`); code != 200 || !strings.Contains(body, b.URL) {
		t.Fatalf("PATCH add = %d %s", code, body)
	}
	if code, body := api.do(t, "PATCH", "/upstreams/app", `{"add": [{"name": "`+a.URL+`", "drain": true}]}`); code != 200 || !strings.Contains(body, `"draining":true`) {
		t.Fatalf("PATCH drain = %d %s", code, body)
	}
	every("with a draining", "b")
	if code, body := api.do(t, "PUT", "/upstreams/app", `{"hosts": [{"name": "`+a.URL+`"}]}`); code != 200 {
		t.Fatalf("PUT = %d %s", code, body)
	}
	every("after PUT a", "a")
	if code, body := api.do(t, "PATCH", "/upstreams/app", `{"add": [{"name": "`+b.URL+`"}], "remove": ["`+a.URL+`"]}`); code != 200 {
		t.Fatalf("PATCH swap = %d %s", code, body)
	}
	every("after the swap", "b")
	if code, body := api.do(t, "PATCH", "/upstreams/app", `{"add": [{"name": "ftp://x"}]}`); code != 400 || !strings.Contains(body, `"error"`) {
		t.Errorf("PATCH of a host the proxy cannot serve = %d %s, want 400", code, body)
	}
	code, body := api.do(t, "GET", "/upstreams/app", "")
	if code != 200 || !strings.Contains(body, `"name":"`+b.URL+`"`) || strings.Contains(body, a.URL) || (workers > 0) != strings.Contains(body, `"worker":`) {
		t.Errorf("GET /upstreams/app = %d %s", code, body)
	}
	served, failed, first := load.Stop()
	t.Logf("%d requests through the proxy during the changes, %d failed", served, failed)
	if failed > 0 {
		t.Errorf("%d requests failed, the first: %v", failed, first)
	}
	if !strings.Contains(s.stderr(), `msg="admin: upstream set changed" by="uid=`) {
		t.Errorf("the log does not say who changed the set:\n%s", s.stderr())
	}
	s.stop(t, syscall.SIGTERM)

	s = start(t, "serve", "-c", file, "--resume")
	if workers > 0 {
		s.waitLog(t, "workers ready", 1)
	}
	every("after --resume", "b")
	s.stop(t, syscall.SIGTERM)
	s = start(t, "serve", "-c", file)
	if workers > 0 {
		s.waitLog(t, "workers ready", 1)
	}
	every("after a restart without --resume", "a")
	s.stop(t, syscall.SIGTERM)
}

// A binary upgrade carries on what the admin API applied: the new
// master serves the config loaded through it, takes the socket over, and
// the old master's exit leaves the new socket in place.
func TestAdminAcrossUpgrade(t *testing.T) {
	needWorkers(t)
	var sock, state string
	s, _, pidFile := upgradable(t, func(pidFile string) string {
		dir := filepath.Dir(pidFile)
		sock, state = filepath.Join(dir, "admin.sock"), filepath.Join(dir, "state.json")
		return adminSite("127.0.0.1:0", sock, state, 2, "pid_file: "+pidFile+"\n")
	})
	old := s.cmd.Process.Pid
	s.waitLog(t, "admin API listening", 1)
	a := unixAdmin(sock)
	next := adminSite(s.addr, sock, state, 2, newRoute+"pid_file: "+pidFile+"\n")
	if code, body := a.do(t, "POST", "/load", next); code != 200 {
		t.Fatalf("POST /load = %d %s", code, body)
	}
	s.cmd.Process.Signal(syscall.SIGUSR2)
	s.waitLog(t, "binary upgrade: new master started", 1)
	s.cmd.Wait() // the old master exits once the new one's workers serve
	if code, body := getOnce(t, s.addr, "GET", "/new"); code != 200 || body != "new\n" {
		t.Errorf("after the upgrade, GET /new = %d %q, want the loaded config's\n%s", code, body, s.stderr())
	}
	s.waitLog(t, "admin API listening", 2) // the new master's
	if c, err := net.Dial("unix", sock); err != nil {
		t.Fatalf("the new master's admin API: %v\n%s", err, s.stderr())
	} else {
		c.Close()
	}
	code, body := a.do(t, "GET", "/config", "")
	if code != 200 || !strings.Contains(body, "match: /new") {
		t.Errorf("GET /config from the new master = %d %s", code, body)
	}
	if pid := readPid(pidFile); pid == old || pid == 0 {
		t.Errorf("the pid file names %d", pid)
	}
	if r := sluice(t, "stop", "--pid-file", pidFile); r.code != 0 {
		t.Errorf("sluice stop = %d %q", r.code, r.stderr)
	}
}

// A reload that changes the admin section says it takes effect on a
// restart, in one process and in a master.
func TestAdminSectionChangeWarns(t *testing.T) {
	for _, workers := range []int{0, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			if workers > 0 {
				needWorkers(t)
			}
			dir := t.TempDir()
			file, sock, state := filepath.Join(dir, "site.yaml"), filepath.Join(dir, "admin.sock"), filepath.Join(dir, "state.json")
			listen := fmt.Sprintf("127.0.0.1:%d", sluicetest.FreePort(t))
			writeConfig(t, file, adminSite(listen, sock, state, workers, ""))
			s := start(t, "serve", "-c", file)
			s.waitLog(t, "admin API listening", 1)
			writeConfig(t, file, adminSite(listen, filepath.Join(dir, "other.sock"), state, workers, ""))
			s.cmd.Process.Signal(syscall.SIGHUP)
			s.waitLog(t, "the admin section changed; it takes effect on a restart", 1)
			if _, err := os.Stat(sock); err != nil {
				t.Errorf("the API's socket after the reload: %v", err)
			}
			s.stop(t, syscall.SIGTERM)
		})
	}
}
