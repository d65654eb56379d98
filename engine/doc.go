// Package engine is Sluice's HTTP/1.1 server: a strict, zero-copy request
// parser, one goroutine per connection, and responses composed into as few
// writes as possible; it serves HTTP/2 too, with a server of its own on
// golang.org/x/net/http2/hpack's header compression (see HTTP/2 below).
//
// # Serving
//
// A Server calls one Handler per request with a ResponseWriter and a
// *Request whose byte slices point into the connection's read buffer, so a
// typical GET is served without allocating. Those slices are valid only
// until the handler returns. Any net/http handler can be served through
// FromHTTP, and any Handler can run inside net/http through ToHTTP.
//
// A handler answering a request that asks to switch protocols (an
// Upgrade field: a WebSocket handshake) may take the connection over
// with Tunneler's Tunnel, which sends the 101 response and hands over
// the connection and the bytes already received; the engine closes it
// when the handler returns.
//
// # Connections
//
// A connection is served by a goroutine of its own while a request is in
// flight: it reads the request and runs the handler as plain blocking
// code. Buffers come from a pool only while
// a request is in flight; a keep-alive connection waiting for its next
// request holds no buffers. On Linux it holds no goroutine either: after
// its first exchange, and once it has idled for a while, it is parked in
// an epoll set of the engine's, and a goroutine takes it over when its
// next bytes arrive, so 10,000 idle connections cost under 1 KB of memory
// each (docs/benchmarks.md). Elsewhere an idle connection waits on a
// goroutine with a minimal stack. Goroutines that finish a connection
// wait a while to serve the next one, so short connections do not each
// grow a new stack.
//
// A burst costs no more memory than it must. Woken connections are handed
// to goroutines 32 at a time, so a burst of requests on parked
// connections takes no new goroutines when its handlers do not block;
// once 256 connection goroutines run and none is idle, a new connection
// whose request is not in yet parks as it is accepted rather than taking
// one. When a burst of handlers that block (a proxy before a slow
// upstream) has run 256 or more at once and is over, the server stops
// its idle connection goroutines and returns the memory to the OS (two
// collections and runtime/debug.FreeOSMemory, at most once a second)
// rather than keep the burst's peak size. 10,000 connections each
// sending one request at once leave 880 to 890 B each 2 s after it, and
// 1.9 to 4.1 KB through the proxy, where nginx keeps 9.3 KB (commit
// 15ece6b; docs/benchmarks.md, "A burst of first requests").
//
// On Linux, listeners from Listen (package sock's) serve TCP connections
// with direct system calls (accept4, recvfrom, sendto or sendmsg,
// sendfile, close); a connection joins the runtime's poller only when an
// operation would block, and leaves it when it parks. They set
// TCP_NODELAY once for all connections, and Serve has them defer accepting
// a connection until its first bytes arrive (TCP_DEFER_ACCEPT) while most
// connections carry one request, not otherwise (see deferaccept.go). Serve
// also accepts any other net.Listener, whose connections are served
// through net.Conn.
//
// After its first request, a connection whose net.Conn offers a
// syscall.RawConn runs its keep-alive loop inside the poller's read
// callback: each complete request without a body is served there, and
// after a read that drained the socket the connection waits again without
// first reading to EAGAIN (one recvfrom per request). Handlers run there
// as anywhere else; requests with a body, or a head not all in, are
// served outside it, since only there may the connection be read.
//
// Pipelined requests are answered in order; responses are flushed when no
// further complete request is already buffered, so a burst of pipelined
// requests is answered with one write. Bodies are read with Content-Length
// or chunked framing, never past their end; a body the handler leaves
// unread is drained (up to Limits.MaxDrainBytes) to keep the connection;
// a response after which the connection must close for want of that
// says "Connection: close".
//
// # TLS
//
// ServeWith serves a listener over TLS (ListenerOptions.TLS, a
// crypto/tls server config). Each connection's handshake runs on its
// goroutine before its first request, and must end within
// Limits.HeaderTimeout; requests carry the connection's state in
// Request.TLS. Everything else works as on plain TCP: keep-alive,
// pipelining, the timeouts, Gone (the socket beneath the TLS layer is
// watched) and graceful shutdown. An idle HTTP/1.1 connection parks as a
// plain one does, by the socket beneath the TLS layer, once crypto/tls
// holds no request bytes (see tlsidle.go); it then keeps crypto/tls's
// state but no goroutine and no buffer. Reads and writes go through
// crypto/tls, so the other Linux fast paths do not apply: files are read
// into the output buffer and encrypted rather than sent with sendfile(2).
//
// # HTTP/2
//
// A TLS connection whose client chooses "h2" by ALPN (list it in the
// config's NextProtos), and on a listener with ListenerOptions.H2C a
// plain connection that opens with the HTTP/2 preface, is served as
// HTTP/2 (RFC 9113) by the engine's own server: one goroutine reads the
// connection's frames, and each stream runs the listener's Handler on a
// goroutine of its own, with a Request built from the decoded header
// block (Request.ProtoMajor is 2; field names in net/http's canonical
// case) and a ResponseWriter that sends HEADERS, DATA and trailers. The
// frames of all the streams go out through one buffer per connection,
// written by whichever goroutine finds no write under way; a handler that
// returns while others of its connection run leaves its response to be
// written with theirs, so a client's concurrent requests are answered in
// one write. The ResponseWriter is a FileSender
// (the file is read into DATA frames), a GoneNotifier (a stream reset or
// the connection's end closes Gone) and an InterimWriter; it is not a
// Tunneler (extended CONNECT is not offered). The limits apply per
// stream, or as SETTINGS (Limits.MaxStreams, MaxHeaderBytes); a
// connection with no stream open is idle for the timeout manager, holds
// no read or write buffer, and ending it (idle timeout, MaxConns,
// Shutdown, Drain, GoAway) sends GOAWAY and lets its streams finish.
//
// # The HTTP/2 files
//
// The HTTP/2 server is the engine's files named http2*.go, one concern
// each: http2.go hands a connection over and ends it (GoAway); then
// framing (http2_frame.go), the connection and its reader loop
// (http2_conn.go), the output queue (http2_write.go), stream states
// (http2_stream.go), a stream's Request and body (http2_request.go) and
// ResponseWriter (http2_response.go), flow control (http2_flow.go),
// SETTINGS and bounds (http2_settings.go) and header blocks over hpack
// (http2_hpack.go). It is not a package of its own because it is the
// engine's HTTP serving over other framing: a stream fills the engine's
// Request (its unexported expect-continue flag too) and reads the
// engine's Header's internals, paces its body as HTTP/1.x's is, answers
// with the engine's refusals, parses its target with the engine's
// parser, and keeps its connection's handle in the timeout manager. A
// subpackage would need all of those exported to every user, and the
// engine, which hands it connections, would import a package importing
// it.
//
// # Timeouts
//
// One timeout manager (package timeout) watches every connection: the
// request head must arrive within Limits.HeaderTimeout of its first byte,
// bodies must keep up a minimum rate, writes must progress, and idle
// connections close after Limits.IdleTimeout, tightening to
// Limits.BusyIdleTimeout when more than half of Limits.MaxConns are open.
// At MaxConns the longest-idle connection is closed to admit a new one.
//
// # A client that goes away
//
// A handler doing slow work for a response (running a program, asking a
// back end) can learn that nobody will receive it: the engine's
// ResponseWriter is a GoneNotifier, whose Gone channel closes when the
// client closes or resets the connection or the server gives up on it.
// The first call starts watching the socket (for a peer's FIN or RST, in
// one process-wide epoll set on Linux, beside the reads the handler may do);
// handlers that never ask pay nothing. FromHTTP cancels the net/http
// request's context the same way.
//
// # Strictness
//
// Requests are checked against RFC 9112 and RFC 9110 before any handler
// runs. Smuggling shapes (Content-Length with Transfer-Encoding,
// conflicting lengths, chunked not last, obs-fold, bare CR, whitespace
// before a colon, control bytes in fields, duplicate or missing Host) get
// 400 and the connection is closed; unknown methods and transfer codings
// 501, HTTP versions other than 1.x 505, over-long targets 414, over-large
// headers 431, over-large bodies 413, expectations other than 100-continue
// 417 (at once: the connection then closes if a body was announced, as
// the client may be holding it back). Each refusal is a short text/plain
// body naming the problem. A bare LF is accepted as a line ending in the
// head, as RFC 9112 §2.2 allows, but not in chunked framing.
//
// # The canonical path
//
// Request.Path is decided once, before the handler runs: the target's path
// percent-decoded, repeated slashes merged and dot segments removed (RFC
// 3986 §6.2.2, §5.2.4), so that every spelling of a path is handed on as
// one. A path with an encoded '/', a NUL or a ".." above the root is
// refused with 400. Target and RawPath keep the spelling received, for
// proxies and logs. docs/security.md has the rules in full.
//
// # Shutdown
//
// Shutdown stops accepting, closes idle connections, and waits for
// requests in flight, whose responses carry "Connection: close".
//
// # Platforms
//
// The engine builds everywhere Go does, and behaves alike; the fast paths
// are Linux's: the listener's direct system calls, MSG_MORE, sendfile(2)
// with its page cache check, parking idle connections, and watching for
// a client that goes. On the other Unix systems (macOS, the BSDs) Listen
// returns the net package's listeners, writes go through net.Conn, a file
// is sent by reading it into the output buffer, an idle connection waits
// on a goroutine with a minimal stack (with a read(2) of its own, so it
// still holds no buffer), a Gone channel closes only when the server
// gives up on the connection, and ListenShared fails. On Windows an idle
// connection also holds its goroutine's stack and a pooled buffer while
// it waits. The tests run on Linux; elsewhere the engine is only built
// and vetted (make cross).
package engine
