// Package sluicetest holds helpers for the tests of Sluice and of programs
// built on it. NewServer starts an engine.Server on a loopback socket, as
// net/http/httptest does for net/http: one call listens, serves and
// arranges a graceful shutdown when the test ends. Get and Do send a
// request and read the whole answer, NeedTool finds an outside program a
// test runs, WaitFor waits for a condition, and Buffer collects a log the
// test reads while it is written. NewTLSServer serves over TLS with a
// certificate from a CA, which makes throwaway certificates for tests
// that serve TLS. Exchange, RoundTrip and ReadResponse speak raw HTTP/1
// bytes to a server, for tests of the wire itself; Dial and DialTLS open
// a Conn to send them on one request after another, and Handshake
// reports what a TLS handshake gave. NetHosts (Linux, root) makes
// network namespaces that stand for other machines, each with its own
// address.
//
// It imports "testing", so only tests may import it; the sluice binary
// does not link it.
package sluicetest

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
)

// ShutdownTimeout bounds how long Close lets requests in flight finish
// before it interrupts their connections.
const ShutdownTimeout = 10 * time.Second

// A Server is an engine.Server serving on a listener of its own.
type Server struct {
	// URL is "http://" (for a TLS server "https://") followed by Addr
	// for a TCP listener, the base of the URLs a client requests; it is
	// empty for a Unix socket.
	URL string
	// Network and Addr are the listener's network ("tcp" or "unix") and
	// address (host:port, or the socket's path), as net.Dial takes them.
	Network, Addr string
	// Engine is the server, for its Stats and OpenConns, or to Close it
	// at once; its fields must not change once it serves.
	Engine *engine.Server
	// CA issued the certificate of a server started by NewTLSServer or
	// StartTLS: a client that trusts it trusts the server (see Client,
	// ClientConfig). TLS is that server's config, which must not be
	// modified once it serves. Both are nil for a server without TLS.
	CA  *CA
	TLS *tls.Config

	serverName string // the name the certificate is for: the listener's IP, or "localhost"
	h2         bool   // the HTTP2 option

	mu     sync.Mutex
	client *http.Client // Client's, for a TLS server, made on its first call

	done      chan error // Serve's result
	closeOnce sync.Once
	closeErr  error
}

// An Option configures a Server before it starts serving.
type Option func(*options)

type options struct {
	network, addr string
	configure     []func(*engine.Server)
	h2            bool

	// TLS servers only (tlsserver.go)
	ca           *CA
	cert         *tls.Certificate
	configureTLS []func(*tls.Config)
}

// Listen makes the server listen on network and addr, as engine.Listen
// takes them, instead of "tcp" on "127.0.0.1:0": for example "tcp" on
// "[::1]:0", or "unix" on a path in the test's temporary directory.
func Listen(network, addr string) Option {
	return func(o *options) { o.network, o.addr = network, addr }
}

// Configure calls f with the engine.Server before it serves, to set its
// fields (Limits, ErrorLog, OnRefused, ...); Handler is already set.
// Several Configure options run in order.
func Configure(f func(*engine.Server)) Option {
	return func(o *options) { o.configure = append(o.configure, f) }
}

// HTTP2 serves HTTP/2 beside HTTP/1.1: on a TLS server by ALPN, the
// config offering "h2" then "http/1.1" as the daemon's TLS listeners do
// (without it only "http/1.1" is offered); on a server without TLS to a
// client with prior knowledge (engine.ListenerOptions.H2C).
func HTTP2() Option {
	return func(o *options) { o.h2 = true }
}

// NewServer starts a server answering with h on a fresh loopback TCP port
// (or where a Listen option says) and returns it serving. It fails the
// test at once if it cannot listen. When the test and its subtests end,
// the server is closed as by Close, and an error from that fails the
// test with a dump of every goroutine's stack, to show what held up the
// shutdown.
func NewServer(t testing.TB, h engine.Handler, opts ...Option) *Server {
	t.Helper()
	return newServer(t, h, false, opts)
}

func newServer(t testing.TB, h engine.Handler, useTLS bool, opts []Option) *Server {
	t.Helper()
	s, err := start(h, useTLS, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Client may hold connections it dialed ahead and never used:
		// close them first, so they do not hold up the shutdown.
		Client.CloseIdleConnections()
		if err := s.Close(); err != nil {
			var b strings.Builder
			pprof.Lookup("goroutine").WriteTo(&b, 1)
			t.Errorf("sluicetest: closing the server: %v; goroutines:\n%s", err, b.String())
		}
	})
	return s
}

// Start is NewServer for code without a testing.TB, such as an Example:
// it returns the error if it cannot listen, and the caller must Close
// the server.
func Start(h engine.Handler, opts ...Option) (*Server, error) {
	return start(h, false, opts)
}

func start(h engine.Handler, useTLS bool, opts []Option) (*Server, error) {
	o := options{network: "tcp", addr: "127.0.0.1:0"}
	for _, opt := range opts {
		opt(&o)
	}
	ln, err := engine.Listen(o.network, o.addr)
	if err != nil {
		return nil, err
	}
	es := &engine.Server{Handler: h}
	for _, f := range o.configure {
		f(es)
	}
	s := &Server{
		Network: ln.Addr().Network(),
		Addr:    ln.Addr().String(),
		Engine:  es,
		h2:      o.h2,
		done:    make(chan error, 1),
	}
	lo := engine.ListenerOptions{H2C: o.h2}
	scheme := "http://"
	if useTLS {
		if err := s.setupTLS(ln.Addr(), &o); err != nil {
			ln.Close()
			return nil, err
		}
		lo = engine.ListenerOptions{TLS: s.TLS}
		scheme = "https://"
	}
	if s.Network == "tcp" {
		s.URL = scheme + s.Addr
	}
	go func() { s.done <- es.ServeWith(ln, lo) }()
	return s, nil
}

// Dial opens a connection to the server, for a test that writes raw
// request bytes. To a TLS server it is a *tls.Conn configured by
// ClientConfig, its handshake done.
func (s *Server) Dial() (net.Conn, error) {
	if s.TLS != nil {
		return tls.Dial(s.Network, s.Addr, s.ClientConfig())
	}
	return net.Dial(s.Network, s.Addr)
}

// Close shuts the server down gracefully: it stops listening, lets
// requests in flight finish for up to ShutdownTimeout and then
// interrupts them, and returns once Serve has returned. It reports a
// shutdown that had to interrupt requests, or Serve failing other than
// by being closed; calls after the first return the same result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		if s.client != nil {
			s.client.CloseIdleConnections()
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
		defer cancel()
		if err := s.Engine.Shutdown(ctx); err != nil {
			s.closeErr = errors.Join(s.closeErr, err)
		}
		if err := <-s.done; !errors.Is(err, engine.ErrServerClosed) {
			s.closeErr = errors.Join(s.closeErr, err)
		}
	})
	return s.closeErr
}
