package main_test

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// These tests run real nginx and real Caddy on a small site — static
// files, a proxied upstream, redirects, a basic-auth area, an exact and
// a prefix route, regular expressions — convert the same config, serve the result with the
// real sluice binary, and compare what each answers to the same
// requests: status, Location (resolved against the request's URL) and
// body.

// diffRequest is one request of a comparison.
type diffRequest struct {
	path string
	auth string // user:password, or ""
	body bool   // compare the bodies too
}

// diffSite writes the site's files under dir: public/ (with a docs/
// directory, an exact path's file, a private area), assets/, error
// pages and an htpasswd file for alice with password secret.
func diffSite(t *testing.T, dir string) {
	writeFiles(t, dir, map[string]string{
		"public/index.html":          "<p>home</p>\n",
		"public/a.txt":               "a text file\n",
		"public/docs/index.html":     "<p>docs</p>\n",
		"public/docs/page.html":      "<p>a page of the docs</p>\n",
		"public/private/secret.txt":  "the secret\n",
		"public/404.html":            "<p>not here</p>\n",
		"public/401.html":            "<p>who are you?</p>\n",
		"assets/logo.txt":            "a logo\n",
		"users.htpasswd":             "alice:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=\n", // secret
		"public/exact/elsewhere.txt": "under the exact path\n",
	})
}

// upstreamServer is the proxied application: it answers with what it
// was asked for.
func upstreamServer(t *testing.T) *sluicetest.Server {
	return sluicetest.NewServer(t, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "upstream: %s %s\n", r.Method, r.Target)
	}))
}

// waitListening waits until addr accepts connections.
func waitListening(t *testing.T, what, addr string) {
	sluicetest.WaitFor(t, what+" listening on "+addr, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// runPeer starts a server program that runs until the test ends; its
// output is logged if the test fails.
func runPeer(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	out := new(sluicetest.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s's output:\n%s", filepath.Base(cmd.Path), out)
		}
	})
}

// compare sends each request to both servers and compares the answers.
func compare(t *testing.T, peer, sluiceBase string, reqs []diffRequest) {
	t.Helper()
	for _, r := range reqs {
		var fields []string
		if r.auth != "" {
			fields = []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(r.auth))}
		}
		want, wantBody := sluicetest.Get(t, peer+r.path, fields...)
		got, gotBody := sluicetest.Get(t, sluiceBase+r.path, fields...)
		if got.StatusCode != want.StatusCode {
			t.Errorf("GET %s: sluice %d, the peer %d (%q)", r.path, got.StatusCode, want.StatusCode, wantBody)
			continue
		}
		if gl, wl := location(t, sluiceBase+r.path, got), location(t, peer+r.path, want); gl != wl {
			t.Errorf("GET %s: sluice's Location %q, the peer's %q", r.path, gl, wl)
		}
		if r.body && gotBody != wantBody {
			t.Errorf("GET %s: sluice's body %q, the peer's %q", r.path, gotBody, wantBody)
		}
	}
}

// location is a response's Location resolved against the request's
// URL: its path and query when on the same server, else in full.
func location(t *testing.T, reqURL string, resp *http.Response) string {
	l := resp.Header.Get("Location")
	if l == "" {
		return ""
	}
	base, err := url.Parse(reqURL)
	if err != nil {
		t.Fatal(err)
	}
	u, err := base.Parse(l)
	if err != nil {
		t.Fatalf("Location %q: %v", l, err)
	}
	if u.Host == base.Host {
		return u.RequestURI()
	}
	return u.String()
}

func TestConvertMatchesNginx(t *testing.T) {
	nginx := sluicetest.NeedTool(t, "nginx", "nginx")
	dir := t.TempDir()
	diffSite(t, dir)
	up := upstreamServer(t)
	addr := "127.0.0.1:" + strconv.Itoa(sluicetest.FreePort(t))
	conf := filepath.Join(dir, "nginx.conf")
	writeFiles(t, dir, map[string]string{"nginx.conf": fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path %[1]s/tmp;
    proxy_temp_path %[1]s/tmp;
    fastcgi_temp_path %[1]s/tmp;
    uwsgi_temp_path %[1]s/tmp;
    scgi_temp_path %[1]s/tmp;
    gzip on;
    upstream app { server %[2]s; }
    server {
        listen %[3]s;
        root %[1]s/public;
        error_page 404 /404.html;
        error_page 401 /401.html;
        rewrite ^/shop/([a-z]+)$ /static/$1.txt last;
        location = /exact { return 200 "exact\n"; }
        location /api/ {
            proxy_pass http://app/;
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        }
        location /private/ {
            auth_basic "Private";
            auth_basic_user_file %[1]s/users.htpasswd;
        }
        location /old/ { return 301 /new$request_uri; }
        location /moved { return 302 https://example.com$request_uri; }
        location ^~ /static/ { alias %[1]s/assets/; }
        location ~ /(a|logo)\.txt$ { return 403; }
        location ~* ^/DOCS/(?<name>p[a-z]+)\.HTML$ { return 301 /pages/$name/$1?x; }
        location /v1/ { rewrite ^/v1/(.*)$ /docs/$1 break; }
        location / { }
    }
}
`, dir, up.Addr, addr)})
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	runPeer(t, exec.Command(nginx, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log")))
	waitListening(t, "nginx", addr)

	r := sluice(t, "convert", "-o", filepath.Join(dir, "sluice.yaml"), conf)
	if r.code != 0 {
		t.Fatalf("sluice convert = %d:\n%s", r.code, r.stderr)
	}
	s := start(t, "serve", "-c", filepath.Join(dir, "sluice.yaml"), "--listen", "127.0.0.1:0")
	compare(t, "http://"+addr, "http://"+s.addr, []diffRequest{
		{path: "/", body: true},
		{path: "/a.txt"},
		{path: "/docs"},
		{path: "/docs/", body: true},
		{path: "/docs/page.html"},
		{path: "/Docs/Page.HTML?q=1"},
		{path: "/docs/a/page.html"},
		{path: "/missing", body: true},
		{path: "/exact", body: true},
		{path: "/exact/elsewhere.txt", body: true},
		{path: "/api/hello?x=1", body: true},
		{path: "/api/", body: true},
		{path: "/private/secret.txt", body: true},
		{path: "/private/secret.txt", auth: "alice:secret", body: true},
		{path: "/private/secret.txt", auth: "alice:wrong", body: true},
		{path: "/old/page?q=1", body: false},
		{path: "/moved?a=b"},
		{path: "/moved/deeper"},
		{path: "/static/logo.txt", body: true},
		{path: "/static/missing", body: true},
		{path: "/static/a.txt", body: true},
		{path: "/shop/logo", body: true},
		{path: "/shop/LOGO", body: true},
		{path: "/v1/page.html", body: true},
		{path: "/v1/", body: true},
	})
}

func TestConvertMatchesCaddy(t *testing.T) {
	caddy := sluicetest.NeedTool(t, "caddy", "caddy")
	dir := t.TempDir()
	diffSite(t, dir)
	up := upstreamServer(t)
	port := strconv.Itoa(sluicetest.FreePort(t))
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "Caddyfile")
	writeFiles(t, dir, map[string]string{"Caddyfile": fmt.Sprintf(`{
	admin off
	auto_https off
	skip_install_trust
}

:%[3]s {
	bind 127.0.0.1
	root * %[1]s/public
	respond /exact "exact" 200
	redir /old/* /new{uri} 301
	redir /moved https://example.com{uri}
	rewrite /alias /a.txt
	@re path_regexp ^/re/[0-9]+$
	respond @re "by expression" 200
	basicauth /private/* {
		alice %[4]s
	}
	handle_path /api/* {
		reverse_proxy %[2]s
	}
	handle_path /static/* {
		root * %[1]s/assets
		file_server
	}
	file_server
}
`, dir, up.Addr, port, base64.StdEncoding.EncodeToString(hash))})
	cmd := exec.Command(caddy, "run", "--config", conf, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	runPeer(t, cmd)
	addr := "127.0.0.1:" + port
	waitListening(t, "caddy", addr)

	r := sluice(t, "convert", "-o", filepath.Join(dir, "sluice.yaml"), conf)
	if r.code != 0 {
		t.Fatalf("sluice convert = %d:\n%s", r.code, r.stderr)
	}
	s := start(t, "serve", "-c", filepath.Join(dir, "sluice.yaml"), "--listen", "127.0.0.1:0")
	// Caddy's error answers have no body: only their statuses compare.
	compare(t, "http://"+addr, "http://"+s.addr, []diffRequest{
		{path: "/", body: true},
		{path: "/a.txt", body: true},
		{path: "/docs/", body: true},
		{path: "/docs/page.html", body: true},
		{path: "/missing"},
		{path: "/exact", body: true},
		{path: "/exact/elsewhere.txt", body: true},
		{path: "/api/hello?x=1", body: true},
		{path: "/private/secret.txt"},
		{path: "/private/secret.txt", auth: "alice:secret", body: true},
		{path: "/private/secret.txt", auth: "alice:wrong"},
		{path: "/old/page?q=1"},
		{path: "/moved?a=b"},
		{path: "/static/logo.txt", body: true},
		{path: "/static/missing"},
		{path: "/alias", body: true},
		{path: "/re/12", body: true},
		{path: "/re/x"},
	})
}
