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
	ctx, cancel := context.WithCancel(ctx)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		defer signal.Stop(sigs)
		select {
		case <-s.started:
		case <-ctx.Done():
			return
		}
		for {
			select {
			case <-ctx.Done():
				return
			case sig := <-sigs:
				switch sig {
				case syscall.SIGHUP:
					s.Reload()
				case syscall.SIGUSR1:
					s.ReopenLogs()
				case syscall.SIGUSR2:
					s.logger().Warn("SIGUSR2 ignored: a binary upgrade needs workers (workers: N) under a master")
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
