package config

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/fcgi"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/requestid"
	"github.com/sluice-server/sluice/sluicetest"
)

func TestRequestIDKey(t *testing.T) {
	const routes = "\nroutes: [{match: /, pipeline: [echo]}]\n"
	for _, tt := range []struct {
		text   string
		header string // "": no IDs
	}{
		{"", "X-Request-Id"},
		{"request_id: true", "X-Request-Id"},
		{"request_id: false", ""},
		{"request_id: {header: Request-Id, trusted_proxies: [10.0.0.0/8, unix:], response: true}", "Request-Id"},
		{"request_id: {}", "X-Request-Id"},
	} {
		cfg, err := parseString(t, "dir", tt.text+routes)
		if err != nil {
			t.Errorf("%s: %v", tt.text, err)
			continue
		}
		switch {
		case tt.header == "" && cfg.RequestID != nil:
			t.Errorf("%s: IDs on", tt.text)
		case tt.header != "" && (cfg.RequestID == nil || cfg.RequestID.Header() != tt.header):
			t.Errorf("%s: %v, want IDs under %s", tt.text, cfg.RequestID, tt.header)
		}
	}
	for _, tt := range []struct{ text, want string }{
		{"request_id: 3", "test.yaml:1:13: request_id: want true, false or a map, e.g. request_id: {header: X-Request-Id"},
		{"request_id: [a]", "test.yaml:1:13: request_id: want true, false or a map"},
		{"request_id: {header: X Y}", `test.yaml:1:13: request_id: header: "X Y" is not a header name: want a token such as X-Request-Id`},
		{"request_id: {header: Connection}", "request_id: header: Connection is not a field an ID can go in"},
		{"request_id: {trusted_proxies: [10.0.0.0/33]}", `request_id: trusted_proxies: "10.0.0.0/33" is not an IP address or CIDR`},
		{"request_id: {echo: true}", "test.yaml:1:14: unknown request_id key"},
		{"request_id: {response: maybe}", "test.yaml:1:24: request_id.response: want true or false"},
	} {
		_, err := parseString(t, "dir", tt.text+routes)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.text, err, tt.want)
		}
	}
}

// fcgiEcho serves a FastCGI application (net/http/fcgi) on a Unix socket
// in dir, answering every request with the values of its field name
// (from the HTTP_ parameters), and makes dir/public/fcgi/id.php for the
// fastcgi component to find. It returns the socket's path.
func fcgiEcho(t *testing.T, dir, name string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "public", "fcgi"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "public", "fcgi", "id.php"), []byte("<?php"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "fcgi.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go fcgi.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, strings.Join(r.Header.Values(name), ","))
	}))
	t.Cleanup(func() { ln.Close() })
	return sock
}

// idEcho answers with every value of X-Request-Id its request carries.
var idEcho = pipe.Source(func(c *pipe.Conn) pipe.Content {
	var ids []string
	for _, f := range c.Request.Fields {
		if strings.EqualFold(string(f.Name), "X-Request-Id") {
			ids = append(ids, string(f.Value))
		}
	}
	body := strings.Join(ids, ",")
	return func(w pipe.Writer) error { _, err := w.Write([]byte(body)); return err }
})

// The request's ID reaches an upstream over HTTP/1.1 and over h2c, a
// CGI program and a FastCGI application, in place of the client's own; a trusted proxy's is kept; a
// failure's log line and 502 text name it; response: true sends it back.
func TestRequestIDPassedOn(t *testing.T) {
	h1 := sluicetest.NewServer(t, pipe.Handler(idEcho))
	h2 := sluicetest.NewServer(t, pipe.Handler(idEcho), sluicetest.HTTP2())
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downAddr := down.Addr().String()
	down.Close()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cgi-bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	fcgiSock := fcgiEcho(t, dir, "X-Request-Id")
	script := "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n%s' \"$HTTP_X_REQUEST_ID\"\n"
	if err := os.WriteFile(filepath.Join(dir, "cgi-bin", "id.cgi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		key     string
		sent    string // the client's X-Request-Id
		kept    bool   // sent is the ID
		echoed  bool
		noIDs   bool
		pathsOK []string
	}{
		{name: "made", key: ""},
		{name: "forged", key: "", sent: "forged-by-client"},
		{name: "trusted", key: "request_id: {trusted_proxies: [127.0.0.1]}", sent: "from-the-balancer-1", kept: true},
		{name: "trusted but unsafe", key: "request_id: {trusted_proxies: [127.0.0.1]}", sent: "a<b"},
		{name: "echoed", key: "request_id: {response: true}", echoed: true},
		{name: "off", key: "request_id: false", sent: "client-own", noIDs: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			log, logs := sluicetest.Logger()
			l := &Loader{Context: components.Context{Logger: log}}
			cfg, err := l.Parse(filepath.Join(dir, "test.yaml"), []byte(fmt.Sprintf(`%s
routes:
  - match: /h1
    pipeline: [{proxy: "http://%s"}]
  - match: /h2
    pipeline: [{proxy: {upstreams: ["http://%s"], transport: h2c}}]
  - match: /cgi-bin/
    pipeline: [{cgi: {dir: ./cgi-bin, prefix: /cgi-bin/}}]
  - match: /down
    pipeline: [{proxy: "http://%s"}]
  - match: /fcgi/
    pipeline: [{fastcgi: {upstreams: ["unix:%s"], root: ./public}}]
`, tt.key, h1.Addr, h2.Addr, downAddr, fcgiSock)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cfg.Close() })
			srv := sluicetest.NewServer(t, cfg.Handler(), sluicetest.Configure(func(s *engine.Server) {}))
			field := ""
			if tt.sent != "" {
				field = "X-Request-Id: " + tt.sent + "\r\n"
			}
			seen := map[string]bool{}
			for _, path := range []string{"/h1", "/h2", "/cgi-bin/id.cgi", "/fcgi/id.php"} {
				resp, body := sluicetest.RoundTrip(t, srv.Addr, "GET "+path+" HTTP/1.1\r\nHost: a\r\n"+field+"\r\n")
				switch {
				case tt.noIDs:
					if body != tt.sent {
						t.Errorf("%s: upstream saw %q, want the client's %q as sent", path, body, tt.sent)
					}
				case tt.kept:
					if body != tt.sent {
						t.Errorf("%s: upstream saw %q, want the trusted %q", path, body, tt.sent)
					}
				default:
					if len(body) != requestid.Len || strings.Contains(body, ",") || seen[body] {
						t.Errorf("%s: upstream saw %q, want one new ID", path, body)
					}
				}
				seen[body] = true
				if got := resp.Header.Get("X-Request-Id"); tt.echoed && got != body || !tt.echoed && got != "" {
					t.Errorf("%s: response's X-Request-Id %q (echoed: %v), upstream saw %q", path, got, tt.echoed, body)
				}
			}
			resp, body := sluicetest.RoundTrip(t, srv.Addr, "GET /down HTTP/1.1\r\nHost: a\r\n"+field+"\r\n")
			if resp.StatusCode != 502 {
				t.Fatalf("/down: %d %q", resp.StatusCode, body)
			}
			_, id, named := strings.Cut(strings.TrimSuffix(body, "\n"), "\nrequest id: ")
			if tt.noIDs {
				if named || strings.Contains(logs.String(), "request_id") {
					t.Errorf("IDs off, yet named: body %q, log %s", body, logs)
				}
				return
			}
			if !named || tt.kept && id != tt.sent {
				t.Fatalf("/down: body %q names no ID, or not the trusted one", body)
			}
			if !strings.Contains(logs.String(), "request_id="+id) {
				t.Errorf("the log names not the ID %s:\n%s", id, logs)
			}
		})
	}
}

// --explain names request_id when a file changes it, and tracing when on;
// a file with neither shows neither.
func TestExplainRequestIDAndTracing(t *testing.T) {
	const routes = "\nroutes: [{match: /, pipeline: [echo]}]\n"
	for _, tt := range []struct{ text, want, not string }{
		{"", "", "request_id"},
		{"", "", "tracing"},
		{"request_id: false", "request_id     off\n", ""},
		{"request_id: {header: Req-Id, trusted_proxies: [10.0.0.0/8, unix:], response: true}", "request_id     under Req-Id, kept from 10.0.0.0/8, unix:, sent back\n", ""},
		{"tracing: {endpoint: http://c:4318, sample: 0.25, honor_parent: true, headers: {K: secret}}",
			"tracing        to http://c:4318, sample 0.25, service sluice, the caller's sampled flag followed\n", "secret"},
	} {
		cfg, err := parseString(t, "dir", tt.text+routes)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := cfg.Explain(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tt.want) || tt.not != "" && strings.Contains(b.String(), tt.not) {
			t.Errorf("%s: explain\n%s\nwant %q, not %q", tt.text, b.String(), tt.want, tt.not)
		}
	}
}

// The log lines of components about a request name its ID too: an
// accel_redirect refused, a template that fails to render.
func TestRequestIDInComponentLogs(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "protected"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.html"), []byte(`{{template "missing"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	log, logs := sluicetest.Logger()
	l := &Loader{Context: components.Context{Logger: log}}
	cfg, err := l.Parse(filepath.Join(dir, "test.yaml"), []byte(fmt.Sprintf(`
request_id: {response: true}
routes:
  - match: /download
    pipeline: [{text: app}, {headers: {set: {X-Accel-Redirect: /elsewhere/a.txt}}}, {accel_redirect: {locations: {/protected/: %q}}}]
  - match: /page
    pipeline: [{template: {file: ./bad.html}}]
`, filepath.Join(dir, "protected"))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cfg.Close() })
	srv := sluicetest.NewServer(t, cfg.Handler())
	for _, tt := range []struct{ path, msg string }{
		{"/download", "accel_redirect: refused"},
		{"/page", "template: render failed"},
	} {
		resp, _ := sluicetest.RoundTrip(t, srv.Addr, "GET "+tt.path+" HTTP/1.1\r\nHost: a\r\n\r\n")
		id := resp.Header.Get("X-Request-Id")
		var line string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, tt.msg) {
				line = l
			}
		}
		if len(id) != requestid.Len || !strings.Contains(line, "request_id="+id) {
			t.Errorf("%s: ID %q, log line %q", tt.path, id, line)
		}
	}
}
