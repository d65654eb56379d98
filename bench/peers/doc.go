// Package peers starts the web servers Sluice is measured against, and
// Sluice itself, for the benchmark harness.
//
// Each Peer writes a configuration for speed into a scratch directory of
// its own (the texts are in conf/ and are shown in the report), starts
// the server pinned to a CPU with taskset, waits until it answers, and
// stops it. A started Server reports the CPU time and resident memory of
// its whole process tree from /proc. Peers whose program is not installed
// are reported as unavailable, so the harness can skip them with a note.
//
// The Go peers (net/http and fasthttp) are built from bench/peers/nethttp
// and bench/peers/fasthttp; fasthttp is a module of its own, so Sluice
// does not depend on it.
//
// Mix returns the peers of the mix scenarios, which serve the C10K
// seed's whole site (package mixsite) rather than a folder: Sluice with
// a configuration file, and the net/http program of bench/peers/gomix.
//
// Proxies returns the reverse proxies of the proxy scenario (Sluice's
// proxy source, nginx, Caddy and HAProxy), each forwarding to
// Env.Upstream, and Upstream the nginx they all forward to.
//
// TLS returns the servers of the tls scenario (Sluice, nginx, h2o and
// Caddy), each serving Env.Root over TLS with Env.Cert and Env.Key;
// Start probes them over TLS.
//
// PHP returns the servers of the php scenario (Sluice's php source,
// nginx's fastcgi_pass, Caddy's php_fastcgi), each serving Env.Root
// through the php-fpm pool at Env.FPM; Start probes them at PHPProbe.
package peers
