package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/sluice-server/sluice/certs"
	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/engine"
)

// DefaultGrace is how long requests in flight get to finish when Grace is
// zero: at shutdown, and on the old config after a reload.
const DefaultGrace = 10 * time.Second

// ErrNotRunning is returned by Reload, ReopenLogs and Shutdown when the
// Server has not started, or has shut down.
var ErrNotRunning = errors.New("daemon: server not running")

// ErrStarted is returned by Start (and Run) on a Server started before,
// even one that failed to start or has shut down: a Server runs once.
var ErrStarted = errors.New("daemon: server started before")

// Server runs a config as a server: it opens the listeners the config
// lists, serves its routes, loads it again on Reload, reopens its log
// files on ReopenLogs, writes its pid file, and shuts down gracefully.
//
// Set the exported fields before Start (or Run) and do not change them
// afterwards; Load is required. The methods are safe for concurrent use:
// Start, Reload, ReopenLogs and Shutdown run one at a time (a Reload
// called during another waits for it).
type Server struct {
	// Load returns the config to serve: Start calls it once, Reload again
	// each time. Build the config's components with ctx (the
	// config.Loader's Context): it gives them the server's open
	// connections and its log.
	Load func(ctx components.Context) (*config.Config, error)

	// Name names the config in log records (config=NAME): its file name,
	// usually.
	Name string

	// Attrs are added to each "listening" log record, to say what is
	// served: "config", file, say.
	Attrs []any

	// Grace bounds how long requests in flight get to finish on a config
	// a reload replaced, after which the config is closed under them, and
	// at shutdown in Run. Zero means DefaultGrace.
	Grace time.Duration

	// Listen opens the listener for an address of the config, at Start
	// and for the addresses a reload adds. Nil means the package's Listen.
	// A program that already holds listening sockets (inherited from a
	// parent process, or opened before dropping privileges) returns them
	// here; a listener is closed when a reload drops its address, and at
	// shutdown.
	Listen func(config.Address) (net.Listener, error)

	// Stdout and Stderr are where a config's log goes when its output is
	// "stdout" or "stderr"; nil means os.Stdout and os.Stderr.
	Stdout, Stderr io.Writer

	// Logger receives what is logged before the config's log is set up:
	// the first Load's component warnings, a log file that cannot be
	// opened. Nil means slog.Default().
	Logger *slog.Logger

	// SetSlogDefault makes the config's log slog's default logger too
	// (slog.SetDefault) while the server runs, so that what packages log
	// through slog.Default (pipe's recovered panics, files' errors)
	// reaches it. Shutdown restores the previous default.
	SetSlogDefault bool

	// ACMECacheOnly makes the listeners with tls.acme serve the
	// certificates that another process obtains and renews into the
	// section's data directory (a certs.Issuer: a supervisor's master),
	// rather than ask the authority themselves. A certificate is read
	// from the directory at its first handshake and read again when its
	// file changes (looked at once a second at most), so a renewal
	// reaches the handshakes that follow; a handshake for a domain whose
	// certificate is not there yet fails. Challenges are answered from
	// the directory too (autocert keeps its HTTP-01 tokens and TLS-ALPN-01
	// certificates there), so any process sharing it can answer the
	// authority's validation of an order another started.
	ACMECacheOnly bool

	// Applied, if set, is called with each config once it serves: the
	// first at Start, then each that a Reload applied (not those it
	// rejected). It runs while Start or Reload holds the server's lock,
	// and must not call them.
	Applied func(*config.Config)

	// HTTP3ReusePort binds the UDP sockets of the listeners with http3
	// with SO_REUSEPORT, for a worker among several that each bind their
	// own on the same port (where HTTP3Socket gives none): the kernel
	// spreads the datagrams among them by a hash of their addresses and
	// ports (see docs/http3.md). Without it a UDP port already bound is
	// an error, as a TCP one is.
	HTTP3ReusePort bool

	// HTTP3Socket, if set, gives the UDP socket of each listener with
	// http3, as a supervisor's master holds them (see
	// docs/workers.md): the listener serves it, and closes it when it
	// closes. A nil socket and nil error: the listener binds its own.
	HTTP3Socket func(config.Address) (*net.UDPConn, error)

	// QUICConnectionIDs, if set, makes the connection IDs of every
	// HTTP/3 connection (package quicsteer's Generator, whose tag a
	// master's steering reads); nil: 8 random bytes. It must be safe
	// for concurrent use.
	QUICConnectionIDs quic.ConnectionIDGenerator

	// QUICSecret, if set, is 32 bytes from which every HTTP/3 listener
	// derives its stateless reset key (RFC 9000 §10.3) and the key of
	// its address-validation tokens (Retry, NEW_TOKEN): processes that
	// share it (a master's workers, across its reloads and binary
	// upgrades) end at once a connection that reaches one of them
	// without its state, and honour each other's tokens. Nil: the
	// Server makes a random one at its first Start, kept across its
	// reloads. It must not change once Start is called.
	QUICSecret []byte

	// QUICSecretFile, if set and QUICSecret is nil, is the file the
	// secret is kept in across restarts (see LoadQUICSecret,
	// QUICSecretFile): read, or made, when the first HTTP/3 listener
	// opens. Where it cannot be read or made, a warning is logged and
	// the secret is the process's own, as without it.
	QUICSecretFile string

	initOnce sync.Once
	quicKeys quicKeys // derived from QUICSecret (http3.go)
	srv      *engine.Server
	started  chan struct{} // closed when Start succeeds
	stopped  chan struct{} // closed when Shutdown begins
	failed   chan error    // a listener stopped accepting for good

	mu          sync.Mutex // serializes Start, Reload, ReopenLogs and Shutdown; guards what follows
	state       state
	sw          *Switch
	pidFile     string
	out         logOutput      // where the config's log writes
	logConfig   config.Log     // the log section out and log were set up by
	prevDefault *slog.Logger   // slog's default before SetSlogDefault
	certs       *certs.Manager // the TLS listeners' certificates, kept across reloads
	heap        *heapReleaser  // returns the heap a burst left, while running

	log atomic.Pointer[slog.Logger] // the config's log, once set up

	lnMu sync.Mutex // guards lns
	lns  []*listener
}

type state int

const (
	stateNew state = iota
	stateRunning
	stateDone // started and shut down, or failed to start
)

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.srv = &engine.Server{}
		s.started = make(chan struct{})
		s.stopped = make(chan struct{})
		s.failed = make(chan error, 1)
		s.certs = certs.NewManager(slog.New(logHandler{s}), s.ACMECacheOnly)
	})
}

// A LoadError is Load's error, returned by Start and Reload.
type LoadError struct{ Err error }

func (e *LoadError) Error() string { return e.Err.Error() }
func (e *LoadError) Unwrap() error { return e.Err }

// logger returns the config's log, or Logger before it is set up.
func (s *Server) logger() *slog.Logger {
	if l := s.log.Load(); l != nil {
		return l
	}
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Server) grace() time.Duration {
	if s.Grace > 0 {
		return s.Grace
	}
	return DefaultGrace
}

// context is what the components get from the server: its open
// connections, and a logger that writes to the server's log of the
// moment, so that components built before the config's log is set up
// (the first config's) still log where the config says.
func (s *Server) context() components.Context {
	return components.Context{
		Conns:  func() int { return s.srv.OpenConns() + int(s.http3Stats().open) },
		Logger: slog.New(logHandler{s}),
	}
}

// Start loads the config, sets up its log, opens its listeners, writes
// its pid file, switches to the config's user if it names one (a process
// started as root gives the log files and the tls.acme data directories
// to the user, then takes its groups, group and user; any other process
// must already run as them), starts asking for the tls.acme certificates
// (as the user, so the files written are the user's), and starts
// serving; it returns once the server accepts connections.
// Log records go to the config's log from then on. Once it serves, it
// tells a service manager that waits for it (systemd's $NOTIFY_SOCKET,
// see Notify): READY=1; Reload says RELOADING=1, then READY=1 when it is
// done, and Shutdown (or Drain) STOPPING=1.
//
// If Load fails, Start returns a *LoadError and logs nothing: how to show
// a config's errors (config.Errors, one per line with its position) is
// the caller's choice. Every other failure is logged, then returned (a
// listener that cannot be opened as a *ListenError), with what Start had
// set up undone. The config's warnings (config.Warning with no Stage) are
// logged; a component's were logged as it was built.
func (s *Server) Start() error {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateNew {
		return ErrStarted
	}
	s.state = stateDone // until it runs
	if s.Load == nil {
		return errors.New("daemon: Server.Load is nil")
	}
	cfg, err := s.Load(s.context())
	if err != nil {
		return &LoadError{err}
	}
	if err := s.openLog(cfg.Log); err != nil {
		s.logger().Error("cannot open the log", "output", cfg.Log.Output, "error", err, FixAttr(config.FileFix(err)))
		cfg.Close()
		return fmt.Errorf("log output %s: %w", cfg.Log.Output, err)
	}
	log := s.logger()
	logWarnings(log, cfg)
	s.sw = NewSwitch(cfg)
	s.sw.Grace = s.grace() // for the old config's requests after a reload
	s.srv.Handler = handler{s.sw}
	s.srv.Limits = cfg.Limits
	s.srv.ServerHeader = cfg.ServerHeader
	s.srv.ExtraMethods = cfg.ExtraMethods()
	s.srv.Logger = slog.New(logHandler{s}) // the log of the moment: a reload may change it
	s.srv.OnRefused = s.sw.LogRefusal

	opened, err := s.open(cfg.Listen, cfg)
	if err != nil {
		s.logListenError(err)
		s.sw.Close()
		s.closeLog()
		return err
	}
	if cfg.PidFile != "" {
		if err := WritePidFile(cfg.PidFile); err != nil {
			log.Error("cannot write the pid file", "error", err, FixAttr(PidFileFix(err)))
			s.closeListeners(opened)
			s.certs.Close()
			s.sw.Close()
			s.closeLog()
			return err
		}
		s.pidFile = cfg.PidFile
	}
	if err := s.switchUser(cfg); err != nil {
		log.Error("cannot serve as the config's user", "error", err)
		s.closeListeners(opened)
		s.certs.Close()
		if s.pidFile != "" {
			RemovePidFile(s.pidFile)
			s.pidFile = ""
		}
		s.sw.Close()
		s.closeLog()
		return err
	}
	s.certs.Start(cfg)
	s.serve(opened)
	s.heap = newHeapReleaser(s.logger)
	s.heap.start()
	s.state = stateRunning
	if s.Applied != nil {
		s.Applied(cfg)
	}
	close(s.started)
	s.notify(NotifyReady)
	return nil
}

// notify tells the service manager (see Notify), logging a failure.
func (s *Server) notify(send func() error) {
	if err := send(); err != nil {
		s.logger().Warn("cannot notify the service manager", "error", err)
	}
}

// lockRunning locks s.mu if s runs, for the caller to unlock; otherwise
// it returns ErrNotRunning.
func (s *Server) lockRunning() error {
	s.init()
	s.mu.Lock()
	if s.state != stateRunning {
		s.mu.Unlock()
		return ErrNotRunning
	}
	return nil
}

// logWarnings logs the config's own warnings; the components' went to
// their logger as they were built.
func logWarnings(log *slog.Logger, cfg *config.Config) {
	for _, w := range cfg.Warnings {
		if w.Stage != "" {
			continue
		}
		if w.Line > 0 {
			log.Warn(w.Msg, "at", fmt.Sprintf("%s:%d:%d", w.File, w.Line, w.Col))
		} else {
			log.Warn(w.Msg)
		}
	}
}

// Run starts the server (see Start), serves until ctx is done, Shutdown
// is called or a listener fails, and then shuts down, giving requests in
// flight Grace to finish. It returns Start's error, or the listener's,
// or nil: a shutdown that had to cut connections still open after the
// grace period is no failure of the server (a client was slow), only a
// warning in the log. HandleSignals makes a context that ends on SIGINT
// or SIGTERM.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Start(); err != nil {
		return err
	}
	var failure error
	select {
	case <-ctx.Done():
	case <-s.stopped: // Shutdown was called
		s.mu.Lock() // wait for it to finish
		s.mu.Unlock()
		return nil
	case failure = <-s.failed:
		s.logger().Error("server failed", "error", failure)
	}
	grace := s.grace()
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	s.shutdown(sctx, grace)
	return failure
}

// Failed returns a channel that receives the error of a listener that
// stopped accepting connections for good (not one a reload closed). The
// server serves on its other listeners; Run shuts it down. Only the first
// such error is sent.
func (s *Server) Failed() <-chan error {
	s.init()
	return s.failed
}

// Shutdown stops the server gracefully: it closes the listeners and idle
// connections and lets requests in flight finish (their responses carry
// "Connection: close"); once ctx is done, the connections still open are
// cut, with a warning counting them, and ctx's error is returned. Then it
// closes the config (and the configs a reload replaced that were still
// finishing requests), removes the pid file if it still holds this
// process's id, closes the log file, and restores slog's default logger
// if SetSlogDefault replaced it.
func (s *Server) Shutdown(ctx context.Context) error {
	var grace any = "none"
	if dl, ok := ctx.Deadline(); ok {
		grace = time.Until(dl).Round(time.Millisecond)
	}
	return s.shutdown(ctx, grace)
}

// StopAccepting closes the server's TCP and Unix listeners and returns
// once none of them accepts: a connection is either accepted already,
// and served on, or left in the socket's queue for whoever else holds the
// socket (a supervisor's newer workers). HTTP/3 is left as it is: a
// supervisor steers new QUIC connections away from a worker it retires.
// It is for a worker others take over from, before Drain or Shutdown
// (which close what is left); it is safe to call more than once and from
// any goroutine.
func (s *Server) StopAccepting() {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	for _, l := range s.lns {
		l.closing.Store(true)
		l.ln.Close() // waits for an Accept under way to return
	}
}

// Drain is Shutdown for a server others take over from (a worker a
// supervisor replaces): it stops accepting, but leaves idle keep-alive
// connections open, answering the next request on each with
// "Connection: close" (see engine.Server.Drain); connections still idle
// when ctx is done are closed. Then it tidies up as Shutdown does.
func (s *Server) Drain(ctx context.Context) error {
	var grace any = "none"
	if dl, ok := ctx.Deadline(); ok {
		grace = time.Until(dl).Round(time.Millisecond)
	}
	return s.stop(ctx, grace, s.srv.Drain)
}

// DrainBusy is Drain for a worker whose busy connections (tunnels,
// streams, long downloads) may outlast the grace period: idle keep-alive
// connections get idle to be asked their last request, as Drain gives
// them, and are then closed; busy ones run on until they end or ctx is
// done (see engine.Server.DrainBusy).
func (s *Server) DrainBusy(ctx context.Context, idle time.Duration) error {
	var bound any = "none"
	if dl, ok := ctx.Deadline(); ok {
		bound = time.Until(dl).Round(time.Second)
	}
	return s.stop(ctx, bound, func(ctx context.Context) error { return s.srv.DrainBusy(ctx, idle) })
}

func (s *Server) shutdown(ctx context.Context, grace any) error {
	return s.stop(ctx, grace, s.srv.Shutdown)
}

// stop ends the server with end (the engine's Shutdown or Drain).
func (s *Server) stop(ctx context.Context, grace any, end func(context.Context) error) error {
	if err := s.lockRunning(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.state = stateDone
	close(s.stopped)
	s.notify(NotifyStopping)
	s.certs.Close()
	log := s.logger()
	log.Info("shutting down", "grace", grace)
	// The connections still open when the grace runs out are counted
	// before the engine cuts them: counted after, some would already be
	// gone, and the log would say fewer were cut than were.
	inner, cancel := context.WithCancel(context.Background())
	defer cancel()
	var open int
	stopCount := context.AfterFunc(ctx, func() {
		open = s.srv.OpenConns() + int(s.http3Stats().open)
		cancel()
	})
	h3done := s.shutdownHTTP3(inner) // GOAWAY, beside the engine's
	err := end(inner)
	<-h3done
	stopCount()
	if err != nil {
		// open was written before cancel, which end saw.
		log.Warn("grace period over; connections cut", "connections", open)
		if ctx.Err() != nil {
			err = ctx.Err()
		}
	}
	s.lnMu.Lock()
	s.lns = nil // closed by s.srv.Shutdown
	s.lnMu.Unlock()
	s.sw.Close() // at once, under what still runs: no CGI program outlives us
	s.heap.Stop()
	if s.pidFile != "" {
		RemovePidFile(s.pidFile)
	}
	log.Info("stopped")
	s.closeLog()
	return err
}

// Stats returns the engine's counters (engine.Server.Stats): connections
// accepted and open, requests, refusals, panics and bytes written since
// Start. HTTP/3 connections (QUIC) count among those accepted and open,
// and their requests among the requests; the bytes written are those of
// TCP connections only. It is safe to call at any time.
func (s *Server) Stats() engine.Stats {
	s.init()
	st := s.srv.Stats()
	h3 := s.http3Stats()
	st.Accepted += h3.accepted
	st.Open += h3.open
	return st
}

// Addrs returns the addresses the server listens on, in the order they
// were opened: nil before Start and after Shutdown.
func (s *Server) Addrs() []net.Addr {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	var out []net.Addr
	for _, l := range s.lns {
		out = append(out, l.ln.Addr())
	}
	return out
}
