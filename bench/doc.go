// Package bench is Sluice's benchmark harness: it starts Sluice and the
// servers users know (nginx, Apache httpd, lighttpd, Caddy, h2o, Go
// net/http, fasthttp), loads each in turn with its own generator (package
// load), and with wrk and ab where installed, and writes a Markdown report
// with plots (package report).
//
// # Method
//
// On a machine with two or more cores, the harness pins itself (the
// client) to core 0 and every server to core 1 with taskset, so a server
// has one core and the client never competes with it. Servers are
// measured one after another in interleaved rounds (server A, B, C, then
// B, C, A: each round starts one server further along, so that none is
// always first), and the report gives the median over rounds with the minimum
// and maximum. Server CPU time per request comes from utime+stime of the
// server's process tree in /proc/PID/stat, memory from VmRSS in
// /proc/PID/status. Errors are counted, never hidden.
//
// The workers scenario is the exception: its servers run on every CPU
// (--workers-cpu), so that a server with two worker processes can use
// two cores, while the client stays on core 0.
//
// # Scenarios
//
// The scenarios come from the five papers Sluice draws on (the
// repository's README.md cites them under "Sources"): Warp's 151-byte
// page at 1 to 1,000 connections; webpipes' 4 KB file at rising request
// rates in an open loop; the master–worker paper's ab -n 5000 -c 500; the
// C10K mix at 10,000 connections, and wrk at 10,000 connections on the
// 151-byte page and an 80 KB file (c10k-wrk); the C++ paper's file-size sweep;
// pipelining 16 deep; idle memory per connection; Chain against
// ProcNetwork. The workers scenario, run only when named (--scenarios
// workers; it takes minutes), measures Sluice at 0, 1, 2, 10 and 100
// worker processes against nginx at 1 and 2 (wrk: requests/s, server
// CPU per request over every process), reproduces the master–worker
// paper's ab table against Apache with Debian's default configuration,
// and reads the PSS of the master and of each worker from
// /proc/PID/smaps_rollup.
//
// The mix scenarios, also run only when named (--scenarios mix,mix-slowdb),
// make the C10K seed's mix real: the site of package mixsite (80 KB
// pages, templates showing the request, articles read from a table of
// 10,000 rows) at --conns keep-alive connections, a third of the
// requests to each kind of page, drawn at random from a fixed seed by
// the generator (latency per class of route) and by wrk (a Lua script).
// nginx and Sluice serve the static pages alone; Sluice (a
// configuration file, peers/conf/sluice-mix.yaml) and a net/http program
// (peers/gomix) the whole mix. mix-slowdb runs the whole mix again on a
// private PostgreSQL whose every query sleeps 50 ms, and counts the 503s
// of a server shedding load apart from errors.
//
// The proxy scenario, run only when named (--scenarios proxy), puts
// Sluice's proxy source, nginx, Caddy and HAProxy (--servers haproxy,
// a name of this scenario alone) in turn in front of one upstream: an
// nginx answering the 151-byte page with return 200, started once and
// pinned to the client's CPU, so that the server CPU is the proxy's
// alone. Every proxy keeps 128 idle keep-alive connections to it (more
// than the client's 100) and names the client in X-Forwarded-For, -Proto
// and -Host. Each is loaded with the generator and with wrk at 100
// keep-alive connections, as fast as it answers, then offered a fixed
// 20,000 requests/s by the generator (the same load for every proxy);
// the report gives the proxy's CPU per proxied
// request, and, to show the comparison fair, the connections the
// upstream accepted during each run (its stub_status), its CPU per
// request, and how busy the client's core was.
//
// The tls scenario, run only when named (--scenarios tls), serves the
// 151-byte page over TLS from Sluice, nginx, h2o and Caddy (peers.TLS),
// all with one ECDSA P-256 certificate generated for the run (package
// tlscert), HTTP/2 and HTTP/1.1 by ALPN on one port. Each is measured
// with wrk over TLS HTTP/1.1 keep-alive, h2load -c100 -m10 over HTTP/2,
// and the harness's client opening a connection per request, with full
// handshakes (no session cache) and with resumed ones (the handshakes
// the server resumed are counted); the report gives the server's CPU
// per request or per handshake, and the targets against nginx.
//
// The php scenario, run only when named (--scenarios php), puts
// Sluice's php source, nginx (fastcgi_pass to an upstream block with
// keepalive, fastcgi_keep_conn on, WordPress's try_files) and Caddy
// (php_fastcgi) in turn in front of one php-fpm pool: pm = static with 4
// children on a Unix socket, OPcache on, started once with WordPress's
// private MariaDB and pinned with them to the client's CPU, so that the
// server core is the web server's alone and every server meets the same
// PHP capacity. The site is Debian's WordPress, copied with its own
// wp-config.php, installed by POSTing the installer's form through the
// first server that starts, then given posts. wrk loads each server at
// 50 keep-alive connections (10 with --quick) on hello.php and on the
// front page (runs four times --duration); the report gives the web
// server's CPU per request (its threads' schedstat, php-fpm not
// counted), php-fpm's beside it, requests/s, p50/p99 and errors.
//
// The cache scenario, run only when named (--scenarios cache), puts
// Sluice's cache component before its proxy source (sluice-cache), nginx's
// proxy_cache (nginx-cache) and Varnish (varnish, a --servers name of this
// scenario alone: a varnishd the harness starts with its own working
// directory, malloc storage and one thread pool) in turn in front of one
// origin: an nginx serving the 4 KB page and a 100 KB file with max-age,
// started once and pinned to the client's CPU. wrk loads each at 100
// keep-alive connections on each object, hits on one URL, then misses,
// every request a distinct query string (a Lua script), with Sluice's
// proxy alone (sluice-proxy) measured on the same misses; the report gives
// the server's CPU per request (its threads' schedstat: nginx's worker,
// every varnishd process), requests/s, p50/p99, the origin's requests per
// request, and the targets: a hit against nginx's and Varnish's
// CPU, a miss against the proxy alone.
//
// # Entry points
//
// Main is the whole harness behind a command line; command sluicebench
// calls it. The harness is a Go module of its own (github.com/sluice-server/sluice/bench,
// requiring the server's module from the parent directory), so that its
// plotting and PDF dependencies stay out of the sluice binary. From the
// repository root:
//
//	go -C bench run ./cmd/sluicebench [flags]    # or: make bench
//	go -C bench test ./...
//
// With -C the working directory is bench/, so relative paths given to
// flags are relative to it. The report goes to --out DIR; without it, to
// a scratch directory (sluice-bench in $TMPDIR or /tmp, named on stderr
// and in --help), so that a run inside a checkout never overwrites the
// committed report. make bench passes --out docs/benchmarks; to
// rewrite a committed report from its results.json without measuring:
//
//	go -C bench run ./cmd/sluicebench --from ../docs/benchmarks/results.json --out ../docs/benchmarks
//
// Command tlsidle, apart from the harness, measures the memory of idle
// TLS keep-alive connections (HTTP/1.1 and HTTP/2) in Sluice, nginx and
// h2o in one run and prints a table (docs/benchmarks.md, "Idle TLS
// connections"):
//
//	go -C bench run ./cmd/tlsidle --sluice /tmp/sluice --conns 10000
//
// Command grpcload, apart from the harness too, measures gRPC unary calls
// through Sluice's proxy (transport h2c) and nginx's grpc_pass to one
// gRPC upstream of its own, over h2c and TLS: calls per second, server
// CPU per call, p50/p99 and errors (docs/benchmarks/grpc):
//
//	taskset -c 0 go -C bench run ./cmd/grpcload --sluice /tmp/sluice --rounds 5 --out ../docs/benchmarks/grpc
package bench
