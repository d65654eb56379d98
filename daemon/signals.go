package daemon

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// HandleSignals drives s by the process's signals, as nginx's master
// answers them:
//
//	SIGHUP          s.Reload
//	SIGUSR1         s.ReopenLogs
//	SIGUSR2         a warning: a binary upgrade needs a master (workers)
//	SIGINT, SIGTERM the returned context is done: Run shuts down
//
// (SIGUSR2 is caught so that 'sluice upgrade' sent to a single process
// does not end it, the signal's default action.)
//
// It catches the signals at once, so that one sent while the server
// starts (by `sluice reload` reading a fresh pid file) is not the default
// action's (which ends the process), and acts on them once s has
// started. After the first SIGINT or SIGTERM it lets go of them all, so
// that a second one ends the process the default way while the shutdown
// waits on slow requests. The returned stop function lets go of them too,
// and ends the context; call it when s is done.
//
// A program that drives the server otherwise — from a control channel, a
// parent process, an admin endpoint — calls Reload, ReopenLogs and
// Shutdown (or cancels Run's context) itself instead.
func HandleSignals(ctx context.Context, s *Server) (_ context.Context, stop context.CancelFunc) {
	s.init()
	return OnSignals(ctx, SignalActions{
		Ready:      s.started,
		Reload:     func() { s.Reload() },
		ReopenLogs: func() { s.ReopenLogs() },
		Upgrade: func() {
			s.logger().Warn("SIGUSR2 ignored: a binary upgrade needs workers (workers: N) under a master")
		},
	})
}

// SignalActions says what OnSignals does for each signal it handles.
type SignalActions struct {
	// Ready, if not nil, holds the signals back until it is closed (the
	// server has started); they are caught meanwhile, not lost.
	Ready <-chan struct{}
	// Reload runs on SIGHUP, ReopenLogs on SIGUSR1, Upgrade on SIGUSR2;
	// each is called on OnSignals' goroutine, one at a time. Nil ones
	// leave their signal caught and ignored.
	Reload, ReopenLogs, Upgrade func()
}

// OnSignals catches SIGHUP, SIGUSR1, SIGUSR2, SIGINT and SIGTERM at once
// and, once a.Ready is closed, runs a's action for each of the first
// three; on SIGINT or SIGTERM it ends the returned context and lets go of
// every signal, so that a second one takes its default action (ending
// the process) while a shutdown waits on slow requests. The returned stop
// function lets go of the signals too and ends the context. HandleSignals
// and the supervisor's master are built on it.
func OnSignals(ctx context.Context, a SignalActions) (_ context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2)
	run := func(f func()) {
		if f != nil {
			f()
		}
	}
	go func() {
		defer signal.Stop(sigs)
		if a.Ready != nil {
			select {
			case <-a.Ready:
			case <-ctx.Done():
				return
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case sig := <-sigs:
				switch sig {
				case syscall.SIGHUP:
					run(a.Reload)
				case syscall.SIGUSR1:
					run(a.ReopenLogs)
				case syscall.SIGUSR2:
					run(a.Upgrade)
				default:
					signal.Stop(sigs)
					cancel()
					return
				}
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel()
	}
}
