// Package upstream is the client side's shared machinery for the servers
// Sluice passes requests to: per-host pools of idle connections, the
// balancing policies, passive and active health, the queue of requests
// waiting at max_conns, and the monotonic clock their deadlines and ages
// are reckoned in. It knows no wire protocol: a transport (the reverse
// proxy's HTTP/1.1 client, package fastcgi's FastCGI client) brings its
// own connection type and plugs in, as h2o keeps
// its http1client and http2client over one socketpool and balancer, and
// Caddy's reverse proxy puts its FastCGI transport under the same
// balancing, health checks and retries.
//
// # Groups and hosts
//
// A Group is the upstreams one configured component uses: its Hosts (at
// most 64, each in a slot of its own, so that a request's tried and busy
// hosts are bits of a uint64), the Balancer that picks among them (Pick),
// and the Queue of requests waiting for a connection. NewGroup parses the
// hosts ("http://host:port" or "unix:/path").
//
// # Live sets
//
// A Group's hosts may change while it serves, without a reload: Replace
// (the whole set), Patch (hosts added, removed, re-weighted, drained).
// Each change publishes a new immutable set behind an atomic pointer; a
// request takes it once, in Begin, and its tried bits stay valid because
// a host that stays keeps its slot, its *Host, its pool, its requests in
// flight and its health. A host that leaves takes no request started
// after the change returns (Attempts.Start reports false for one picked
// before), finishes those in flight and closes its idle connections; a
// draining host stays listed and takes no new request. Weights (1 to
// 100) count in every policy: round_robin is nginx's smooth weighted
// round robin, least_conn and random_two divide the requests in flight by
// the weight, and the hashes weigh their rendezvous scores.
//
// A Group registered under a name (Register) is a LiveSet, which an admin
// API or a metrics exposition finds by name (LookupSet, Sets) and reads
// (State) or changes (LiveSet.Replace, LiveSet.Patch) without knowing
// the transport's connection type; every change through it is logged
// with who made it. A reload's new Group takes the name over, and the
// old one's Close gives it back up.
//
// Group and Host are generic over C, the transport's connection, which
// the pool stores and hands back as it is: getting an idle connection,
// putting one back and handing one to a waiting request are the calls
// they were when the pool was the proxy's own, with no interface call and
// no allocation per request. The pool calls only C's Close; whether an
// idle connection is still good (a peek at its socket), its buffers, and
// dialling over it (Host.Dial gives the socket) are the transport's.
//
// # Connections
//
// A request asks its Host for a connection (Get): the most recently used
// idle one, or a place among the open connections to dial a new one on,
// or ErrFull at max_conns. After a clean exchange the transport offers
// the connection to a waiting request first (HandOff), then puts it back
// (Keep); a connection closed, or a dial that failed, gives its place back
// (Release), again to a waiting request first. Connections idle past the
// idle timeout are closed as the pool comes across them.
//
// # Balancing, health and the queue
//
// The policies are round_robin, least_conn and random_two (by requests
// in flight, counted by Host.Begin and Host.End), ip_hash and hash
// (rendezvous hashing of the client's address, a header, a cookie or the
// path). A host marked down by passive checks (Host.Failed, what the
// transport counts as a failure) or active ones (Group.StartChecks, with
// the transport's check) is left out (Host.Up). A host's health is shared
// by every Group naming it, so that it carries over a config reload. A
// request finding every host it may use at max_conns waits in the Queue,
// first come first served, for a connection or a place to come free.
//
// # Attempts
//
// A request's way through the hosts is an Attempts (Group.Begin), a
// value on the transport's stack that allocates nothing unless the
// request waits: Next picks a host, skipping those tried, marked down or
// at max_conns, and waits in the queue when every host left is at
// max_conns; the transport gets its connection (a queue's grant, or
// Host.Get; Full when the host is at max_conns), then Start, the
// exchange, and Done, or Failed (counted for passive health, and tried
// again on another host when the transport says it may be and the
// retries allow), or Rejected for an answer it counts as a failure. Err
// tells a request that ends without a host's answer: none up, or the
// upstreams busy. Which outcomes are failures, whether the request is
// safe to send again, and what the client is told are the transport's.
//
// # Options
//
// Options are the settings every transport shares, with the yaml keys a
// config file sets them by (upstreams, policy, hash_key, retries,
// max_conns, queue, queue_timeout, max_idle_conns, connect_timeout,
// idle_timeout, passive, health): a transport embeds them in its own
// options, and Options.Settings checks them and fills in the defaults,
// giving the Balancer and Config NewGroup takes. A transport whose
// upstreams are spelt otherwise than "http://host:port" (FastCGI's
// host:port) sets Config.ParseAddr.
//
// # Where the HTTP/1.1 client lives
//
// The HTTP/1.1 client itself (its connection with raw socket reads, the
// strict response-head parser, the last-head cache, the body reader) stays
// in package proxy for now, beside the relay it feeds: its connection
// type, its response head and its body reader are read field by field by
// the proxy's hot path (a zero-allocation keep-alive GET), and exporting
// them as an API is a change of its own. It plugs into this package as
// the first transport (proxy/pool.go gets its connections from a Host,
// proxy/retry.go drives a request's Attempts); package fastcgi's client
// plugs in beside it the same way (fastcgi/conn.go, fastcgi/serve.go),
// with its own connection type, and so gets the pools, balancing,
// health, queue and retries the proxy has.
package upstream
