package peers

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/template"
)

//go:embed conf
var confFS embed.FS

// Env is what a peer needs to start: where to put its files, what to
// serve, where to listen.
type Env struct {
	Dir    string // scratch directory of this server instance (config, logs, pid)
	Root   string // document root, readable by every user
	Host   string // listen host, e.g. 127.0.0.1
	Port   int
	NoFile int    // descriptors the server may use (the hard RLIMIT_NOFILE)
	Bin    string // directory holding the built Go peers (nethttp-peer, fasthttp-peer)
	Sluice string // the sluice binary; empty: the sluice peer is unavailable

	// Workers is the number of worker processes, for the peers that
	// take one (see Peer.Workers): sluice's --workers (0: one process,
	// no master) and nginx's worker_processes (0: 1). Others ignore it.
	Workers int

	// The mix peers' database (see Mix): DB is "sqlite" or "postgres",
	// DSN its data source name (for sqlite, the database file).
	DB, DSN string

	// The proxy scenario (see Proxies and Upstream): Upstream is the
	// host:port the proxies forward to, IdleConns the idle keep-alive
	// connections each may keep to it, and Body the upstream's whole
	// response body.
	Upstream  string
	IdleConns int
	Body      string

	// The tls scenario (see TLS): the PEM certificate and key files every
	// TLS peer serves.
	Cert, Key string

	// The php scenario (see PHP): FPM is the Unix socket of the php-fpm
	// pool every PHP peer passes PHP requests to, and Root the PHP site
	// (WordPress and hello.php). Each PHP peer keeps at most IdleConns
	// idle connections to the pool, where it keeps any.
	FPM string
}

// UpstreamHost is the host of Upstream (host:port), for configurations
// that take host and port apart (Varnish's backend).
func (e Env) UpstreamHost() string {
	host, _, _ := net.SplitHostPort(e.Upstream)
	return host
}

// UpstreamPort is the port of Upstream.
func (e Env) UpstreamPort() string {
	_, port, _ := net.SplitHostPort(e.Upstream)
	return port
}

// NginxBody is Body as the contents of an nginx quoted string, for the
// upstream's return directive: backslashes and double quotes escaped.
// It fails if Body holds a '$', which nginx would read as a variable and
// cannot escape.
func (e Env) NginxBody() (string, error) {
	if strings.Contains(e.Body, "$") {
		return "", errors.New("the upstream's body holds a '$', which nginx cannot return literally")
	}
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(e.Body), nil
}

// GoDriver is the database/sql driver name of Env.DB for the Go peers.
func (e Env) GoDriver() string {
	if e.DB == "postgres" {
		return "pgx"
	}
	return "sqlite"
}

// Addr is Host:Port.
func (e Env) Addr() string { return net.JoinHostPort(e.Host, strconv.Itoa(e.Port)) }

// HalfNoFile is NoFile/2, for lighttpd's max-connections.
func (e Env) HalfNoFile() int { return e.NoFile / 2 }

// Peer is one server the harness can run.
type Peer struct {
	// Name identifies the peer on the command line and in the report.
	Name string

	// About says in a few words what runs and how it is configured.
	About string

	// conf names the configuration template in conf/, if any.
	conf string

	// version returns the server's version, or an error if it cannot run
	// here.
	version func(env Env) (string, error)

	// argv returns the command line, given the path of the written
	// configuration (empty if conf is empty).
	argv func(env Env, conf string) []string

	// environ is added to the server's environment.
	environ func(env Env) []string

	// takesWorkers says the peer honours Env.Workers, from minWorkers up.
	takesWorkers bool
	minWorkers   int

	// tls says the peer listens with TLS (Env.Cert and Key): Start
	// probes it over TLS.
	tls bool

	// ready, if set, reports whether a server that answers GET / has
	// finished starting (every worker up); Start waits for it.
	ready func(s *Server) bool

	// probe is the path Start requests to know the server is up; ""
	// is "/".
	probe string
}

// probePath is the path Start requests to know p is up.
func (p Peer) probePath() string {
	if p.probe == "" {
		return "/"
	}
	return p.probe
}

// All returns every peer, in the order the report lists them.
func All() []Peer {
	return []Peer{
		{
			Name: "sluice", About: "`sluice serve --root DIR` (the engine and the files handler; GOMAXPROCS 1 from the affinity mask)",
			version: func(env Env) (string, error) {
				if env.Sluice == "" {
					return "", errors.New("no sluice binary")
				}
				return FirstLine(env.Sluice, "version")
			},
			argv: func(env Env, _ string) []string {
				argv := []string{env.Sluice, "serve", "--root", env.Root, "--listen", env.Addr()}
				if env.Workers > 0 {
					argv = append(argv, "--workers", strconv.Itoa(env.Workers))
				}
				return argv
			},
			takesWorkers: true,
			ready: func(s *Server) bool {
				// The master logs this once every worker answered its
				// health probe; GET / is answered by the first one up.
				return s.Env.Workers == 0 || strings.Contains(s.readLog("output.log"), `msg="workers ready"`)
			},
		},
		{
			Name: "nginx", About: "Debian nginx, one worker, sendfile, tcp_nopush, open_file_cache, no access log", conf: "nginx.conf",
			version: func(Env) (string, error) { return FirstLine("nginx", "-v") },
			argv: func(env Env, conf string) []string {
				return []string{"nginx", "-p", env.Dir, "-c", conf, "-e", filepath.Join(env.Dir, "error.log")}
			},
			takesWorkers: true, minWorkers: 1,
		},
		{
			Name: "apache-default", About: "Debian Apache httpd with Debian's default configuration (MPM event, 25 threads per child, access log)", conf: "apache-default.conf",
			version: apacheVersion,
			argv:    apacheArgv,
			environ: apacheEnviron,
		},
		{
			Name: "apache-tuned", About: "Debian Apache httpd, MPM event tuned for 10,000 connections, four modules, sendfile, no access log", conf: "apache-tuned.conf",
			version: apacheVersion,
			argv:    apacheArgv,
			environ: apacheEnviron,
		},
		{
			Name: "lighttpd", About: "Debian lighttpd, one process, sendfile, stat cache, no access log", conf: "lighttpd.conf",
			version: func(Env) (string, error) { return FirstLine("lighttpd", "-v") },
			argv: func(env Env, conf string) []string {
				return []string{"lighttpd", "-D", "-f", conf}
			},
		},
		{
			Name: "caddy", About: "Debian Caddy, file_server, no admin endpoint, no automatic HTTPS", conf: "Caddyfile",
			version: func(Env) (string, error) { return FirstLine("caddy", "version") },
			argv: func(env Env, conf string) []string {
				return []string{"caddy", "run", "--config", conf, "--adapter", "caddyfile"}
			},
			environ: func(env Env) []string {
				return []string{"HOME=" + env.Dir, "XDG_DATA_HOME=" + env.Dir, "XDG_CONFIG_HOME=" + env.Dir}
			},
		},
		{
			Name: "h2o", About: "Debian h2o, one thread, file.dir, no access log", conf: "h2o.conf",
			version: func(Env) (string, error) { return FirstLine("h2o", "--version") },
			argv: func(env Env, conf string) []string {
				return []string{"h2o", "-m", "master", "-c", conf}
			},
		},
		{
			Name: "nethttp", About: "Go `net/http` `http.FileServer` (bench/peers/nethttp), GOMAXPROCS 1",
			version: func(env Env) (string, error) {
				return goPeerVersion(filepath.Join(env.Bin, "nethttp-peer"), "runtime.Version")
			},
			argv: func(env Env, _ string) []string {
				return []string{filepath.Join(env.Bin, "nethttp-peer"), "-listen", env.Addr(), "-root", env.Root}
			},
		},
		{
			Name: "fasthttp", About: "fasthttp `FS` handler (bench/peers/fasthttp, its own module), GOMAXPROCS 1",
			version: func(env Env) (string, error) {
				return goPeerVersion(filepath.Join(env.Bin, "fasthttp-peer"), "github.com/valyala/fasthttp")
			},
			argv: func(env Env, _ string) []string {
				return []string{filepath.Join(env.Bin, "fasthttp-peer"), "-listen", env.Addr(), "-root", env.Root}
			},
		},
	}
}

// Mix returns the peers that serve the whole of the C10K seed's mix
// (package mixsite) from Env.Root, with the database Env.DB and DSN:
// sluice-mix, Sluice with a configuration file, and nethttp-mix, the
// net/http program of bench/peers/gomix. They are not in All: they
// serve the mix's site only, and the harness runs them in the mix
// scenarios.
func Mix() []Peer {
	return []Peer{
		{
			Name: "sluice-mix", About: "`sluice serve -c sluice-mix.yaml`: the files, template and SQL data sources of the configuration shown (GOMAXPROCS 1 from the affinity mask)",
			conf: "sluice-mix.yaml",
			version: func(env Env) (string, error) {
				if env.Sluice == "" {
					return "", errors.New("no sluice binary")
				}
				return FirstLine(env.Sluice, "version")
			},
			argv: func(env Env, conf string) []string { return []string{env.Sluice, "serve", "-c", conf} },
		},
		{
			Name: "nethttp-mix", About: "a Go program with net/http, html/template and database/sql (bench/peers/gomix: `http.FileServer`, templates parsed at start, a prepared statement, a pool of 16 connections, a 5 s query timeout), GOMAXPROCS 1",
			version: func(env Env) (string, error) {
				return goPeerVersion(filepath.Join(env.Bin, "gomix-peer"), "runtime.Version")
			},
			argv: func(env Env, _ string) []string {
				return []string{filepath.Join(env.Bin, "gomix-peer"), "-listen", env.Addr(), "-site", env.Root,
					"-driver", env.GoDriver(), "-dsn", env.DSN}
			},
		},
	}
}

// Upstream returns the upstream of the proxy scenario: nginx answering
// every request with Env.Body from its configuration (return 200, no
// file read), keep-alive connections kept for the whole run, and
// stub_status at UpstreamStatusPath, whose count of accepted connections
// tells how often the proxies dialled it. Not in All: the harness runs it
// on the client's CPU, under every proxy of the run.
func Upstream() Peer {
	return Peer{
		Name: "upstream", About: "Debian nginx, one worker, `return 200` with the 151-byte page from its configuration, keep-alive connections kept as long as the run, no access log",
		conf:    "upstream-nginx.conf",
		version: func(Env) (string, error) { return FirstLine("nginx", "-v") },
		argv: func(env Env, conf string) []string {
			return []string{"nginx", "-p", env.Dir, "-c", conf, "-e", filepath.Join(env.Dir, "error.log")}
		},
	}
}

// UpstreamStatusPath is where Upstream answers nginx's stub_status
// ("Active connections: …", then the counts of accepted and handled
// connections and of requests).
const UpstreamStatusPath = "/sluicebench-upstream-status"

// Proxies returns the reverse proxies of the proxy scenario, each
// forwarding every request to Env.Upstream over keep-alive connections,
// with at most Env.IdleConns of them idle, and telling it the client's
// address, scheme and host (X-Forwarded-For, -Proto, -Host); none logs
// requests. sluice-proxy, nginx-proxy and caddy-proxy are the peers
// sluice, nginx and caddy configured as proxies; haproxy is in no other
// scenario. They are not in All: they serve nothing of their own.
func Proxies() []Peer {
	return []Peer{
		{
			Name: "sluice-proxy", About: "`sluice serve -c sluice-proxy.yaml`: one route, the `proxy` source with `max_idle_conns` set (GOMAXPROCS 1 from the affinity mask)",
			conf: "sluice-proxy.yaml",
			version: func(env Env) (string, error) {
				if env.Sluice == "" {
					return "", errors.New("no sluice binary")
				}
				return FirstLine(env.Sluice, "version")
			},
			argv: func(env Env, conf string) []string { return []string{env.Sluice, "serve", "-c", conf} },
		},
		{
			Name: "nginx-proxy", About: "Debian nginx, one worker, `proxy_pass` to an `upstream` block with `keepalive`, HTTP/1.1 upstream, no access log",
			conf:    "nginx-proxy.conf",
			version: func(Env) (string, error) { return FirstLine("nginx", "-v") },
			argv: func(env Env, conf string) []string {
				return []string{"nginx", "-p", env.Dir, "-c", conf, "-e", filepath.Join(env.Dir, "error.log")}
			},
		},
		{
			Name: "caddy-proxy", About: "Debian Caddy, `reverse_proxy` with its HTTP transport's idle pool set, no admin endpoint, no automatic HTTPS (GOMAXPROCS 1 from the affinity mask)",
			conf:    "Caddyfile-proxy",
			version: func(Env) (string, error) { return FirstLine("caddy", "version") },
			argv: func(env Env, conf string) []string {
				return []string{"caddy", "run", "--config", conf, "--adapter", "caddyfile"}
			},
			environ: func(env Env) []string {
				return []string{"HOME=" + env.Dir, "XDG_DATA_HOME=" + env.Dir, "XDG_CONFIG_HOME=" + env.Dir}
			},
		},
		{
			Name: "haproxy", About: "Debian HAProxy, `mode http`, one thread, `http-reuse always`, no logging",
			conf:    "haproxy.cfg",
			version: func(Env) (string, error) { return FirstLine("haproxy", "-v") },
			argv: func(env Env, conf string) []string {
				// -db: in the foreground, not as a daemon.
				return []string{"haproxy", "-db", "-f", conf}
			},
		},
	}
}

// TLS returns the servers of the tls scenario, each serving Env.Root
// over TLS with the certificate Env.Cert and key Env.Key, HTTP/2 and
// HTTP/1.1 by ALPN on one port, one worker or thread, keep-alive
// connections and HTTP/2 sessions kept (and their requests unbounded)
// for the whole run, no access log. sluice-tls, nginx-tls, h2o-tls and
// caddy-tls are the peers sluice, nginx, h2o and caddy with a TLS
// listener; they are not in All.
func TLS() []Peer {
	return []Peer{
		{
			Name: "sluice-tls", About: "`sluice serve --root DIR --tls-cert F --tls-key F` (the engine, HTTP/2 by ALPN; GOMAXPROCS 1 from the affinity mask)",
			tls: true,
			version: func(env Env) (string, error) {
				if env.Sluice == "" {
					return "", errors.New("no sluice binary")
				}
				return FirstLine(env.Sluice, "version")
			},
			argv: func(env Env, _ string) []string {
				return []string{env.Sluice, "serve", "--root", env.Root, "--listen", env.Addr(), "--tls-cert", env.Cert, "--tls-key", env.Key}
			},
		},
		{
			Name: "nginx-tls", About: "Debian nginx, one worker, `listen … ssl http2`, `keepalive_requests` above any run's requests, no access log",
			conf: "nginx-tls.conf", tls: true,
			version: func(Env) (string, error) { return FirstLine("nginx", "-v") },
			argv: func(env Env, conf string) []string {
				return []string{"nginx", "-p", env.Dir, "-c", conf, "-e", filepath.Join(env.Dir, "error.log")}
			},
		},
		{
			Name: "h2o-tls", About: "Debian h2o, one thread, `ssl` listener (HTTP/2 by ALPN), file.dir, no access log",
			conf: "h2o-tls.conf", tls: true,
			version: func(Env) (string, error) { return FirstLine("h2o", "--version") },
			argv: func(env Env, conf string) []string {
				return []string{"h2o", "-m", "master", "-c", conf}
			},
		},
		{
			Name: "caddy-tls", About: "Debian Caddy, file_server, `tls CERT KEY`, HTTP/1.1 and HTTP/2 only, no admin endpoint, no automatic HTTPS (GOMAXPROCS 1 from the affinity mask)",
			conf: "Caddyfile-tls", tls: true,
			version: func(Env) (string, error) { return FirstLine("caddy", "version") },
			argv: func(env Env, conf string) []string {
				return []string{"caddy", "run", "--config", conf, "--adapter", "caddyfile"}
			},
			environ: func(env Env) []string {
				return []string{"HOME=" + env.Dir, "XDG_DATA_HOME=" + env.Dir, "XDG_CONFIG_HOME=" + env.Dir}
			},
		},
	}
}

// CacheOrigin returns the origin of the cache scenario: nginx serving
// Env.Root's files with Cache-Control: max-age=3600 (and their ETag and
// Last-Modified), whatever the query, keep-alive connections kept for
// the whole run, and stub_status at UpstreamStatusPath. Not in All: the
// harness runs it on the client's CPU, behind every cache of the run.
func CacheOrigin() Peer {
	return Peer{
		Name: "origin", About: "Debian nginx, one worker, the docroot's files with `expires 1h` (Cache-Control: max-age=3600, ETag, Last-Modified), sendfile, keep-alive connections kept as long as the run, no access log",
		conf:    "origin-nginx.conf",
		version: func(Env) (string, error) { return FirstLine("nginx", "-v") },
		argv: func(env Env, conf string) []string {
			return []string{"nginx", "-p", env.Dir, "-c", conf, "-e", filepath.Join(env.Dir, "error.log")}
		},
	}
}

// CacheStore is the memory every cache of the cache scenario may fill:
// Sluice's size, nginx's max_size and Varnish's malloc storage (their
// configurations say it too).
const CacheStore = "256m"

// Caches returns the caching reverse proxies of the cache scenario, each
// storing what Env.Upstream answers (under CacheStore bytes) and
// keeping at most Env.IdleConns idle keep-alive connections to it, one
// worker or thread pool, no access log: sluice-cache (the cache component
// before the proxy source), nginx-cache (proxy_cache) and varnish, whose
// --servers names are sluice, nginx and varnish (CacheBase). The
// scenario measures the proxy peer sluice-proxy (see Proxies) beside
// them, on misses. They are not in All.
func Caches() []Peer {
	return []Peer{
		{
			Name: "sluice-cache", About: "`sluice serve -c sluice-cache.yaml`: one route, the `cache` component (a 256 MB memory store) before the `proxy` source with `max_idle_conns` set (GOMAXPROCS 1 from the affinity mask)",
			conf: "sluice-cache.yaml",
			version: func(env Env) (string, error) {
				if env.Sluice == "" {
					return "", errors.New("no sluice binary")
				}
				return FirstLine(env.Sluice, "version")
			},
			argv: func(env Env, conf string) []string { return []string{env.Sluice, "serve", "-c", conf} },
		},
		{
			Name: "nginx-cache", About: "Debian nginx, one worker, `proxy_cache` in a `proxy_cache_path` of its scratch directory (`max_size=256m`, a 32 MB keys zone), `proxy_cache_valid 200 1h`, `proxy_pass` to an `upstream` block with `keepalive`, sendfile, no access log",
			conf:    "nginx-cache.conf",
			version: func(Env) (string, error) { return FirstLine("nginx", "-v") },
			argv: func(env Env, conf string) []string {
				return []string{"nginx", "-p", env.Dir, "-c", conf, "-e", filepath.Join(env.Dir, "error.log")}
			},
		},
		{
			Name: "varnish", About: "Debian Varnish, `varnishd -F` started by the harness with its own `-n` working directory in its scratch directory (never the system service), no management port, `-s malloc,256m`, `-p thread_pools=1`, Varnish's built-in VCL with the origin as its one backend, no log reader (varnishncsa) running",
			conf:    "varnish.vcl",
			version: func(Env) (string, error) { return FirstLine("varnishd", "-V") },
			argv: func(env Env, conf string) []string {
				return []string{"varnishd", "-F", "-n", filepath.Join(env.Dir, "varnish"), "-a", env.Addr(), "-T", "none",
					"-f", conf, "-s", "malloc," + CacheStore, "-p", "thread_pools=1"}
			},
		},
	}
}

// CacheBase returns the --servers name a cache peer stands for: sluice
// for sluice-cache, nginx for nginx-cache, varnish for itself.
func CacheBase(name string) string { return strings.TrimSuffix(name, "-cache") }

// PHPProbe is the script every PHP peer's Env.Root holds and Start
// requests to know the server is up: a few bytes from PHP, which need
// no database.
const PHPProbe = "/hello.php"

// PHP returns the servers of the php scenario, each serving the PHP site
// at Env.Root through the one php-fpm pool at Env.FPM (a Unix socket):
// static files themselves, a request for a .php script, and any other
// path that names no file, by the pool (WordPress's front controller,
// /index.php, with the query kept), one worker or thread, keep-alive
// client connections kept for the whole run, no access log. sluice-php,
// nginx-php and caddy-php are the peers sluice, nginx and caddy with
// their usual PHP configuration; they are not in All. sluice-again-php
// is sluice-php once more, last in each round: the same binary measured
// twice shows how far apart a run's noise puts two equal servers.
func PHP() []Peer {
	sluice := Peer{
		Name: "sluice-php", About: "`sluice serve -c sluice-php.yaml`: one route, the `php` source (the front controller over `files` and `fastcgi`) to the pool's socket (GOMAXPROCS 1 from the affinity mask)",
		conf: "sluice-php.yaml", probe: PHPProbe,
		version: func(env Env) (string, error) {
			if env.Sluice == "" {
				return "", errors.New("no sluice binary")
			}
			return FirstLine(env.Sluice, "version")
		},
		argv: func(env Env, conf string) []string { return []string{env.Sluice, "serve", "-c", conf} },
	}
	again := sluice
	again.Name = "sluice-again-php"
	again.About = "the same Sluice binary and configuration as `sluice-php`, measured again in each round, in turn with the others: an A/A control, whose difference from `sluice-php` is the run's noise (selected by `--servers sluice-again`, never by default)"
	return []Peer{
		sluice,
		{
			Name: "nginx-php", About: "Debian nginx, one worker, `fastcgi_pass` to an `upstream` block with `keepalive`, `fastcgi_keep_conn on`, WordPress's `try_files $uri $uri/ /index.php?$args`, no access log",
			conf: "nginx-php.conf", probe: PHPProbe,
			version: func(Env) (string, error) { return FirstLine("nginx", "-v") },
			argv: func(env Env, conf string) []string {
				return []string{"nginx", "-p", env.Dir, "-c", conf, "-e", filepath.Join(env.Dir, "error.log")}
			},
		},
		{
			Name: "caddy-php", About: "Debian Caddy, `php_fastcgi` to the pool's socket and `file_server`, no admin endpoint, no automatic HTTPS (GOMAXPROCS 1 from the affinity mask)",
			conf: "Caddyfile-php", probe: PHPProbe,
			version: func(Env) (string, error) { return FirstLine("caddy", "version") },
			argv: func(env Env, conf string) []string {
				return []string{"caddy", "run", "--config", conf, "--adapter", "caddyfile"}
			},
			environ: func(env Env) []string {
				return []string{"HOME=" + env.Dir, "XDG_DATA_HOME=" + env.Dir, "XDG_CONFIG_HOME=" + env.Dir}
			},
		},
		again,
	}
}

// PHPBase returns the --servers name a PHP peer stands for: sluice for
// sluice-php.
func PHPBase(name string) string { return strings.TrimSuffix(name, "-php") }

// TLSBase returns the --servers name a TLS peer stands for: sluice for
// sluice-tls.
func TLSBase(name string) string { return strings.TrimSuffix(name, "-tls") }

// Names lists the names of All.
func Names() []string {
	var names []string
	for _, p := range All() {
		names = append(names, p.Name)
	}
	return names
}

// ByName returns the peer called name.
func ByName(name string) (Peer, bool) {
	for _, p := range All() {
		if p.Name == name {
			return p, true
		}
	}
	return Peer{}, false
}

// Version returns the peer's version, or an error saying why it cannot
// run here (not installed, not built).
func (p Peer) Version(env Env) (string, error) { return p.version(env) }

// Config returns the configuration p writes for env, or "" if it uses
// none (it is configured by its command line).
func (p Peer) Config(env Env) (string, error) {
	if p.conf == "" {
		return "", nil
	}
	text, err := confFS.ReadFile("conf/" + p.conf)
	if err != nil {
		return "", err
	}
	t, err := template.New(p.conf).Option("missingkey=error").Parse(string(text))
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, env); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Workers reports the fewest worker processes p runs with Env.Workers,
// and whether it honours Env.Workers at all: sluice from 0 (one process,
// no master), nginx from 1.
func (p Peer) Workers() (least int, ok bool) { return p.minWorkers, p.takesWorkers }

// CommandLine returns the command that starts p with its configuration at
// conf.
func (p Peer) CommandLine(env Env, conf string) []string { return p.argv(env, conf) }

func apacheVersion(Env) (string, error) { return FirstLine("apache2", "-v") }

func apacheArgv(env Env, conf string) []string {
	return []string{"apache2", "-d", "/etc/apache2", "-f", conf, "-DFOREGROUND"}
}

func apacheEnviron(env Env) []string {
	return []string{
		"APACHE_RUN_DIR=" + env.Dir, "APACHE_LOCK_DIR=" + env.Dir, "APACHE_LOG_DIR=" + env.Dir,
		"APACHE_PID_FILE=" + filepath.Join(env.Dir, "apache2.pid"),
		"APACHE_RUN_USER=www-data", "APACHE_RUN_GROUP=www-data",
	}
}

// FirstLine runs name with args and returns the first line of its output
// (stdout and stderr: nginx -v writes to stderr).
func FirstLine(name string, args ...string) (string, error) {
	if _, err := exec.LookPath(name); err != nil {
		return "", fmt.Errorf("%s is not installed", name)
	}
	out, err := exec.Command(name, args...).CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, line)
	}
	return line, nil
}

var modLine = regexp.MustCompile(`(?m)^\s*(?:go|dep|mod)\s+(\S+)\s+(\S+)`)

// goPeerVersion reads a built Go peer's toolchain or dependency version
// from its build information (go version -m).
func goPeerVersion(bin, what string) (string, error) {
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s was not built", filepath.Base(bin))
	}
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		return "", fmt.Errorf("go version -m %s: %v", bin, err)
	}
	if what == "runtime.Version" {
		_, v, _ := strings.Cut(strings.SplitN(string(out), "\n", 2)[0], ": ")
		return "Go " + strings.TrimPrefix(v, "go"), nil
	}
	for _, m := range modLine.FindAllStringSubmatch(string(out), -1) {
		if m[1] == what {
			return what + " " + m[2], nil
		}
	}
	return "unknown", nil
}
