// Package sluicetest holds helpers for the tests of Sluice and of programs
// built on it. NewServer starts an engine.Server on a loopback socket, as
// net/http/httptest does for net/http: one call listens, serves and
// arranges a graceful shutdown when the test ends. Get and Do send a
// request and read the whole answer, NeedTool finds an outside program a
// test runs, WaitFor waits for a condition, and Buffer collects a log the
// test reads while it is written. CA makes throwaway certificates for
// tests that serve TLS. NetHosts (Linux, root) makes network namespaces
// that stand for other machines, each with its own address.
//
// It imports "testing", so only tests may import it; the sluice binary
// does not link it.
package sluicetest

import (
	"context"
	"errors"
	"net"
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
	// URL is "http://" followed by Addr for a TCP listener, the base of
	// the URLs a client requests; it is empty for a Unix socket.
	URL string
	// Network and Addr are the listener's network ("tcp" or "unix") and
	// address (host:port, or the socket's path), as net.Dial takes them.
	Network, Addr string
	// Engine is the server, for its Stats and OpenConns, or to Close it
	// at once; its fields must not change once it serves.
	Engine *engine.Server

	done      chan error // Serve's result
	closeOnce sync.Once
	closeErr  error
}

// An Option configures a Server before it starts serving.
type Option func(*options)

type options struct {
	network, addr string
	configure     []func(*engine.Server)
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

// NewServer starts a server answering with h on a fresh loopback TCP port
// (or where a Listen option says) and returns it serving. It fails the
// test at once if it cannot listen. When the test and its subtests end,
// the server is closed as by Close, and an error from that fails the
// test with a dump of every goroutine's stack, to show what held up the
// shutdown.
func NewServer(t testing.TB, h engine.Handler, opts ...Option) *Server {
	t.Helper()
	s, err := Start(h, opts...)
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
		done:    make(chan error, 1),
	}
	if s.Network == "tcp" {
		s.URL = "http://" + s.Addr
	}
	go func() { s.done <- es.Serve(ln) }()
	return s, nil
}

// Dial opens a connection to the server, for a test that writes raw
// request bytes.
func (s *Server) Dial() (net.Conn, error) {
	return net.Dial(s.Network, s.Addr)
}

// Close shuts the server down gracefully: it stops listening, lets
// requests in flight finish for up to ShutdownTimeout and then
// interrupts them, and returns once Serve has returned. It reports a
// shutdown that had to interrupt requests, or Serve failing other than
// by being closed; calls after the first return the same result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
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
