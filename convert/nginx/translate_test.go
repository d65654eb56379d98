package nginx_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/convert/nginx"
	"github.com/sluice-server/sluice/sluicetest"
)

// translateTests are small nginx configs and the Sluice config each
// becomes, with the notes on what was not translated. Paths are
// relative, so that check can build every config in a directory made
// for it.
var translateTests = []struct {
	name, conf, want string
	notes            []string
}{
	{
		name: "static site",
		conf: `server {
    listen 8080;
    server_name example.com;
    root ./public;
    index index.html;
}`,
		want: `listen: :8080
routes:
  - match: /
    pipeline:
      - files: ./public
`,
	},
	{
		name: "locations in nginx's order: exact, ^~ and prefixes",
		conf: `server {
    listen 127.0.0.1:8080;
    root ./public;
    location = /health { return 200 "ok\n"; }
    location ^~ /assets/ { expires 1h; }
    location /api { return 404; }
    location / { try_files $uri $uri/ /index.html; }
}`,
		want: `listen: 127.0.0.1:8080
routes:
  - match: /health
    pipeline:
      - text: {status: 200, body: "ok\n"}
  - match: /assets/
    pipeline:
      - files: {root: ./public, max_age: 1h}
  # nginx's location /api also matched /api-old, /apix...; Sluice's prefixes end at a slash
  - match: [/api, /api/]
    pipeline:
      - text: {status: 404, body: ""}
  - match: /
    pipeline:
      - files: {root: ./public, try: [$path, $path/, /index.html]}
`,
	},
	{
		name: "regular expressions: ~*, captures, ^~ before them, what RE2 cannot take",
		conf: `server {
    listen 80;
    root ./public;
    location ~* \.(png|jpg)$ { expires 30d; }
    location ~ ^/u/(\d+)/(?<tab>[a-z]+)$ { return 301 /users/$1x/$tab?a=$2; }
    location ^~ /assets/ { }
    location ^~ /assets/img/ { autoindex on; }
    location /assets/img/big/ { }
    location ~ ^/(?!api) { return 403; }
    location / {
        location ~ \.txt$ { return 404; }
    }
    location @fallback { return 404; }
}`,
		want: `listen: :80
routes:
  - match: ~ ^/assets/img/
    pipeline:
      - files: {root: ./public, browse: true}
  - match: ~ ^/assets/
    pipeline:
      - files: ./public
  - match: ~ (?i)\.(png|jpg)$
    pipeline:
      - files: {root: ./public, max_age: 720h}
  - match: ~ ^/u/(\d+)/(?<tab>[a-z]+)$
    pipeline:
      - redirect: {to: '/users/$${1}x/$tab?a=$2', status: 301}
  - match: /assets/img/big/
    pipeline:
      - files: ./public
  - match: /
    pipeline:
      - files: ./public
`,
		notes: []string{
			`8: directive "location": not translated: nginx tries the regular expressions for the paths under this prefix, but Sluice gives them to the ^~ /assets/img/ at line 7`,
			`9: directive "location": not translated: the regular expression "^/(?!api)" is not one Go's RE2 syntax takes`,
			`11: directive "location": not translated: a regular expression nested in location /`,
			`13: directive "location": not translated: a named location`,
		},
	},
	{
		name: "redirect to HTTPS, TLS, several names",
		conf: `http {
    ssl_certificate ./site.crt;
    server {
        listen 80;
        listen [::]:80;
        server_name example.com www.example.com;
        return 301 https://$host$request_uri;
    }
    server {
        listen 443 ssl http2;
        server_name example.com www.example.com;
        ssl_certificate_key ./site.key;
        root ./public;
    }
}`,
		want: `listen:
  - {address: ':80', redirect_to_https: true}
  - address: :443
    tls: {cert: ./site.crt, key: ./site.key}
routes:
  - match: /
    pipeline:
      - files: ./public
`,
	},
	{
		name: "proxy to an upstream block",
		conf: `upstream app {
    least_conn;
    server 127.0.0.1:9001 max_fails=2 fail_timeout=5s;
    server 127.0.0.1:9002 weight=3;
    server 127.0.0.1:9003 backup;
    server 127.0.0.1:9004 down;
    keepalive 16;
}
server {
    listen 80;
    location /api/ {
        proxy_pass http://app/;
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header Upgrade $http_upgrade;
        proxy_set_header Connection "upgrade";
        proxy_connect_timeout 3s;
    }
    location / {
        proxy_pass http://127.0.0.1:9000;
    }
}`,
		want: `listen: :80
routes:
  - match: /api/
    pipeline:
      - proxy:
          upstreams: ['http://127.0.0.1:9001', 'http://127.0.0.1:9002 weight=3']
          strip_prefix: /api
          connect_timeout: 3s
          policy: least_conn
          passive: {failures: 2, window: 5s, down_for: 5s}
  - match: /
    pipeline:
      - proxy: {upstreams: ['http://127.0.0.1:9000'], host: upstream, forwarded: none}
`,
		notes: []string{
			`5: directive "server": not translated: Sluice has no backup upstreams`,
		},
	},
	{
		name: "access: allow, deny, auth_basic, limit_req",
		conf: `http {
    limit_req_zone $binary_remote_addr zone=one:10m rate=10r/s;
    server {
        listen 80;
        root ./public;
        location /private/ {
            limit_req zone=one burst=5 nodelay;
            allow 127.0.0.1;
            allow 10.0.0.0/8;
            deny all;
            auth_basic "Private area";
            auth_basic_user_file ./users.htpasswd;
        }
        location /internal/ {
            deny 192.0.2.0/24;
        }
    }
}`,
		want: `listen: :80
routes:
  - match: /private/
    pipeline:
      - ratelimit: {rate: 10, burst: 6}
      - ipfilter: {allow: [127.0.0.1, 10.0.0.0/8], deny: [all]}
      - basic_auth: {realm: Private area, htpasswd: ./users.htpasswd}
      - files: ./public
  - match: /internal/
    pipeline:
      - ipfilter: {deny: [192.0.2.0/24]}
      - files: ./public
  - match: /
    pipeline:
      - files: ./public
`,
	},
	{
		name: "allow and deny in an order the most specific entry does not keep",
		conf: `server {
    listen 80;
    root ./public;
    allow 10.0.0.0/8;
    deny 10.1.0.0/16;
}`,
		want: `listen: :80
routes:
  - match: /
    pipeline:
      - files: ./public
`,
		notes: []string{`5: directive "deny": not translated: never reached in nginx, where allow 10.0.0.0/8 comes first`},
	},
	{
		name: "gzip, error pages, access log, server settings",
		conf: `user www-data;
pid ./nginx.pid;
error_log ./error.log warn;
events { worker_connections 1024; }
http {
    sendfile on;
    server_tokens off;
    client_max_body_size 10m;
    keepalive_timeout 65;
    gzip on;
    gzip_types text/css application/javascript;
    gzip_comp_level 5;
    access_log ./access.log;
    server {
        listen 80;
        root ./public;
        error_page 404 /404.html;
        error_page 500 502 503 504 /50x.html;
        autoindex on;
    }
}`,
		want: `listen: :80
user: www-data
pid_file: ./nginx.pid
log: {output: ./error.log, level: warn}
limits:
  max_body: 10MiB
  idle_timeout: 65s
access_log: ./access.log
error_pages:
  404: public/404.html
  500: public/50x.html
  502: public/50x.html
  503: public/50x.html
  504: public/50x.html
routes:
  - match: /
    pipeline:
      - files: {root: ./public, browse: true}
      - compress: {encodings: [gzip], types: [text/html, text/css, application/javascript], levels: {gzip: 5}}
`,
	},
	{
		name: "alias, rewrite to a redirect, rewrite noted",
		conf: `server {
    listen 80;
    root ./public;
    location /static/ { alias ./assets/; }
    location /old/ { rewrite ^/old/(.*)$ /new/$1 permanent; }
    location /x/ { rewrite ^/x/(\d+)$ /y?id=$1 last; }
}`,
		want: `listen: :80
routes:
  - match: /static/
    pipeline:
      - files: {root: ./assets, strip_prefix: /static}
  - match: /old/
    pipeline:
      - redirect: {to: /new$path$query, strip_prefix: /old, status: 301}
  - match: /x/
    pipeline:
      - files: ./public
  - match: /
    pipeline:
      - files: ./public
  - match: ~ ^/x/(\d+)$
    pipeline:
      - rewrite: /y?id=$1&$args
      - files: ./public
`,
	},
	{
		name: "rewrites: last, break, redirects with groups, and those that cannot be",
		conf: `server {
    listen 80;
    root ./public;
    rewrite ^/shop/(?<item>[a-z]+)$ /app/index.html?item=$item last;
    rewrite ^/u/([0-9]+)$ /users/$1?;
    rewrite ^/go/(.*)$ https://example.com/$1 redirect;
    rewrite ^/health$ /ok last;
    rewrite ^/dyn/(.*)$ /$1 last;
    location = /health { return 200; }
    location /app/ { proxy_pass http://127.0.0.1:9000; }
    location ~ ^/img/(.*)\.png$ {
        rewrite ^/img/(.*)\.png$ /pictures/$1.png break;
        expires 1d;
    }
    location /docs/ {
        rewrite ^/docs/v1/(.*)$ /docs/$1 break;
        rewrite /x$ /y break;
    }
    location /blog/ {
        rewrite ^/blog/(.*)$ /b/$1 last;
    }
    location /blog/old/ { }
}`,
		want: `listen: :80
routes:
  - match: /go/
    pipeline:
      - redirect: {to: 'https://example.com$path$query', strip_prefix: /go}
  - match: /health
    pipeline:
      - text: {status: 200, body: ""}
  - match: /app/
    pipeline:
      - proxy: {upstreams: ['http://127.0.0.1:9000'], host: upstream, forwarded: none}
  - match: ~ ^/shop/(?<item>[a-z]+)$
    pipeline:
      - rewrite: /app/index.html?item=$item&$args
      - proxy: {upstreams: ['http://127.0.0.1:9000'], host: upstream, forwarded: none}
  - match: ~ ^/u/([0-9]+)$
    pipeline:
      - rewrite: /users/$1?
      - files: ./public
  - match: ~ ^/img/(.*)\.png$
    pipeline:
      - rewrite: /pictures/$1.png
      - files: {root: ./public, max_age: 24h}
  - match: /docs/
    pipeline:
      - files: ./public
  - match: /blog/
    pipeline:
      - files: ./public
  - match: /blog/old/
    pipeline:
      - files: ./public
  - match: /
    pipeline:
      - files: ./public
  - match: ~ ^/docs/v1/(.*)$
    pipeline:
      - rewrite: /docs/$1
      - files: ./public
`,
		notes: []string{
			`7: directive "rewrite": not translated: nginx rewrites /health before choosing its location`,
			`8: directive "rewrite": not translated: Sluice's rewrite routes no request again`,
			`17: directive "rewrite": not translated: its expression may match paths outside location /docs/`,
			`20: directive "rewrite": not translated: the route of its expression would take paths of location /blog/old/`,
		},
	},
	{
		name: "a rewrite at the server's level is its paths' route",
		conf: `server {
    listen 80;
    root ./public;
    rewrite ^/blog(.*)$ https://blog.example.com$1 permanent;
    location /blog/ { return 404; }
}`,
		want: `listen: :80
routes:
  - match: [/blog, /blog/]
    pipeline:
      - redirect: {to: 'https://blog.example.com$path$query', strip_prefix: /blog, status: 301}
  - match: /
    pipeline:
      - files: ./public
`,
		notes: []string{`5: directive "location": not translated: a second route for "/blog/", which the first one takes`},
	},
	{
		name: "a PHP site",
		conf: `server {
    listen 80;
    root ./public;
    index index.php index.html;
    location / { try_files $uri $uri/ /index.php?$args; }
    location ~ /\. { deny all; }
    location ~ \.php$ {
        try_files $uri =404;
        fastcgi_split_path_info ^(.+\.php)(/.+)$;
        include fastcgi_params;
        fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;
        fastcgi_pass unix:/run/php/php8.2-fpm.sock;
    }
}`,
		want: `listen: :80
routes:
  - match: /
    pipeline:
      - php: {root: ./public, upstreams: ['unix:/run/php/php8.2-fpm.sock'], dotfiles: deny}
`,
	},
	{
		name: "several servers: routes by host",
		conf: `server {
    listen 80 default_server;
    return 404;
}
server {
    listen 80;
    server_name a.example;
    location / { return 301 https://b.example$request_uri; }
}
server {
    listen 80;
    server_name .b.example;
    root ./public;
}`,
		want: `listen: :80
sites:
  - hosts: a.example
    routes:
      - match: /
        pipeline:
          - redirect: {to: 'https://b.example$path$query', status: 301}
  - hosts: [b.example, '*.b.example']
    routes:
      - match: /
        pipeline:
          - files: ./public
routes:
  - match: /
    pipeline:
      - text: {status: 404, body: ""}
`,
	},
	{
		name: "several servers: the default server with names, a name on two ports",
		conf: `server {
    listen 80;
    server_name a.example;
    return 200 "a";
}
server {
    listen 80 default_server;
    listen 8080;
    server_name b.example;
    return 200 "b";
}
server {
    listen 8080;
    server_name a.example;
    return 200 "a on 8080";
}`,
		want: `listen:
  - :80
  - :8080
sites:
  - hosts: a.example
    routes:
      - match: /
        pipeline:
          - text: {status: 200, body: a}
  - hosts: b.example
    default: true
    routes:
      - match: /
        pipeline:
          - text: {status: 200, body: b}
`,
		notes: []string{`12: directive "server": not translated: a second route for "/", which the first one takes`},
	},
	{
		name: "$server_name in a redirect",
		conf: `server {
    listen 80;
    server_name www.example.com example.com;
    location /shop/ { return 302 https://$server_name/store$request_uri; }
    location / { return 301 http://$server_name$request_uri; }
}`,
		want: `listen: :80
routes:
  - match: /shop/
    pipeline:
      - redirect: {to: 'https://www.example.com/store$path$query'}
  - match: /
    pipeline:
      - redirect: {to: 'http://www.example.com$path$query', status: 301}
`,
	},
	{
		name: "certbot's port 80, a WebSocket proxy, the cookbook's idioms",
		conf: `map $http_upgrade $connection_upgrade {
    default upgrade;
    ''      close;
}
limit_req_zone $binary_remote_addr zone=site:10m rate=10r/s;
server {
    listen 80;
    server_name example.com;
    location /.well-known/acme-challenge/ { root /var/www/letsencrypt; }
    location / { return 308 https://$host$request_uri; }
}
server {
    listen 443 ssl;
    server_name example.com;
    ssl_certificate ./site.crt;
    ssl_certificate_key ./site.key;
    error_log ./error.log info;
    limit_req_status 429;
    gzip_static on;
    location / {
        limit_req zone=site burst=20 nodelay;
        proxy_pass http://127.0.0.1:8080;
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header Upgrade $http_upgrade;
        proxy_set_header Connection $connection_upgrade;
        proxy_read_timeout 1h;
        proxy_next_upstream error timeout http_502 http_503;
    }
}`,
		want: `listen:
  - {address: ':80', redirect_to_https: true}
  - address: :443
    tls: {cert: ./site.crt, key: ./site.key}
log: {output: ./error.log, level: info}
routes:
  - match: /
    pipeline:
      - ratelimit: {rate: 10, burst: 21}
      - proxy: {upstreams: ['http://127.0.0.1:8080'], response_header_timeout: 1h, fail_status: [502, 503]}
`,
		notes: []string{`9: directive "location": not translated: redirect_to_https answers the HTTP-01 challenges of Sluice's own acme certificates`},
	},
	{
		name: "the http level's directives are noted too",
		conf: `http {
    ssl_protocols TLSv1 TLSv1.2;
    underscores_in_headers on;
    server { listen 80; root ./public; }
}`,
		want: `listen: :80
routes:
  - match: /
    pipeline:
      - files: ./public
`,
		notes: []string{
			`2: directive "ssl_protocols": not translated: Sluice's TLS versions`,
			`3: directive "underscores_in_headers": not translated: Sluice has no equivalent`,
		},
	},
	{
		name: "directives Sluice has no equivalent for",
		conf: `server {
    listen 80;
    root ./public;
    if ($http_user_agent ~ bot) { return 403; }
    location / { proxy_pass https://backend; }
    ssl_protocols TLSv1;
}`,
		want: `listen: :80
routes:
  - match: /
    pipeline:
      - files: ./public
`,
		notes: []string{
			`4: directive "if": not translated`,
			`5: directive "proxy_pass": not translated: Sluice's proxy speaks plain HTTP`,
			`6: directive "ssl_protocols": not translated`,
		},
	},
}

func TestTranslate(t *testing.T) {
	for _, tt := range translateTests {
		t.Run(tt.name, func(t *testing.T) {
			dirs, err := nginx.Parse("site.conf", []byte(tt.conf))
			if err != nil {
				t.Fatal(err)
			}
			cfg, notes := nginx.Translate(dirs)
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
				if i < len(tt.notes) && !strings.HasPrefix(n.String(), "site.conf:"+tt.notes[i]) {
					t.Errorf("note %d = %q, want it to start with %q", i, n, "site.conf:"+tt.notes[i])
				}
			}
			check(t, formatted)
		})
	}
}

// check builds a config as sluice check does, in a directory holding
// the files the tests' configs name.
func check(t *testing.T, data []byte) {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"public", "assets"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{
		"public/index.html": "home\n", "public/404.html": "<p>not found</p>\n", "public/50x.html": "<p>error</p>\n",
		"users.htpasswd": "alice:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
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
