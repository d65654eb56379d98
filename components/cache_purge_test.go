package components_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// purgeSite is a config served on 127.0.0.1: two caches ("pages" and
// "assets") before a proxy to an origin that counts its requests and
// tags its responses, a cache_purge before each, an endpoint, a status
// page and an access log.
type purgeSite struct {
	url, addr string
	hits      atomic.Int64 // requests the origin got
	log       string
	cfg       *config.Config
}

func newPurgeSite(t *testing.T, purge string) *purgeSite {
	t.Helper()
	s := &purgeSite{}
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.hits.Add(1)
		w.Header().Set("Cache-Control", "max-age=600")
		switch {
		case strings.HasPrefix(r.URL.Path, "/p/"):
			w.Header().Set("Cache-Tag", "product, "+strings.TrimPrefix(r.URL.Path, "/p/"))
		case strings.HasPrefix(r.URL.Path, "/assets/"):
			w.Header().Set("Surrogate-Key", "asset")
		}
		fmt.Fprintf(w, "%s #%d", r.URL.Path, n)
	}))
	t.Cleanup(origin.Close)
	dir := t.TempDir()
	s.log = filepath.Join(dir, "access.log")
	yaml := fmt.Sprintf(`
routes:
  - match: /status
    pipeline:
      - status
  - match: /metrics
    pipeline:
      - status: prometheus
  - match: /assets/
    pipeline:
      - log: {file: %[1]q, cache_status: true}
      - cache_purge: %[3]s
      - cache: {name: assets, size: 1MB}
      - proxy: %[2]s
  - match: /
    pipeline:
      - log: {file: %[1]q, format: json}
      - cache_purge: %[4]s
      - cache: {name: pages, size: 1MB}
      - proxy: %[2]s
`, s.log, origin.URL, "{"+purge+"}", "{"+strings.TrimSuffix("path: /.purge, "+purge, ", ")+"}")
	cfg, err := new(config.Loader).Parse(filepath.Join(dir, "site.yaml"), []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	s.cfg = cfg
	t.Cleanup(func() { cfg.Close() })
	srv := sluicetest.NewServer(t, cfg.Handler(), sluicetest.Configure(func(e *engine.Server) {
		e.ExtraMethods = cfg.ExtraMethods()
	}))
	s.url, s.addr = srv.URL, srv.Addr
	return s
}

// get fetches path and reports whether the origin was asked.
func (s *purgeSite) fetched(t *testing.T, path string) bool {
	t.Helper()
	before := s.hits.Load()
	resp, _ := sluicetest.Get(t, s.url+path)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	return s.hits.Load() != before
}

// purge sends method path (with fields) and returns the status and the
// number purged.
func (s *purgeSite) purge(t *testing.T, method, path, body string, fields ...string) (int, int) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		name, value, _ := strings.Cut(f, ": ")
		req.Header.Add(name, value)
	}
	resp, text := sluicetest.Do(t, req)
	var out struct{ Purged int }
	if resp.StatusCode == 200 {
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			t.Fatalf("%s %s: %q: %v", method, path, text, err)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Fatalf("Cache-Control %q", cc)
		}
	}
	return resp.StatusCode, out.Purged
}

func TestCachePurgeMethods(t *testing.T) {
	s := newPurgeSite(t, "")
	for _, p := range []string{"/a", "/a?x=1", "/p/1", "/p/2", "/assets/a.css", "/assets/b/c.js", "/other"} {
		if !s.fetched(t, p) || s.fetched(t, p) {
			t.Fatalf("%s: want a miss then a hit", p)
		}
	}
	// PURGE /a: the next request is a miss; /a?x=1 stays.
	if code, n := s.purge(t, "PURGE", "/a", ""); code != 200 || n != 1 {
		t.Fatalf("PURGE /a: %d, %d purged", code, n)
	}
	if !s.fetched(t, "/a") || s.fetched(t, "/a?x=1") {
		t.Fatal("PURGE /a: /a not a miss, or /a?x=1 not a hit")
	}
	// PURGE with Cache-Tag: exactly the tagged responses, in every cache.
	if code, n := s.purge(t, "PURGE", "/", "", "Cache-Tag: 2"); code != 200 || n != 1 {
		t.Fatalf("PURGE by tag 2: %d, %d purged", code, n)
	}
	if !s.fetched(t, "/p/2") || s.fetched(t, "/p/1") {
		t.Fatal("tag purge missed /p/2 or reached /p/1")
	}
	// BAN /assets/b: the prefix only.
	if code, n := s.purge(t, "BAN", "/assets/b", ""); code != 200 || n != 1 {
		t.Fatalf("BAN /assets/b: %d, %d purged", code, n)
	}
	if !s.fetched(t, "/assets/b/c.js") || s.fetched(t, "/assets/a.css") {
		t.Fatal("BAN /assets/b missed or overreached")
	}
	// POST to the endpoint: tags, urls and prefixes together.
	body := `{"tags": ["product", "asset"], "urls": ["/other"], "prefixes": ["` + s.url + `/a?"]}`
	if code, n := s.purge(t, "POST", "/.purge", body); code != 200 || n != 6 {
		t.Fatalf("POST: %d, %d purged; want 6", code, n)
	}
	for _, p := range []string{"/p/1", "/p/2", "/assets/a.css", "/assets/b/c.js", "/other", "/a?x=1"} {
		if !s.fetched(t, p) {
			t.Fatalf("%s still stored after the POST", p)
		}
	}
	if s.fetched(t, "/a") {
		t.Fatal("the prefix /a? purged /a")
	}
	// Only one cache by name.
	if code, n := s.purge(t, "POST", "/.purge", `{"cache": "assets", "tags": ["product", "asset"]}`); code != 200 || n != 2 {
		t.Fatalf("POST for the assets cache: %d, %d purged; want 2", code, n)
	}
	if s.fetched(t, "/p/1") || !s.fetched(t, "/assets/a.css") {
		t.Fatal("a purge of the assets cache reached pages, or missed assets")
	}
	// Bad requests.
	for _, tc := range []struct {
		method, path, body string
		want               int
	}{
		{"GET", "/.purge", "", 405},
		{"POST", "/.purge", "{", 400},
		{"POST", "/.purge", `{"urls": "/a"}`, 400},
		{"POST", "/.purge", `{"url": ["/a"]}`, 400},
		{"POST", "/.purge", `{"urls": ["ftp://x/a"]}`, 400},
		{"POST", "/.purge", `{"tags": ["a b"]}`, 400},
		{"POST", "/.purge", `{"cache": "nope", "tags": ["a"]}`, 404},
		// Just over the limit: what the server leaves unread fits its
		// lingering close, so the 413 reaches the client before any reset.
		{"POST", "/.purge", `{"tags": ["` + strings.Repeat("a", 1<<20+64<<10) + `"]}`, 413},
		{"POST", "/.purge", `{"urls": ["/` + strings.Repeat("a", 8<<10) + `"]}`, 400},
		{"POST", "/.purge", `{"prefixes": ["/` + strings.Repeat("a", 8<<10) + `"]}`, 400},
		{"PURGE", "/", "", 200},
		// Another host's responses are not this endpoint's to purge.
		{"POST", "/.purge", `{"urls": ["http://other.example/a"]}`, 403},
		{"POST", "/.purge", `{"prefixes": ["https://other.example/"]}`, 403},
		// Routes without a cache_purge refuse the methods, never pass
		// them on.
		{"PURGE", "/status", "", 405},
		{"BAN", "/metrics", "", 405},
	} {
		if code, _ := s.purge(t, tc.method, tc.path, tc.body); code != tc.want {
			t.Errorf("%s %s %.40q: %d, want %d", tc.method, tc.path, tc.body, code, tc.want)
		}
	}
}

// The endpoint is for loopback clients only unless allow says
// otherwise; behind trusted proxies, the forwarded address counts.
func TestCachePurgeClients(t *testing.T) {
	from := func(t *testing.T, s *purgeSite, local string, fields ...string) int {
		t.Helper()
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, s.addr)
		}}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest("PURGE", s.url+"/a", nil)
		for _, f := range fields {
			name, value, _ := strings.Cut(f, ": ")
			req.Header.Set(name, value)
		}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	t.Run("allow", func(t *testing.T) {
		s := newPurgeSite(t, "allow: [127.0.0.2]")
		if code := from(t, s, "127.0.0.2"); code != 200 {
			t.Fatalf("from an allowed address: %d", code)
		}
		if code := from(t, s, "127.0.0.1"); code != 403 {
			t.Fatalf("from 127.0.0.1, not in allow: %d, want 403", code)
		}
		if !s.fetched(t, "/x") || s.fetched(t, "/x") {
			t.Fatal("a refused client's GET is not served as usual")
		}
	})
	t.Run("loopback behind a proxy", func(t *testing.T) {
		// A proxy on this host makes every client look local: by
		// default, a forwarded request is refused.
		s := newPurgeSite(t, "")
		for _, field := range []string{"X-Forwarded-For: 192.0.2.7", "Forwarded: for=192.0.2.7", "X-Real-IP: 192.0.2.7"} {
			if code := from(t, s, "127.0.0.1", field); code != 403 {
				t.Fatalf("from 127.0.0.1 with %s: %d, want 403", field, code)
			}
		}
		if code := from(t, s, "127.0.0.1"); code != 200 {
			t.Fatalf("from 127.0.0.1 itself: %d, want 200", code)
		}
	})
	t.Run("trusted proxies", func(t *testing.T) {
		s := newPurgeSite(t, "trusted_proxies: [127.0.0.1]")
		if code := from(t, s, "127.0.0.1", "X-Forwarded-For: 192.0.2.7"); code != 403 {
			t.Fatalf("forwarded for a remote client: %d, want 403", code)
		}
		if code := from(t, s, "127.0.0.1", "X-Forwarded-For: 127.0.0.1"); code != 200 {
			t.Fatalf("forwarded for a loopback client: %d, want 200", code)
		}
		if code := from(t, s, "127.0.0.2", "X-Forwarded-For: 127.0.0.1"); code != 200 {
			// 127.0.0.2 is loopback but not trusted: its own address counts.
			t.Fatalf("from an untrusted loopback peer: %d, want 200", code)
		}
	})
}

// The counters of each cache appear on the status page and in
// Prometheus, and the cache status in the access log lines.
func TestCacheStatusAndLog(t *testing.T) {
	s := newPurgeSite(t, "")
	s.fetched(t, "/a")            // pages: miss
	s.fetched(t, "/a")            // pages: hit
	s.fetched(t, "/a")            // pages: hit
	s.fetched(t, "/assets/a.css") // assets: miss
	s.purge(t, "PURGE", "/a", "") // pages: purged 1 (a PASS? no: answered before the cache)
	sluicetest.Send(t, "POST", s.url+"/form")
	resp, body := sluicetest.Get(t, s.url+"/status?format=json")
	if resp.StatusCode != 200 {
		t.Fatalf("status: %d", resp.StatusCode)
	}
	var snap struct {
		Caches []map[string]any `json:"caches"`
	}
	if err := json.Unmarshal([]byte(body), &snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Caches) != 2 {
		t.Fatalf("caches: %v", snap.Caches)
	}
	byName := map[string]map[string]any{}
	for _, c := range snap.Caches {
		byName[c["name"].(string)] = c
	}
	pages := byName["pages"]
	for k, want := range map[string]float64{"hits": 2, "misses": 1, "passes": 1, "stored": 1, "purged": 1, "objects": 0, "bytes_served": 2 * float64(len("/a #1"))} {
		if pages[k] != want {
			t.Errorf("pages %s = %v, want %v (%v)", k, pages[k], want, pages)
		}
	}
	if a := byName["assets"]; a["misses"] != 1.0 || a["objects"] != 1.0 || a["bytes"].(float64) <= 0 {
		t.Errorf("assets: %v", a)
	}
	_, metrics := sluicetest.Get(t, s.url+"/metrics")
	for _, want := range []string{
		`sluice_cache_hits_total{cache="pages"} 2`,
		`sluice_cache_misses_total{cache="assets"} 1`,
		`sluice_cache_purged_total{cache="pages"} 1`,
		`sluice_cache_objects{cache="assets"} 1`,
		`sluice_cache_served_bytes_total{cache="pages"} 10`,
		"# TYPE sluice_cache_evictions_total counter",
		`sluice_cache_revalidations_total{cache="pages"} 0`,
		`sluice_cache_stores_total{cache="assets"} 1`,
		`sluice_cache_stale_total{cache="pages"} 0`,
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("metrics lack %q:\n%s", want, metrics)
		}
	}
	if m := regexp.MustCompile(`(?m)^sluice_cache_bytes\{cache="assets"\} [1-9][0-9]*$`).FindString(metrics); m == "" {
		t.Errorf("metrics lack the bytes of assets:\n%s", metrics)
	}
	_, page := sluicetest.Get(t, s.url+"/status?format=html")
	if !strings.Contains(page, "<h2>Caches</h2>") || !strings.Contains(page, "<tr><th>pages</th><td>2</td>") {
		t.Errorf("the HTML page lacks the caches:\n%s", page)
	}

	// The log lines: json for pages, combined with the status for assets.
	for _, st := range s.cfg.Routes {
		for _, stage := range st.Stages {
			if l, ok := stage.Component.(interface{ Sync() }); ok {
				l.Sync()
			}
		}
	}
	data, err := os.ReadFile(s.log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var statuses []string
	for _, line := range lines {
		if strings.HasPrefix(line, "{") {
			var rec struct {
				URI   string
				Cache *string
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			v := "(none)"
			if rec.Cache != nil {
				v = *rec.Cache
			}
			statuses = append(statuses, rec.URI+" "+v)
			continue
		}
		f := strings.Fields(line)
		statuses = append(statuses, strings.Trim(f[6], `"`)+" "+f[len(f)-1])
	}
	want := []string{"/a MISS", "/a HIT", "/a HIT", "/assets/a.css MISS", "/a (none)", "/form PASS"}
	// Two logs write the file, each in its own order: the lines of one
	// may land before those of the other that came first.
	slices.Sort(statuses)
	slices.Sort(want)
	if strings.Join(statuses, "\n") != strings.Join(want, "\n") {
		t.Fatalf("cache statuses in the log:\n%s\nwant:\n%s\nlog:\n%s", strings.Join(statuses, "\n"), strings.Join(want, "\n"), data)
	}
}

// cache_purge names a cache as the cache's name option does: any
// Structured Field token, not only an HTTP token.
func TestCachePurgeCacheName(t *testing.T) {
	for name, ok := range map[string]bool{"Sluice": true, "edge/pages": true, "a:b": true, "1st": false, "a b": false} {
		_, err := components.NewCachePurge(components.CachePurgeOptions{Cache: name})
		if (err == nil) != ok {
			t.Errorf("cache %q: err %v, want ok %v", name, err, ok)
		}
	}
}
