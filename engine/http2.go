//lint:file-ignore SA1019 x/net/http2's server is deprecated in favour of net/http's copy of it; see the HTTP/2 notes below.

package engine

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync/atomic"

	"golang.org/x/net/http2"
)

// HTTP/2. A TLS connection whose client chose "h2" by ALPN, or, on a
// listener with ListenerOptions.H2C, a plain connection that opens with
// the HTTP/2 connection preface, is served by golang.org/x/net/http2:
// its framing, HPACK, flow control, stream states and defences, with the
// connection's Handler behind the net/http bridge (see serveBridged), so
// every stream runs the same handler an HTTP/1.x request does.
//
// x/net v0.62 marks its server deprecated: net/http carries the same
// code (bundled), reached through http.Server.Serve with Protocols set,
// and from Go 1.27 x/net's ServeConn wraps net/http's. Moving to
// net/http's would keep the behaviour the tests check (they speak the
// protocol), but not this file's per-connection http.Server (Shutdown
// there ends every connection the server tracks).
//
// Each connection gets an http2.Server of its own, configured from the
// limits in force as it starts (its SETTINGS cannot change later): that
// costs some hundreds of bytes, and gives each connection a graceful end
// of its own (goAway), which the engine's timeout manager, Shutdown,
// Drain and GoAway use.
//
// The connection keeps its handle in the timeout manager: armed with
// HeaderTimeout until the client's preface, then idle while no stream is
// open (x/net reports it through ConnState), so IdleTimeout,
// BusyIdleTimeout, MaxConns and Shutdown treat an HTTP/2 connection with
// no stream as an idle HTTP/1.x one; but firing it sends GOAWAY rather
// than cutting the connection (x/net closes it once its streams are done,
// a second after the GOAWAY at most when there are none).

// http2Preface is the start of the HTTP/2 connection preface (RFC 9113
// §3.4) as the HTTP/1.x parser sees it: a request line of version 2.0.
var http2Preface = []byte("PRI * HTTP/2.0\r\n")

// http2State is what a connection serving HTTP/2 keeps beside its conn:
// the http.Server whose Shutdown sends its GOAWAY, whether the client's
// preface came (before it, Shutdown cannot reach the connection), and
// whether GOAWAY was asked for (want) and sent (sent). It is apart from
// conn to keep HTTP/1.x connections small.
type http2State struct {
	hs                *http.Server // x/net's (http2XNet)
	own               *h2Conn      // the engine's
	ready, want, sent atomic.Bool
}

// http2XNet serves HTTP/2 with x/net's server instead of the engine's
// (for benchmarks comparing the two).
var http2XNet = false

// serveOwnHTTP2 serves c with the engine's HTTP/2 server.
func (c *conn) serveOwnHTTP2(pre []byte) {
	s := c.srv
	nc := &http2Conn{Conn: c.nc, srv: s, pre: pre}
	h := newH2Conn(c, nc)
	c.h2.Store(&http2State{own: h})
	c.th.SetDeadline(h.lim.HeaderTimeout) // the preface and SETTINGS must come in time
	c.th.MarkIdle()
	s.mu.Lock()
	s.h2conns[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.h2conns, c)
		s.mu.Unlock()
	}()
	h.serve()
}

// serveHTTP2 serves c as HTTP/2 until the connection ends. pre holds the
// bytes read already (an h2c client's preface and what followed it).
func (c *conn) serveHTTP2(pre []byte) {
	if !http2XNet {
		c.serveOwnHTTP2(pre)
		return
	}
	s := c.srv
	lim := s.limits()
	hs := &http.Server{
		MaxHeaderBytes: lim.MaxHeaderBytes,
		ConnState:      c.http2ConnState,
		ErrorLog:       s.http2Log,
	}
	h2s := &http2.Server{
		MaxConcurrentStreams: uint32(lim.MaxStreams),
		WriteByteTimeout:     lim.WriteTimeout,
	}
	if err := http2.ConfigureServer(hs, h2s); err != nil {
		s.logger().Error("http2: cannot configure", "error", err)
		return
	}
	c.h2.Store(&http2State{hs: hs})
	c.th.SetDeadline(lim.HeaderTimeout) // the preface and SETTINGS must come in time
	c.th.MarkIdle()
	s.mu.Lock()
	s.h2conns[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.h2conns, c)
		s.mu.Unlock()
	}()
	nc := &http2Conn{Conn: c.nc, srv: s, pre: pre}
	var sc net.Conn = nc
	if c.tc != nil {
		sc = &http2TLSConn{nc, c.tc}
	}
	h2s.ServeConn(sc, &http2.ServeConnOpts{
		Context:    context.Background(),
		BaseConfig: hs,
		Handler:    http2Handler{c},
	})
}

// http2ConnState is the connection's http.Server ConnState hook, which x/net
// calls on its serving goroutine: StateActive when a stream opens,
// StateIdle when the last one ends (and once the preface is read).
func (c *conn) http2ConnState(_ net.Conn, st http.ConnState) {
	h2 := c.h2.Load()
	h2.ready.Store(true)
	switch st {
	case http.StateActive:
		c.th.Clear()
	case http.StateIdle:
		c.th.SetIdle()
	}
	// GOAWAY asked for before the preface, or a connection that began
	// as the server began to stop.
	if h2.want.Load() || c.srv.closing() {
		c.goAway()
	}
}

// goAway ends an HTTP/2 connection gracefully: GOAWAY tells the client
// which streams will be served; those finish, new ones are refused, and
// x/net closes the connection once they are done. It is safe to call from
// any goroutine, more than once; before the preface it is remembered, and
// done once the preface is read (see http2ConnState).
func (c *conn) goAway() {
	h2 := c.h2.Load()
	if h2 == nil {
		return
	}
	h2.want.Store(true)
	if !h2.ready.Load() || h2.sent.Swap(true) {
		return
	}
	if h2.own != nil {
		h2.own.goAwayGraceful()
		return
	}
	// Shutdown runs x/net's graceful-shutdown hook on its own goroutine
	// and returns at once: the http.Server serves no listener and tracks
	// no connection of its own.
	h2.hs.Shutdown(context.Background())
}

// GoAway asks every open HTTP/2 connection to end gracefully: each is
// sent GOAWAY, finishes the streams it has, refuses new ones and closes;
// its client opens a new connection for its next requests, which gets
// the limits and certificates in force then (an HTTP/2 connection's
// SETTINGS are fixed as it starts). HTTP/1.x connections, which apply
// new limits to their next request, are left alone, and so is a
// connection still in its TLS handshake (its SETTINGS will be those in
// force when it starts serving HTTP/2). A reload calls it.
// GoAway returns at once; it is safe for concurrent use.
func (s *Server) GoAway() {
	s.init()
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.h2conns))
	for c := range s.h2conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.goAway()
	}
}

// h2cPreface reports whether the head at rbuf[r:w], refused for its
// HTTP version, is the HTTP/2 preface an h2c client with prior knowledge
// opens with, on a connection that may switch to it.
func (c *conn) h2cPreface(err *ProtocolError) bool {
	return c.h2c && err == errHTTPVersion && c.served == 0 && bytes.HasPrefix(c.rbuf[c.r:c.w], http2Preface)
}

// http2Conn is the connection x/net serves: reads return pre first, and
// writes are counted in the server's Stats.
type http2Conn struct {
	net.Conn
	srv *Server
	pre []byte
}

func (nc *http2Conn) Read(p []byte) (int, error) {
	if len(nc.pre) > 0 {
		n := copy(p, nc.pre)
		nc.pre = nc.pre[n:]
		return n, nil
	}
	return nc.Conn.Read(p)
}

func (nc *http2Conn) Write(p []byte) (int, error) {
	n, err := nc.Conn.Write(p)
	nc.srv.stats.bytesWritten.Add(uint64(n))
	return n, err
}

// http2TLSConn is an http2Conn over TLS: x/net reads the connection's
// TLS state through ConnectionState (for Request.TLS, and to refuse TLS
// below 1.2 and the cipher suites RFC 9113 §9.2.2 forbids).
type http2TLSConn struct {
	*http2Conn
	tc *tls.Conn
}

func (nc *http2TLSConn) ConnectionState() tls.ConnectionState { return nc.tc.ConnectionState() }

// Close closes the socket beneath the TLS connection, without the
// close_notify alert crypto/tls would send first: that waits for any
// write in progress, which to a client that reads nothing takes until
// WriteTimeout. HTTP/2 ends connections with its own GOAWAY.
func (nc *http2TLSConn) Close() error { return nc.tc.NetConn().Close() }

// http2Handler serves the streams of an HTTP/2 connection with its
// Handler, through the bridge, under the server's limits.
type http2Handler struct{ c *conn }

func (h http2Handler) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	h.c.srv.stats.requests.Add(1)
	serveBridged(h.c.srv, h.c.h, w, hr)
}
