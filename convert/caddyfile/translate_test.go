package caddyfile_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/convert/caddyfile"
	"github.com/sluice-server/sluice/sluicetest"
)

// aliceHash is the bcrypt hash of "secret" for user alice, base64 as
// caddy hash-password writes it.
const aliceHash = "JDJhJDEwJGRoZm5GM2RNRlJkNkJpMFhaM0VQaXVZQjRFYXY3MHBRVTRUL2VldUN0SWRRVW9PMDJpYlhL"

// translateTests are small Caddyfiles and the Sluice config each
// becomes, with the notes on what was not translated. Paths are
// relative, so that check can build every config in a directory made
// for it.
var translateTests = []struct {
	name, conf, want string
	notes            []string
	files            []string // the files Translate writes beside the config
}{
	{
		name: "static site on a port",
		conf: `:8080 {
	root * ./public
	file_server
}`,
		want: `listen: :8080
routes:
  - match: /
    pipeline:
      - files: ./public
`,
	},
	{
		name: "automatic HTTPS, encode, header, log",
		conf: `{
	email admin@example.com
	log {
		output file ./error.log
	}
}
example.com, www.example.com {
	root * ./public
	encode zstd gzip
	header -Server
	header X-Frame-Options DENY
	file_server browse
	log {
		output file ./access.log
	}
}`,
		want: `listen:
  - address: :443
    tls:
      acme:
        email: admin@example.com
        domains: [example.com, www.example.com]
  - {address: ':80', redirect_to_https: true}
log: {output: ./error.log, format: json}
sites:
  - hosts: [example.com, www.example.com]
    routes:
      - match: /
        pipeline:
          - log: {file: ./access.log, format: json}
          - headers: {remove: [Server]}
          - headers: {set: {X-Frame-Options: DENY}}
          - files: {root: ./public, browse: true}
          - compress: [zstd, gzip]
`,
	},
	{
		name: "certificate files, and the redirect to HTTPS",
		conf: `example.com {
	tls ./site.crt ./site.key
	respond "hello"
}`,
		want: `listen:
  - address: :443
    tls: {cert: ./site.crt, key: ./site.key}
  - {address: ':80', redirect_to_https: true}
sites:
  - hosts: example.com
    routes:
      - match: /
        pipeline:
          - text: hello
`,
	},
	{
		name: "matchers, Caddy's directive order, handle_path",
		conf: `http://:8080 {
	root * ./public
	file_server
	respond /health "ok" 200
	redir /old /new permanent
	@api path /api/*
	reverse_proxy @api localhost:9001 127.0.0.1:9002 {
		lb_policy least_conn
		health_uri /healthz
		fail_duration 30s
	}
	handle_path /assets/* {
		root * ./assets
		file_server
	}
	basicauth /private/* {
		alice ` + aliceHash + `
	}
}`,
		want: `listen: :8080
routes:
  - match: /health
    pipeline:
      - text: ok
  - match: /old
    pipeline:
      - redirect: {to: /new, status: 301}
  - match: /api/
    pipeline:
      - proxy:
          upstreams: ['http://localhost:9001', 'http://127.0.0.1:9002']
          policy: least_conn
          health: {path: /healthz}
          passive: {window: 30s, down_for: 30s}
  - match: /assets/
    pipeline:
      - files: {root: ./assets, strip_prefix: /assets}
  - match: /private/
    pipeline:
      - basic_auth: {realm: restricted, htpasswd: ./basicauth-16.htpasswd}
      - files: ./public
  - match: /
    pipeline:
      - files: ./public
`,
		files: []string{"basicauth-16.htpasswd"},
	},
	{
		name: "handle blocks are exclusive, the most specific first",
		conf: `:8080 {
	handle /api/* {
		reverse_proxy 127.0.0.1:9001
	}
	handle /api/v2/* {
		respond "v2" 200
	}
	handle {
		root * ./public
		try_files {path} /index.html
		file_server
	}
}`,
		want: `listen: :8080
routes:
  - match: /api/
    pipeline:
      - proxy: ['http://127.0.0.1:9001']
  - match: /api/v2/
    pipeline:
      - text: v2
  - match: /
    pipeline:
      - files: {root: ./public, try: [$path, /index.html]}
`,
	},
	{
		name: "snippets, environment, a PHP site",
		conf: `(php) {
	php_fastcgi {args[0]}
}
{$SITE_ADDR::8080} {
	root * ./public
	import php unix//run/php/php8.2-fpm.sock
	file_server
}`,
		want: `listen: :8080
routes:
  - match: /
    pipeline:
      - php: {root: ./public, upstreams: ['unix:/run/php/php8.2-fpm.sock']}
`,
	},
	{
		name: "what Sluice cannot match is noted",
		conf: `:8080 {
	@post method POST
	respond @post 405
	@png path *.png
	header @png Cache-Control "max-age=60"
	rewrite /a /b{uri}
	respond "hi {remote_host}"
	file_server
	tls internal
	@not not path /x
	respond @not 403
	@two header X-A a b
	respond @two 403
}`,
		want: `listen: :8080
routes:
  - match: /a
    methods: [POST]
    protocol: [http, https]
    pipeline:
      - text: {status: 405, body: ""}
  - match: /a
    pipeline:
      - files: .
  - match: /
    methods: [POST]
    protocol: [http, https]
    pipeline:
      - text: {status: 405, body: ""}
  - match: /
    pipeline:
      - files: .
`,
		notes: []string{
			`4: directive "@png": not translated: path "*.png"`,
			`5: directive "header": not translated: its matcher @png is not translated`,
			`6: directive "rewrite": not translated: "/b{uri}": Sluice's rewrite knows {path} and {query}`,
			`7: directive "respond": not translated: Sluice's text has no placeholders`,
			`9: directive "tls": not translated: Sluice has no certificate authority`,
			`10: directive "not": not translated: matcher not`,
			`11: directive "respond": not translated: its matcher @not is not translated`,
			`12: directive "header": not translated: want header FIELD VALUE`,
			`13: directive "respond": not translated: its matcher @two is not translated`,
		},
	},
	{
		name: "rewrite and uri strip_prefix",
		conf: `:8080 {
	root * ./public
	rewrite /old /new.html
	rewrite /app/* /index.html?from={path}&{query}
	rewrite /x /api/x
	uri /api/* strip_prefix /api
	reverse_proxy /api/* 127.0.0.1:9001
	file_server
}`,
		want: `listen: :8080
routes:
  - match: /old
    pipeline:
      - rewrite: /new.html
      - files: ./public
  - match: /app/
    pipeline:
      - rewrite: /index.html?from=$path&$args
      - files: ./public
  - match: /x
    pipeline:
      - files: ./public
  - match: /api/
    pipeline:
      - proxy: {upstreams: ['http://127.0.0.1:9001'], strip_prefix: /api}
  - match: /
    pipeline:
      - files: ./public
`,
		notes: []string{
			`5: directive "rewrite": not translated: Caddy serves /api/x with the directives matching it`,
		},
	},
	{
		name: "matchers with conditions: routes before the one without",
		conf: `:8080 {
	root * ./public
	@api {
		path /api/*
		header X-Key secret
		header X-Env prod*
		header !X-Debug
		query v=2 page=*
	}
	reverse_proxy @api 127.0.0.1:9001
	@office {
		remote_ip 10.0.0.0/8 192.168.1.1
		protocol https
	}
	respond @office "inside" 200
	@user path_regexp ^/u/[0-9]+$
	respond @user "a user" 200
	file_server
}`,
		want: `listen: :8080
routes:
  - match: /api/
    header:
      X-Key: secret
      X-Env: ~ ^prod
      X-Debug: null
    query:
      v: "2"
      page: '*'
    pipeline:
      - proxy: ['http://127.0.0.1:9001']
  - match: /api/
    client: [10.0.0.0/8, 192.168.1.1]
    protocol: https
    pipeline:
      - text: inside
  - match: /api/
    pipeline:
      - files: ./public
  - match: ~ ^/u/[0-9]+$
    client: [10.0.0.0/8, 192.168.1.1]
    protocol: https
    pipeline:
      - text: inside
  - match: ~ ^/u/[0-9]+$
    pipeline:
      - text: a user
  - match: /
    client: [10.0.0.0/8, 192.168.1.1]
    protocol: https
    pipeline:
      - text: inside
  - match: /
    pipeline:
      - files: ./public
`,
		notes: []string{
			`3: directive "@api": not translated: where another matcher's conditions hold too`,
			`11: directive "@office": not translated: where another matcher's conditions hold too`,
		},
	},
}

func TestTranslate(t *testing.T) {
	for _, tt := range translateTests {
		t.Run(tt.name, func(t *testing.T) {
			env := func(string) (string, bool) { return "", false }
			dirs, err := caddyfile.Parse("Caddyfile", []byte(tt.conf), env)
			if err != nil {
				t.Fatal(err)
			}
			cfg, files, notes := caddyfile.Translate(dirs, true)
			got, more := cfg.YAML("")
			notes = append(notes, more...)
			formatted, err := config.Format("sluice.yaml", got)
			if err != nil {
				t.Fatalf("the YAML does not parse: %v\n%s", err, got)
			}
			if string(formatted) != tt.want {
				t.Errorf("Translate(%q) =\n%s\nwant\n%s", tt.conf, formatted, tt.want)
			}
			if len(notes) != len(tt.notes) {
				t.Errorf("notes:\n%v\nwant %d:\n%s", notes, len(tt.notes), strings.Join(tt.notes, "\n"))
			}
			for i, n := range notes {
				if i < len(tt.notes) && !strings.HasPrefix(n.String(), "Caddyfile:"+tt.notes[i]) {
					t.Errorf("note %d = %q, want it to start with %q", i, n, "Caddyfile:"+tt.notes[i])
				}
			}
			if len(files) != len(tt.files) {
				t.Errorf("files %v, want %v", files, tt.files)
			}
			check(t, formatted, files)
		})
	}
}

// check builds a config as sluice check does, in a directory holding
// the files the tests' configs name and those Translate wrote.
func check(t *testing.T, data []byte, files map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"public", "assets"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, key := sluicetest.NewCA(t).IssueFiles(t, dir, "example.com")
	for _, f := range [][2]string{{cert, "site.crt"}, {key, "site.key"}} {
		if err := os.Rename(f[0], filepath.Join(dir, f[1])); err != nil {
			t.Fatal(err)
		}
	}
	loader := &config.Loader{Context: components.Context{Logger: slog.New(slog.DiscardHandler)}}
	cfg, err := loader.Parse(filepath.Join(dir, "sluice.yaml"), data)
	if err != nil {
		t.Fatalf("sluice check:\n%v\n%s", err, data)
	}
	cfg.Close()
}
