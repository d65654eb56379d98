// Package proxy is a reverse proxy: a Proxy is a pipeline Source that
// sends each request to one of its upstreams and produces the upstream's
// response, so that the filters after it (compress, headers, log) act on
// it as on any source's. The proxy component of a config file is a Proxy
// built from the file's options.
//
// # The upstream client
//
// Requests go upstream over HTTP/1.1 (but see Transport below) through a
// client of this package, on
// the engine's grammar: the header section (httpgrammar.NextField), field
// lines, Content-Length, Transfer-Encoding and the chunked coding
// (httpgrammar.ChunkedDecoder) are read by package httpgrammar, by the
// same code the engine reads requests with; only the status line is the
// proxy's own. The pools, the balancing policies, health and the queue
// at max_conns are package upstream's, which this client plugs into as
// its first transport (pool.go). Each upstream keeps a pool of
// keep-alive connections (at most MaxIdleConns idle, each for at most
// IdleTimeout) and at most MaxConns connections in all. A connection is
// checked before reuse (one non-blocking peek): one the upstream closed,
// or sent bytes on while it was idle, is closed and another taken. One
// that proves closed after the check, before any response byte came,
// has an idempotent request without a body sent again on a new
// connection to the same upstream, which counts neither as a retry nor
// against the upstream's health.
//
// # TLS and HTTP/2 (Options.Transport)
//
// Transport https runs the same HTTP/1.1 client over TLS (tls.go): each
// upstream's certificate verified against the system's roots or
// TLSOptions.CA, for its URL's host or TLSOptions.ServerName, with a
// client certificate if configured; a session cache per Proxy resumes
// sessions on a pool's new connections; the idle check peeks at the
// socket beneath the TLS connection; a handshake failure is a connection
// failure (502, retried elsewhere) whose log says what to change
// (TLSError). Transports h2c and h2 speak HTTP/2 (h2.go, h2serve.go):
// the client is this package's own (h2client.go, on x/net/http2's
// Framer and hpack), as are which connection a request goes on,
// MaxStreams, dialling and TLS, under package upstream's balancing,
// health and retries.
// Both bodies stream at once, trailers pass both ways, and a gRPC call
// (Content-Type application/grpc) is bounded by its grpc-timeout and
// ends with a grpc-status, never as a cut stream a client could take
// for a success.
//
// # Strict on the upstream side
//
// An upstream response is answered 502 to the client, and its connection
// closed, when its framing is ambiguous or malformed: Content-Length with
// Transfer-Encoding, differing Content-Length values or a malformed one,
// a Transfer-Encoding other than chunked alone, Transfer-Encoding in an
// HTTP/1.0 response, obs-fold, a bare CR, mixed line ends, an invalid
// field name or value, a malformed status line, a head over
// MaxHeaderBytes or MaxHeaderCount, a bad chunk size, extension or chunk
// end. RFC 9112 §6.3 would let a recipient resolve some of these (let
// Transfer-Encoding win, read to the close); those are the shapes of
// response splitting, so none is passed on. A fault found in the body
// after part of it was sent cuts the client's connection instead, so the
// client never takes a truncated body for a whole one. A response the
// proxy accepts is one that net/http's http.ReadResponse reads alike
// (a differential fuzz test checks it).
//
// Nothing an upstream sends beyond a response is taken for another
// (RFC 9112 §6.3): bytes that come with a response past the end its
// framing gives are dropped with the connection, and a connection taken
// from the idle pool is peeked at first (a non-blocking recv with
// MSG_PEEK), so that a response sent on it unasked, or the rest of a
// body longer than its framing said, closes it rather than answering the
// next request.
//
// # What is sent upstream
//
// The request goes as received but for: the hop-by-hop fields (RFC 9110
// §7.6.1: Connection, Keep-Alive, Proxy-Connection, TE,
// Transfer-Encoding, Upgrade, and every field Connection names), which
// are dropped both ways (but for a client's TE naming "trailers", sent
// on as "TE: trailers", named in Connection, as RFC 9110 §10.1.4 asks
// and net/http's ReverseProxy does, so that an upstream that sends
// trailers only to those who take them, as gRPC servers do, sends
// them); Host, which is the client's, the upstream's or
// a fixed one (Options.Host); the target, with StripPrefix removed from
// the canonical path; the client's identity, in X-Forwarded-For, -Proto
// and -Host, or in an RFC 7239 Forwarded field (Options.Forwarded),
// appended to only when the peer is one of TrustedProxies and written
// afresh otherwise; the other fields by which proxies tell an upstream
// about the client or the URL it asked for (every other X-Forwarded-*,
// X-Real-IP, X-Client-IP, Client-IP, True-Client-IP, X-Original-URL,
// X-Rewrite-URL), passed on from a trusted peer and dropped from anyone
// else (they are not written afresh: X-Forwarded-For names the client);
// all these names spelt with underscores for dashes, which a backend
// mapping names to CGI-style variables would read as the real ones,
// dropped whenever the proxy forwards (Options.Forwarded "none" passes
// every field as received); and a Via field, added both ways. A request the
// engine refuses never gets this far. Since the exchange runs in the
// content phase, a pipe after the proxy that stops the pipeline (an
// ipfilter) keeps the request from the upstream too.
//
// # Bodies
//
// Both bodies are streamed through one 32 KiB buffer per request: a
// request body as it came, or re-chunked with its trailer fields passed
// on; a response body passed on as it arrives, flushed whenever no more
// of it is at hand, so that Server-Sent Events reach the client as the
// upstream sends them. (A Content-Length body that came whole with its
// head is written from the upstream connection's read buffer, with no
// copy.) A request with "Expect: 100-continue" is sent
// with it, and its body read from the client (which sends it 100
// Continue) only once the upstream says 100 or stays silent for a
// second; a final answer instead reaches the client without the body
// ever being read. An upstream that answers while the body is still
// being sent (a 413) and closes has that answer passed on. Other interim responses (102, 103 Early Hints) are
// passed on to the client as they come, with their end-to-end fields
// (pipe.Conn.WriteInterim). Trailer fields are passed on both ways, but for those RFC
// 9110 §6.5.1 keeps out of trailers (framing, Host, Content-Type,
// Authorization, Set-Cookie…); the client gets them when the response
// reaches it chunked (see engine.Header.AddTrailer: a Trailer field
// announcing them makes it so).
//
// # Upgrade and WebSocket
//
// A request without a body that asks to switch protocols (Upgrade, named
// by Connection) is sent upstream with its Upgrade field, less h2c: RFC
// 9113 §3.1 deprecates that upgrade, and a tunnel to an upstream that
// still makes it would carry HTTP/2 requests past the proxy's routing
// and filters. If the
// upstream answers 101, the client gets the 101 with the upstream's
// Upgrade and end-to-end fields (pipe.Conn.Tunnel), and from then on the
// bytes are relayed both ways unchanged, until either side closes, or
// until no byte has crossed either way for TunnelIdleTimeout (1h by
// default); then both connections are closed. (nginx closes a tunnel
// after proxy_read_timeout, 60s, of silence from the upstream, which
// ends quiet WebSockets that send no pings; Caddy sets no bound; an hour
// of silence both ways is kinder to the first and still ends, in the
// end, tunnels whose peer vanished without a word.) The filters after
// the proxy see the 101 (headers may add fields to it,
// log records it) but none of the relayed bytes. A 101 to a request
// that did not ask is answered 502, as is one whose Upgrade is missing or
// names a protocol the request did not offer (RFC 9110 §7.8); an
// upstream that ignores the Upgrade answers as usual.
//
// # Balancing, retries and failures
//
// Policy picks an upstream per request: round_robin, least_conn (fewest
// requests in flight), random_two (the less busy of two at random),
// ip_hash (the client address, as TrustedProxies find it) or hash (a
// header, cookie or the path; rendezvous hashing, so that a key moves
// only when its upstream does). A failed attempt is retried on an
// upstream not yet tried, at most Retries times, when nothing of the
// request was sent (connection refused), or when it is idempotent, has
// no body and no byte of a response came back; never after a timeout.
// An upstream at MaxConns is passed over for the next without spending
// a retry. The client is told, in a short plain-text body: 502 when the
// upstream is unreachable, closed the connection or sent a malformed
// response; 504 when connecting or the response head took too long; 503
// when the active checks marked every upstream down. The picking, the
// waiting, the counting and these decisions are package upstream's (its
// Attempts, which a FastCGI or HTTP/2 transport drives the same way);
// what counts as a failure, and what the client is told, are the
// proxy's.
//
// A response whose status FailStatus lists (none by default; nginx
// too counts only errors unless its proxy_next_upstream names
// statuses) is a failure of the upstream for the passive checks. It is
// passed on to the client unless the request could be retried (as
// above, and no interim response was passed on) and an upstream is
// left untried: the response is then dropped, its connection closed,
// and the request tried there, as nginx's proxy_next_upstream http_502
// does. The last upstream's answer is always passed on.
//
// # Queueing at max_conns
//
// A request that finds every upstream it may use at MaxConns waits, with
// up to Queue others (100 by default), for a connection to one of them:
// a connection put back to the pool, or the place of one closed, is
// handed to the first request waiting for its upstream before the pool
// or any newer request sees it, so those waiting are served first come,
// first served, and nothing polls. A request finding the queue full, or
// still waiting after QueueTimeout (5s), is answered 503 with
// Retry-After: 1; with Queue -1 it is answered so at once. (nginx has no
// queue but in its commercial edition; HAProxy queues at a server's
// maxconn, as this does.)
//
// # Health
//
// Passive checks are on by default: an upstream whose requests fail
// (connection refused or timed out, a response head late, malformed or
// missing, a status in FailStatus) Passive.Failures times within
// Passive.Window is left out for Passive.DownFor. What the client
// caused does not count: a request whose client went away while the
// proxy waited for the head, and a malformed head answering a request
// with a body or a percent-encoded control byte in its target or fields
// (which the application may have decoded into a response field). Nor
// do failed requests ever leave the proxy without an upstream: the last
// one up is not marked down, and when all are marked down (another
// Proxy naming an upstream shares its health) they are tried anyway, so
// a Proxy of one upstream keeps it in service, as nginx ignores
// max_fails for a group of one server; only the active checks take the
// last one out.
//
// While it waits for a response head the proxy watches the client once
// the wait passes goneAfter (0.25 to 0.5 s): a client that closes its
// connection or resets its HTTP/2 stream ends the wait at once, the
// upstream connection is closed and its place under MaxConns given back
// (the request is logged 499), rather than held for nobody until
// ResponseHeaderTimeout. A quick answer costs nothing for the watch. Active checks run when Health.Path is set: each
// upstream is sent "GET path" every Health.Interval on a connection of
// its own, its response head read by the same strict parser; Fall
// failed checks in a row mark it down, Rise passes bring it back (and
// end a passive mark). An upstream's health is shared by every Proxy
// naming it, as long as one does: a config reload builds the new Proxy
// before it closes the old, so the state carries over, as Caddy's
// upstream pool does.
//
// Health is per process: it lives in the process's memory and nothing
// passes it to another. With workers (sluice serve's workers option)
// each worker checks its upstreams itself and counts its own failures,
// as each of nginx's workers and each Caddy instance does: N workers
// send N health checks per interval to every upstream, and one worker
// may have taken an upstream out while another still sends to it.
package proxy
