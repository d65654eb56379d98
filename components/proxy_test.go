package components_test

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/sluicetest"
)

// The proxy component, from a config file: the scalar form and the map
// form with three upstreams and a policy; filters and pipes after it
// (compress, headers, log) act on the upstream's response.
func TestProxyComponent(t *testing.T) {
	var urls []string
	for i := range 3 {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("X-Powered-By", "app")
			fmt.Fprintf(w, "upstream %d %s %s", i, r.URL.Path, strings.Repeat("padding ", 40))
		}))
		t.Cleanup(s.Close)
		urls = append(urls, s.URL)
	}
	accessLog := filepath.Join(t.TempDir(), "access.log")
	cfg, err := (&config.Loader{}).Parse("site.yaml", []byte(fmt.Sprintf(`
routes:
  - match: /one/
    pipeline:
      - proxy: %s
  - match: /api/
    pipeline:
      - log: %s
      - proxy: {upstreams: [%s, %s, %s], policy: round_robin, strip_prefix: /api, retries: 1, max_conns: 10, connect_timeout: 2s}
      - headers: {remove: [X-Powered-By], set: {X-Proxied: "yes"}}
      - compress: [gzip]
`, urls[0], accessLog, urls[0], urls[1], urls[2])))
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	srv := sluicetest.NewServer(t, cfg.Handler())

	resp, body := sluicetest.Get(t, srv.URL+"/one/x")
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "upstream 0 /one/x ") {
		t.Fatalf("scalar form: %d %q", resp.StatusCode, body)
	}
	seen := map[string]bool{}
	for range 3 {
		resp, body := sluicetest.Get(t, srv.URL+"/api/users", "Accept-Encoding", "gzip")
		if resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("X-Proxied") != "yes" || resp.Header.Get("X-Powered-By") != "" {
			t.Fatalf("filters after the proxy: header %v", resp.Header)
		}
		zr, err := gzip.NewReader(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := io.ReadAll(zr)
		seen[string(plain[:len("upstream 0 /users")])] = true
	}
	if len(seen) != 3 || !seen["upstream 1 /users"] {
		t.Fatalf("round robin over three upstreams with the prefix stripped: %v", seen)
	}
	cfg.Close() // flushes the log
	logged, _ := os.ReadFile(accessLog)
	if n := strings.Count(string(logged), `"GET /api/users HTTP/1.1" 200 `); n != 3 {
		t.Fatalf("the log after the proxy saw %d of 3 proxied responses:\n%s", n, logged)
	}
}

func TestProxyComponentErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"proxy: ftp://x", "site.yaml:5:9: proxy: upstream \"ftp://x\": the scheme must be http"},
		{"proxy: 127.0.0.1:9001", "site.yaml:5:9: proxy: upstream \"127.0.0.1:9001\": no scheme: write http://127.0.0.1:9001"},
		{"proxy: {upstreams: [localhost:9001]}", "site.yaml:5:9: proxy: upstream \"localhost:9001\": no scheme: write http://localhost:9001"},
		{"proxy: \"[::1]:9001\"", "site.yaml:5:9: proxy: upstream \"[::1]:9001\": no scheme: write http://[::1]:9001"},
		{"proxy: backend", "site.yaml:5:9: proxy: upstream \"backend\": no scheme: write http://backend"},
		{"proxy: http//127.0.0.1:9001", "site.yaml:5:9: proxy: upstream \"http//127.0.0.1:9001\": no scheme (it is written http:// with a colon and two slashes): write http://127.0.0.1:9001"},
		{"proxy: http:/127.0.0.1:9001", "proxy: upstream \"http:/127.0.0.1:9001\": no scheme (it is written http:// with a colon and two slashes): write http://127.0.0.1:9001"},
		{"proxy: 127.0.0.1:9001/api", "proxy: upstream \"127.0.0.1:9001/api\": no scheme (it is written http:// with a colon and two slashes): write http://127.0.0.1:9001"},
		{"proxy: http://127.0.0.1:9001/api/", "site.yaml:5:9: proxy: upstream \"http://127.0.0.1:9001/api/\": an upstream has no path, the proxy sends each request's own: write http://127.0.0.1:9001 (strip_prefix removes"},
		{"proxy: /run/app.sock", "proxy: upstream \"/run/app.sock\": a Unix socket is written with its scheme: write unix:/run/app.sock"},
		{"proxy: http://127.0.0.1:9001?x=1", "want http://host:port, without user, path or query"},
		{"proxy: [https://a, http://b]", "site.yaml:5:9: proxy: upstreams mix https:// and http://"},
		{"proxy: {upstreams: [http://a], transport: h3}", `transport "h3": want http, https, h2c or h2`},
		{"proxy: {upstreams: [http://127.0.0.1:1], policy: fastest}", `policy "fastest"`},
		{"proxy: {upstreams: [http://127.0.0.1:1], timeout: 1s}", "timeout"},
	} {
		_, err := (&config.Loader{}).Parse("site.yaml", []byte("routes:\n  - match: /\n    pipeline:\n\n      - "+c.yaml+"\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.yaml, err, c.want)
		}
	}
}

// A WebSocket tunnelled by the proxy component passes the pipes and
// filters around it: headers adjusts the 101, and log records it.
func TestProxyComponentWebSocket(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		typ, msg, err := ws.Read(r.Context())
		if err == nil {
			ws.Write(r.Context(), typ, msg)
		}
		ws.Read(r.Context()) // until the client closes
	}))
	t.Cleanup(app.Close)
	accessLog := filepath.Join(t.TempDir(), "access.log")
	cfg, err := (&config.Loader{}).Parse("site.yaml", []byte(fmt.Sprintf(`
routes:
  - match: /
    pipeline:
      - log: %s
      - proxy: %s
      - headers: {set: {X-Tunnel: "yes"}}
      - compress: [gzip]
`, accessLog, app.URL)))
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, cfg.Handler())
	ctx, cancel := context.WithTimeout(context.Background(), sluicetest.WaitTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/chat", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("X-Tunnel") != "yes" {
		t.Errorf("101 without the headers filter's field: %v", resp.Header)
	}
	ws.Write(ctx, websocket.MessageText, []byte("hi"))
	if _, msg, err := ws.Read(ctx); err != nil || string(msg) != "hi" {
		t.Fatalf("echo: %q, %v", msg, err)
	}
	ws.Close(websocket.StatusNormalClosure, "")
	sluicetest.WaitFor(t, "the log line", func() bool {
		b, _ := os.ReadFile(accessLog)
		return strings.Contains(string(b), `"GET /chat HTTP/1.1" 101 `)
	})
	cfg.Close()
}

// A proxy that does not verify its upstreams' certificates is warned
// about, where sluice check shows it; tls file paths are relative to the
// config file, and one that names no CA is refused with its position.
func TestProxyTLSConfig(t *testing.T) {
	dir := t.TempDir()
	ca := sluicetest.NewCA(t)
	caFile := ca.WriteFiles(t, dir)
	rel, err := filepath.Rel(dir, caFile)
	if err != nil {
		t.Fatal(err)
	}
	site := filepath.Join(dir, "site.yaml")
	parse := func(proxy string) (*config.Config, error) {
		return (&config.Loader{}).Parse(site, []byte("routes:\n  - match: /\n    pipeline:\n      - "+proxy+"\n"))
	}
	cfg, err := parse("proxy: {upstreams: [https://127.0.0.1:1], tls: {insecure_skip_verify: true}}")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].Msg, "insecure_skip_verify") || !strings.Contains(cfg.Warnings[0].Msg, "tls.ca") {
		t.Errorf("warnings %v: want one about insecure_skip_verify naming tls.ca", cfg.Warnings)
	}
	cfg, err = parse("proxy: {upstreams: [https://127.0.0.1:1], transport: h2, tls: {ca: " + rel + ", server_name: backend}}")
	if err != nil || len(cfg.Warnings) != 0 {
		t.Fatalf("a relative CA path: %v, warnings %v", err, cfg.Warnings)
	}
	_, err = parse("proxy: {upstreams: [https://127.0.0.1:1], tls: {ca: nothing.pem}}")
	if err == nil || !strings.Contains(err.Error(), "site.yaml:4:9: proxy: tls ca") || !strings.Contains(err.Error(), filepath.Join(dir, "nothing.pem")) {
		t.Errorf("a missing CA file: %v", err)
	}
}
