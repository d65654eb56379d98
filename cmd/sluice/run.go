package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/engine"
)

// runner serves a config until SIGINT or SIGTERM and loads it again on
// SIGHUP.
type runner struct {
	log    *slog.Logger
	logOut *logFile // the error log's file, when it is one
	source string   // the config file, or flagsSource
	attrs  []any    // logged with "listening"
	load   func() (*config.Config, error)
	srv    *engine.Server
	sw     *config.Switch
	grace  time.Duration // for requests in flight at shutdown

	mu     sync.Mutex // guards lns
	lns    map[config.Address]*listener
	failed chan error // a listener stopped accepting for good
}

// listener is one listening socket being served.
type listener struct {
	ln      net.Listener
	closing atomic.Bool // closed by a reload, not failed
}

// context is what the components get from the server: the open
// connections, and a logger that writes through whatever slog.Default is
// when a record is logged, so components built before the config's log
// is set up (the first config's) still log where the config says.
func (r *runner) context() components.Context {
	return components.Context{
		Conns:  func() int { return r.srv.OpenConns() },
		Logger: slog.New(defaultHandler{}),
	}
}

// defaultHandler hands records to slog.Default's handler of the moment.
type defaultHandler struct{}

func (defaultHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return slog.Default().Handler().Enabled(ctx, l)
}

func (defaultHandler) Handle(ctx context.Context, rec slog.Record) error {
	return slog.Default().Handler().Handle(ctx, rec)
}

func (defaultHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return slog.Default().Handler().WithAttrs(as)
}

func (defaultHandler) WithGroup(name string) slog.Handler {
	return slog.Default().Handler().WithGroup(name)
}

// run loads the config, serves it and handles signals until shutdown. It
// returns the exit status.
func (r *runner) run(stderr io.Writer) int {
	// Catch the signals before anything can send them.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1)
	defer signal.Stop(sigs)

	cfg, err := r.load()
	if err != nil {
		r.reportInvalid(stderr, err)
		return exitError
	}
	if err := r.setLogger(cfg, stderr); err != nil {
		r.log.Error("cannot open the log", "output", cfg.Log.Output, "error", err)
		cfg.Close()
		return exitError
	}
	if r.logOut != nil {
		defer r.logOut.Close()
	}
	if cfg.Workers != 1 {
		r.log.Warn(config.WorkersWarning, "workers", workersString(cfg.Workers))
	}
	r.sw = config.NewSwitch(cfg)
	r.sw.Grace = r.grace // for the old config's requests after a reload
	r.srv.Handler = r.sw
	r.srv.Limits = cfg.Limits
	r.srv.ServerHeader = cfg.ServerHeader
	r.srv.ExtraMethods = cfg.ExtraMethods()
	r.srv.Logger = r.log
	r.srv.OnRefused = r.sw.LogRefusal
	r.lns = map[config.Address]*listener{}
	r.failed = make(chan error, 1)

	opened, err := r.open(cfg.Listen)
	if err != nil {
		r.logListenError(err)
		r.sw.Close()
		return exitError
	}
	if cfg.PidFile != "" {
		if err := writePidFile(cfg.PidFile); err != nil {
			r.log.Error("cannot write the pid file", "error", err)
			r.closeListeners(opened)
			r.sw.Close()
			return exitError
		}
		defer removePidFile(cfg.PidFile)
	}
	r.serve(opened)

	code := exitOK
loop:
	for {
		select {
		case sig := <-sigs:
			switch sig {
			case syscall.SIGHUP:
				r.reload()
			case syscall.SIGUSR1:
				r.reopenLogs()
			default:
				break loop
			}
		case err := <-r.failed:
			r.log.Error("server failed", "error", err)
			code = exitError
			break loop
		}
	}
	signal.Stop(sigs) // a second signal kills the process the default way
	shutdown(r.log, r.srv, r.grace)
	r.sw.Close() // at once, under what still runs: no CGI program outlives us
	if code == exitOK {
		r.log.Info("stopped")
	}
	return code
}

// shutdown stops srv gracefully, giving requests in flight grace to
// finish. The connections still open then are cut, with a warning saying
// how many; that is no failure of the server (a client was slow), so the
// caller still exits 0 and a service manager does not read the stop as
// failed.
func shutdown(log *slog.Logger, srv *engine.Server, grace time.Duration) {
	log.Info("shutting down", "grace", grace)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if srv.Shutdown(ctx) != nil {
		log.Warn("grace period over; connections cut", "connections", srv.OpenConns())
	}
}

// reportInvalid reports a config that cannot be served: a file's errors
// one per line as FILE:LINE:COL: message, then a log record; the flags'
// config's errors as log records (their positions are in no file).
func (r *runner) reportInvalid(stderr io.Writer, err error) {
	var errs config.Errors
	if !errors.As(err, &errs) {
		r.log.Error("cannot load the config", "config", r.source, "error", err)
		return
	}
	if r.source == flagsSource {
		for _, e := range errs {
			r.log.Error("cannot serve", "error", e.Msg)
		}
		return
	}
	fmt.Fprintln(stderr, errs.Error())
	r.log.Error("invalid config", "config", r.source, "errors", len(errs))
}

// open opens the listeners for addrs. If one fails it closes the others
// and returns a *listenError.
func (r *runner) open(addrs []config.Address) ([]*listener, error) {
	var opened []*listener
	for _, a := range addrs {
		ln, err := listen(a)
		if err != nil {
			r.closeListeners(opened)
			return nil, &listenError{addr: a, err: err}
		}
		l := &listener{ln: ln}
		r.mu.Lock()
		r.lns[a] = l
		r.mu.Unlock()
		opened = append(opened, l)
	}
	return opened, nil
}

// listenError is an address that could not be listened on.
type listenError struct {
	addr config.Address
	err  error
}

func (e *listenError) Error() string { return e.addr.String() + ": " + e.err.Error() }
func (e *listenError) Unwrap() error { return e.err }

// logListenError logs why open failed.
func (r *runner) logListenError(err error) {
	if le, ok := err.(*listenError); ok {
		r.log.Error("cannot listen", "addr", le.addr.String(), "error", le.err)
		return
	}
	r.log.Error("cannot listen", "error", err)
}

// listen opens a listening socket for a. A Unix socket file left behind
// by a process that is gone is removed first.
func listen(a config.Address) (net.Listener, error) {
	if a.Network == "unix" {
		if fi, err := os.Lstat(a.Addr); err == nil && fi.Mode()&os.ModeSocket != 0 {
			if c, err := net.Dial("unix", a.Addr); err == nil {
				c.Close()
			} else {
				os.Remove(a.Addr)
			}
		}
	}
	return engine.Listen(a.Network, a.Addr)
}

// serve starts serving the listeners.
func (r *runner) serve(lns []*listener) {
	for _, l := range lns {
		go func() {
			err := r.srv.Serve(l.ln)
			if errors.Is(err, engine.ErrServerClosed) || l.closing.Load() {
				return
			}
			select {
			case r.failed <- fmt.Errorf("%s: %w", l.ln.Addr(), err):
			default:
			}
		}()
		addr := l.ln.Addr().String()
		if l.ln.Addr().Network() == "unix" {
			addr = "unix:" + addr
		}
		r.log.Info("listening", append([]any{"addr", addr}, r.attrs...)...)
	}
}

func (r *runner) closeListeners(lns []*listener) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range lns {
		l.closing.Store(true)
		l.ln.Close()
		for a, x := range r.lns {
			if x == l {
				delete(r.lns, a)
			}
		}
	}
}

// reload loads the config again. A valid config takes over for new
// requests (those in flight finish on the old one); listen addresses that
// are new are opened first, and if one cannot be the reload is rejected;
// addresses no longer listed are closed after the switch (their open
// connections stay). Settings that need a restart are kept, with a
// warning. An invalid config is logged and changes nothing.
func (r *runner) reload() {
	r.log.Info("reloading", "config", r.source)
	cfg, err := r.load()
	if err != nil {
		var errs config.Errors
		if errors.As(err, &errs) {
			for _, e := range errs {
				r.log.Error("config error", "error", e.Error())
			}
		} else {
			r.log.Error("config error", "error", err)
		}
		r.log.Error("reload rejected; the running config keeps serving", "config", r.source)
		return
	}
	old := r.sw.Config()
	r.warnRestart(old, cfg)

	r.mu.Lock()
	var added []config.Address
	var removed []*listener
	for _, a := range cfg.Listen {
		if r.lns[a] == nil {
			added = append(added, a)
		}
	}
	for a, l := range r.lns {
		if !slices.Contains(cfg.Listen, a) {
			removed = append(removed, l)
		}
	}
	r.mu.Unlock()
	opened, err := r.open(added)
	if err != nil && errors.Is(err, syscall.EADDRINUSE) {
		opened, err = r.reopenSharingPort(added, removed)
	}
	if err != nil {
		r.logListenError(err)
		cfg.Close()
		r.log.Error("reload rejected; the running config keeps serving", "config", r.source)
		return
	}
	r.sw.Swap(cfg)
	r.serve(opened)
	for _, l := range removed {
		r.log.Info("closing listener", "addr", l.ln.Addr().String())
	}
	r.closeListeners(removed)
	r.log.Info("reloaded", "config", r.source, "routes", len(cfg.Routes))
}

// reopenSharingPort opens the added addresses after closing the removed
// listeners that share a TCP port with one of them: a socket on
// 0.0.0.0:8080 cannot be opened while this process still listens on
// 127.0.0.1:8080 (nor the other way round). Connections still queued on a
// listener closed this way are reset. If the added addresses still cannot
// be opened, the closed ones are opened again and the error returned.
func (r *runner) reopenSharingPort(added []config.Address, removed []*listener) ([]*listener, error) {
	ports := map[int]bool{}
	for _, a := range added {
		if a.Network == "tcp" {
			if _, p, err := net.SplitHostPort(a.Addr); err == nil {
				if n, err := strconv.Atoi(p); err == nil {
					ports[n] = true
				}
			}
		}
	}
	var clash []*listener
	var clashAddrs []config.Address
	r.mu.Lock()
	for a, l := range r.lns {
		if ta, ok := l.ln.Addr().(*net.TCPAddr); ok && ports[ta.Port] && slices.Contains(removed, l) {
			clash = append(clash, l)
			clashAddrs = append(clashAddrs, a)
		}
	}
	r.mu.Unlock()
	if len(clash) == 0 {
		return nil, syscall.EADDRINUSE
	}
	for _, l := range clash {
		r.log.Info("closing listener first: its port is reused", "addr", l.ln.Addr().String())
	}
	r.closeListeners(clash)
	opened, err := r.open(added)
	if err == nil {
		return opened, nil
	}
	if back, berr := r.open(clashAddrs); berr == nil {
		r.serve(back)
	} else {
		r.logListenError(berr)
	}
	return nil, err
}

// warnRestart warns about settings that changed but only take effect on a
// restart; the running values are kept.
func (r *runner) warnRestart(old, cfg *config.Config) {
	changed := func(key string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			r.log.Warn("changed setting needs a restart; keeping the running value", "key", key)
		}
	}
	changed("workers", old.Workers, cfg.Workers)
	changed("limits", old.Limits, cfg.Limits)
	changed("server_header", old.ServerHeader, cfg.ServerHeader)
	changed("log", old.Log, cfg.Log)
	changed("pid_file", old.PidFile, cfg.PidFile)
	if m := cfg.ExtraMethods(); !sameSet(m, old.ExtraMethods()) {
		r.log.Warn("the routes name new non-standard methods; requests with them get 501 until a restart", "methods", strings.Join(m, ","))
	}
}

func sameSet(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return len(a) == len(b)
}

// reopenLogs reopens the error log file and the components' log files.
func (r *runner) reopenLogs() {
	if r.logOut != nil {
		if err := r.logOut.Reopen(); err != nil {
			r.log.Error("cannot reopen the log", "error", err)
		}
	}
	if err := r.sw.Config().Reopen(); err != nil {
		r.log.Error("cannot reopen a log file", "error", err)
	}
	r.log.Info("log files reopened")
}

// setLogger makes the error log what cfg.Log asks for.
func (r *runner) setLogger(cfg *config.Config, stderr io.Writer) error {
	var w io.Writer = stderr
	switch cfg.Log.Output {
	case "stderr", "":
	case "stdout":
		w = os.Stdout
	default:
		f, err := openLogFile(cfg.Log.Output)
		if err != nil {
			return err
		}
		r.logOut, w = f, f
	}
	opts := &slog.HandlerOptions{Level: cfg.Log.Level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.Log.Format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	r.log = slog.New(h)
	slog.SetDefault(r.log)
	return nil
}

// logFile is an append-only log file that can be reopened under its name.
type logFile struct {
	mu   sync.Mutex
	path string
	f    *os.File
}

func openLogFile(path string) (*logFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &logFile{path: path, f: f}, nil
}

func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(p)
}

// Reopen opens the file's name again, which logrotate may have moved.
func (l *logFile) Reopen() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	l.mu.Lock()
	old := l.f
	l.f = f
	l.mu.Unlock()
	return old.Close()
}

func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

func workersString(n int) string {
	if n == 0 {
		return "auto"
	}
	return strconv.Itoa(n)
}

// writePidFile writes the process id to path.
func writePidFile(path string) error {
	return os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// removePidFile removes path if it still holds this process's id.
func removePidFile(path string) {
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(os.Getpid()) {
		os.Remove(path)
	}
}
