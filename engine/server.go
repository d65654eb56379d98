package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/engine/timeout"
	"github.com/sluice-server/sluice/sock"
)

// ErrServerClosed is returned by Serve and ListenAndServe after Shutdown
// or Close. It is net/http's http.ErrServerClosed, so code that stops
// either kind of server recognises it the same way (errors.Is or ==).
var ErrServerClosed = http.ErrServerClosed

// Server serves HTTP/1.x on listeners with one goroutine per connection,
// and HTTP/2 where a listener's options offer it (see ListenerOptions).
//
// Set the exported fields before the first call to Serve and do not change
// them afterwards. The zero value with a Handler set is a valid
// configuration. A Server's methods are safe for concurrent use.
type Server struct {
	// Handler answers every request.
	Handler Handler

	// Limits bounds sizes and times; zero fields take their defaults.
	// SetLimits changes them while the server runs.
	Limits Limits

	// ServerHeader is the value of the Server header field on every
	// response; empty sends none. SetServerHeader changes it while the
	// server runs.
	ServerHeader string

	// ExtraMethods lists request methods beyond RFC 9110's (GET, HEAD,
	// POST, PUT, DELETE, CONNECT, OPTIONS, TRACE) and PATCH that reach the
	// handler; requests with any other method get 501 Not Implemented.
	// SetExtraMethods changes them while the server runs.
	ExtraMethods []string

	// Logger receives errors worth an operator's attention (handler panics,
	// accept failures). Nil means slog.Default().
	Logger *slog.Logger

	// OnRefused, if set, is called for every request the engine answers
	// itself without calling Handler (see Refusal), once the response is
	// composed and before it is sent, so that an access log can record
	// those requests too. It
	// is called on the connection's goroutine (sometimes inside the
	// runtime poller's read callback), so it must not block; the Refusal
	// and what it points to are valid only until it returns.
	OnRefused func(*Refusal)

	initOnce sync.Once
	set      atomic.Pointer[settings] // Limits, ServerHeader and ExtraMethods as they are now
	tm       *timeout.Manager

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	h2conns   map[*conn]struct{} // HTTP/2 connections (see http2.go)
	closed    atomic.Bool        // Shutdown or Close called
	cutting   atomic.Bool        // Close, or Shutdown's context done: connections are cut, HTTP/2 ones too
	draining  atomic.Bool        // Drain called (see drain.go)
	open      atomic.Int64
	slot      chan struct{} // signalled when a connection closes
	quit      chan struct{} // closed by Shutdown or Close: idle runners exit

	runnerMu    sync.Mutex
	idleRunners []*runner   // see goroutines.go
	taskRunners taskRunners // see http2_runners.go

	runners     atomic.Int64 // runner goroutines running, idle ones included (see goroutines.go)
	parkNewAt   int64        // runners from which the accept loop parks new connections (maxIdleRunners; tests change it)
	serving     atomic.Int64 // connections runners are serving now
	burst       burstState
	stopOnce    sync.Once
	stats       counters
	deferAccept deferState // see deferaccept.go

	parkHook    func(*conn)   // if set, called as a connection is about to park (for tests)
	parkedHook  func(*conn)   // if set, called as a connection in the park set has parked again (for tests)
	sparseAfter atomic.Int64  // nanoseconds; see park.go (tests change it)
	wakes       atomic.Uint32 // waits of its raw connections that ended with bytes (see crowd.go)
}

// counters are a Server's statistics, updated atomically.
type counters struct {
	accepted, requests, refused, panics, bytesWritten atomic.Uint64
	closing                                           atomic.Uint64 // requests whose client asked to close after them
	parked                                            atomic.Int64  // connections parked now (see park.go)
	h2ReadStalls                                      atomic.Uint64 // times an HTTP/2 reader waited for its output to drain
}

// Stats is a snapshot of a Server's counters since it started.
type Stats struct {
	Accepted     uint64 // connections accepted
	Open         int64  // connections open now
	Requests     uint64 // requests whose head parsed (a handler or an engine answer followed)
	Refused      uint64 // requests the engine itself refused (malformed heads, limits, unknown methods)
	Panics       uint64 // handler panics
	BytesWritten uint64 // response bytes written to sockets, headers included
}

// Stats returns the server's counters. It is safe to call at any time
// from any goroutine.
func (s *Server) Stats() Stats {
	return Stats{
		Accepted:     s.stats.accepted.Load(),
		Open:         s.open.Load(),
		Requests:     s.stats.requests.Load(),
		Refused:      s.stats.refused.Load(),
		Panics:       s.stats.panics.Load(),
		BytesWritten: s.stats.bytesWritten.Load(),
	}
}

// settings are the values of Limits, ServerHeader and ExtraMethods the
// server applies: replaced whole (SetLimits, SetServerHeader,
// SetExtraMethods), never modified, so that a connection reads a
// consistent set with one atomic load.
type settings struct {
	limits      Limits          // with the defaults filled in
	serverLine  []byte          // "Server: …\r\n", or nil
	serverValue string          // its value, for HTTP/2 responses
	methods     map[string]bool // ExtraMethods
}

// limits returns the limits in force. The Limits it points to never
// change.
func (s *Server) limits() *Limits { return &s.set.Load().limits }

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.set.Store(&settings{
			limits:      s.Limits.withDefaults(),
			serverLine:  serverLine(s.ServerHeader),
			serverValue: s.ServerHeader,
			methods:     methodSet(s.ExtraMethods),
		})
		lim := s.limits()
		s.tm = timeout.New(tickFor(lim), lim.IdleTimeout)
		s.tm.SetIdleNotice(idleNoticeFor(lim))
		s.listeners = map[net.Listener]struct{}{}
		s.h2conns = map[*conn]struct{}{}
		s.slot = make(chan struct{}, 1)
		s.quit = make(chan struct{})
		s.sparseAfter.Store(int64(sparseAfter))
		s.burst.at, s.burst.quiet, s.burst.gap = burstGoroutines, int64(burstQuiet), int64(burstReleaseGap)
		s.parkNewAt = maxIdleRunners
		go s.reapRunners()
	})
}

func serverLine(v string) []byte {
	if v == "" {
		return nil
	}
	return []byte("Server: " + v + "\r\n")
}

func methodSet(ms []string) map[string]bool {
	set := make(map[string]bool, len(ms))
	for _, m := range ms {
		set[m] = true
	}
	return set
}

// update replaces the settings with a copy that f changes.
func (s *Server) update(f func(*settings)) {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := *s.set.Load()
	f(&st)
	s.set.Store(&st)
}

// SetLimits replaces the limits the server applies (Limits, whose field
// it leaves as it was set), while it runs: zero fields take their
// defaults. Each limit is read where it applies, so the new ones apply
// from then on to what starts afterwards, on new and open connections
// alike: a request head's limits and HeaderTimeout as the head begins
// (a keep-alive connection's next request), MaxBodyBytes, BodyTimeout
// and MinBodyRate as a body begins, MaxDrainBytes as a request ends,
// WriteTimeout at each write, MaxConns at each accept, and IdleTimeout
// and BusyIdleTimeout at once to idle connections. The timeout
// manager's tick is chosen once, by the limits of the first Serve (see
// tickFor): a timeout made shorter later may fire up to 250ms late.
// SetLimits is safe for concurrent use with serving.
func (s *Server) SetLimits(l Limits) {
	s.update(func(st *settings) { st.limits = l.withDefaults() })
	s.tm.SetIdleNotice(idleNoticeFor(s.limits()))
	s.adjustIdle()
}

// SetServerHeader replaces the Server field's value (ServerHeader, whose
// field it leaves as it was set) on the responses composed from then on;
// "" sends none. It is safe for concurrent use with serving.
func (s *Server) SetServerHeader(v string) {
	s.update(func(st *settings) { st.serverLine, st.serverValue = serverLine(v), v })
}

// SetExtraMethods replaces the methods beyond the standard ones that
// reach the handler (ExtraMethods, whose field it leaves as it was set),
// for the requests whose head is read from then on. The server keeps no
// reference to ms. It is safe for concurrent use with serving.
func (s *Server) SetExtraMethods(ms []string) {
	s.update(func(st *settings) { st.methods = methodSet(ms) })
}

// idleNotice is how long a keep-alive connection waits before its wait
// moves off its goroutine, to be parked or to go on on a fresh goroutine
// with a minimal stack (sooner when the idle timeouts are short: see
// idleNoticeFor).
const idleNotice = 250 * time.Millisecond

// idleNoticeFor returns the idle notice for the limits l.
func idleNoticeFor(l *Limits) time.Duration {
	return min(idleNotice, l.IdleTimeout/2, l.BusyIdleTimeout/2)
}

// idleMoves counts idle waits moved off their goroutines, for tests.
var idleMoves atomic.Int64

// tickFor picks the timeout manager's tick: a quarter of the shortest
// timeout, between 10ms and the idle notice. A sweep of 10,000
// connections takes some tens of microseconds.
func tickFor(l *Limits) time.Duration {
	d := min(l.HeaderTimeout, l.BusyIdleTimeout, l.BodyTimeout, l.WriteTimeout, l.IdleTimeout) / 4
	return max(10*time.Millisecond, min(d, idleNotice))
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Server) shuttingDown() bool { return s.closed.Load() }

// knownMethod reports whether m is a standard method or listed in
// ExtraMethods.
func (s *Server) knownMethod(m []byte) bool {
	switch string(m) {
	case "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "CONNECT", "TRACE":
		return true
	}
	set := s.set.Load().methods
	return len(set) > 0 && set[string(m)]
}

// ListenAndServe listens on the TCP address addr (see Listen) and serves
// it. It returns the error from Listen or Serve: after Shutdown or Close
// that is ErrServerClosed, and a server already shut down returns it at
// once, without listening.
func (s *Server) ListenAndServe(addr string) error {
	if s.closed.Load() {
		return ErrServerClosed
	}
	ln, err := Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Serve accepts connections on ln and serves each on its own goroutine,
// until Shutdown or Close (then it returns ErrServerClosed, at once if
// called after them) or a permanent accept error. Temporary accept
// errors, such as running out of file descriptors (EMFILE, ENFILE), are
// retried after a back-off that doubles from 5ms up to one second and is
// forgotten only after a second without errors; they are logged at most
// once a second, each warning counting the errors left unlogged
// ("suppressed"). At EMFILE and ENFILE the longest-idle connection is
// also closed. Serve closes ln when it returns.
func (s *Server) Serve(ln net.Listener) error {
	return s.ServeWith(ln, ListenerOptions{})
}

// ListenerOptions say how ServeWith serves the connections of one
// listener.
type ListenerOptions struct {
	// TLS, if set, serves every connection over TLS with this config
	// (crypto/tls's server side; set its NextProtos to "h2", "http/1.1"
	// to offer HTTP/2 and HTTP/1.1 by ALPN, or "http/1.1" alone: a
	// connection whose client chooses "h2" is served as HTTP/2). The handshake must finish within Limits.HeaderTimeout; until
	// it does the connection counts as idle (see Shutdown). Requests then
	// carry the connection's state in Request.TLS. The config must not be
	// modified once ServeWith is called; to change certificates or
	// settings while serving, set its GetCertificate or
	// GetConfigForClient. An idle TLS connection waits for its next
	// request parked, as a plain one does (on Linux, without a
	// goroutine), but files are copied through crypto/tls rather than
	// sent with sendfile.
	TLS *tls.Config

	// Handler, if set, answers the requests of this listener's
	// connections instead of Server.Handler.
	Handler Handler

	// H2C, on a listener without TLS, serves HTTP/2 over cleartext to a
	// client with prior knowledge (RFC 9113 §3.3): a connection that
	// opens with the HTTP/2 preface is served as HTTP/2, any other as
	// HTTP/1.x. The HTTP/1.1 Upgrade to h2c, which RFC 9113 deprecates,
	// is not offered. Over TLS, HTTP/2 is chosen by ALPN instead: list
	// "h2" in TLS.NextProtos.
	H2C bool
}

// ServeWith is Serve with options for this listener: TLS, or a handler
// of its own.
func (s *Server) ServeWith(ln net.Listener, o ListenerOptions) error {
	if s.Handler == nil && o.Handler == nil {
		return errors.New("engine: Server.Handler is nil")
	}
	s.init()
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	sock.SetDeferAccept(ln, s.deferAccept.on)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()

	var backoff sock.AcceptBackoff
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing() {
				return ErrServerClosed
			}
			if !sock.Temporary(err) {
				return err
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				s.tm.CloseIdle(1)
			}
			wait, warn, suppressed := backoff.Failed(s.tm.Now())
			if warn {
				s.logger().Warn("accept failed; retrying", "error", err, "backoff", wait,
					"suppressed", suppressed)
			}
			select {
			case <-time.After(wait):
			case <-s.quit:
			}
			continue
		}
		if n := backoff.Succeeded(s.tm.Now()); n > 0 {
			s.logger().Warn("accept failed; recovered", "suppressed", n)
		}
		s.stats.accepted.Add(1)
		s.admit()
		s.startNew(newConn(s, nc, &o))
	}
}

// admit counts a new connection and applies the load policy: above half
// of MaxConns idle connections get BusyIdleTimeout; at MaxConns the
// longest-idle connection is closed, or, when none is idle, admit waits for
// a connection to close.
func (s *Server) admit() {
	for {
		n := s.open.Load()
		if n < int64(s.limits().MaxConns) {
			s.open.Add(1)
			s.adjustIdle()
			return
		}
		if s.tm.CloseIdle(1) == 0 {
			select {
			case <-s.slot:
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		// The closed connection gives back its slot as it exits.
		select {
		case <-s.slot:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *Server) adjustIdle() {
	lim := s.limits()
	d := lim.IdleTimeout
	if s.open.Load() > int64(lim.MaxConns/2) {
		d = lim.BusyIdleTimeout
	}
	if s.tm.IdleTimeout() != d {
		s.tm.SetIdleTimeout(d)
	}
}

func (s *Server) connClosed(*conn) {
	s.open.Add(-1)
	s.adjustIdle()
	select {
	case s.slot <- struct{}{}:
	default:
	}
}

// OpenConns returns the number of open connections.
func (s *Server) OpenConns() int { return int(s.open.Load()) }

// Shutdown stops the server gracefully: it closes the listeners, closes
// idle connections (between requests, or new and silent), lets requests
// in flight finish (their responses carry
// "Connection: close"), and returns when every connection is closed. If
// ctx ends first, the remaining connections are interrupted and ctx's
// error is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.init()
	s.beginClose()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		s.tm.CloseIdle(int(s.open.Load()) + 1)
		if s.open.Load() == 0 {
			s.stopOnce.Do(s.tm.Stop)
			return nil
		}
		select {
		case <-ctx.Done():
			s.cutting.Store(true)
			s.tm.ExpireAll()
			go s.stopWhenDrained()
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stopWhenDrained stops the timeout manager once no connection is open.
func (s *Server) stopWhenDrained() {
	for s.open.Load() > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	s.stopOnce.Do(s.tm.Stop)
}

// Close stops the server at once: listeners and connections are closed
// without waiting for requests in flight.
func (s *Server) Close() error {
	s.init()
	s.cutting.Store(true)
	s.beginClose()
	s.tm.ExpireAll()
	go s.stopWhenDrained()
	return nil
}

func (s *Server) beginClose() {
	s.mu.Lock()
	if !s.closed.Swap(true) {
		close(s.quit)
	}
	for ln := range s.listeners {
		ln.Close()
	}
	s.mu.Unlock()
	s.GoAway()
}

// appendServerFields appends the Server and Date lines.
func (s *Server) appendServerFields(b []byte) []byte {
	b = append(b, s.set.Load().serverLine...)
	return appendDate(b, s.tm.Now())
}
