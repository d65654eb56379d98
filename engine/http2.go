package engine

import (
	"bytes"
	"net"
	"sync/atomic"
)

// HTTP/2. A TLS connection whose client chose "h2" by ALPN, or, on a
// listener with ListenerOptions.H2C, a plain connection that opens with
// the HTTP/2 connection preface, is served by the engine's own HTTP/2
// server (RFC 9113; http2_*.go): framing, flow control, stream states and
// the defences against the known attacks are the engine's, header
// compression is golang.org/x/net/http2/hpack's. Each stream runs the
// connection's Handler on a goroutine of its own, with a Request built
// from the decoded header block and a ResponseWriter that frames the
// response, so every stream runs the same handler an HTTP/1.x request
// does.
//
// Each connection takes its SETTINGS from the limits in force as it
// starts (they cannot change later), and ends gracefully on its own
// (goAway), which the engine's timeout manager, Shutdown, Drain and
// GoAway use.
//
// The connection keeps its handle in the timeout manager: armed with
// HeaderTimeout until the client's preface and SETTINGS, then idle while
// no stream is open and no handler runs, so IdleTimeout,
// BusyIdleTimeout, MaxConns and Shutdown treat an HTTP/2 connection with
// no stream as an idle HTTP/1.x one; but firing it sends GOAWAY rather
// than cutting the connection, which closes once its streams are done (a
// second after the GOAWAY when there are none, so the client reads it).

// http2Preface is the start of the HTTP/2 connection preface (RFC 9113
// §3.4) as the HTTP/1.x parser sees it: a request line of version 2.0.
var http2Preface = []byte("PRI * HTTP/2.0\r\n")

// http2State is what a connection serving HTTP/2 keeps beside its conn:
// its HTTP/2 connection, whether the client's preface came (before it,
// GOAWAY cannot be sent), and whether GOAWAY was asked for (want) and
// sent (sent). It is apart from conn to keep HTTP/1.x connections small.
type http2State struct {
	own               *h2Conn
	ready, want, sent atomic.Bool
}

// serveHTTP2 serves c as HTTP/2 until the connection ends. pre holds the
// bytes read already (an h2c client's preface and what followed it).
func (c *conn) serveHTTP2(pre []byte) {
	s := c.srv
	c.leaveParkSet() // it reads on its own goroutine from now on
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

// goAway ends an HTTP/2 connection gracefully: GOAWAY tells the client
// which streams will be served; those finish, new ones are refused, and
// the connection closes once they are done. It is safe to call from any
// goroutine, more than once; before the preface it is remembered, and
// done once the preface is read (see h2Conn.ready).
func (c *conn) goAway() {
	h2 := c.h2.Load()
	if h2 == nil {
		return
	}
	h2.want.Store(true)
	if !h2.ready.Load() || h2.sent.Swap(true) {
		return
	}
	h2.own.goAwayGraceful()
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

// http2Conn is the connection the HTTP/2 server reads and writes: reads
// return pre first, and writes are counted in the server's Stats.
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
