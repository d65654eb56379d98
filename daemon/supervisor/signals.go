//go:build linux

package supervisor

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// HandleSignals drives m by the process's signals, as nginx's master
// answers them:
//
//	SIGHUP          m.Reload: new workers with the new config take over
//	SIGUSR1         m.ReopenLogs, in the master and every worker
//	SIGUSR2         m.Upgrade: a new master of the binary takes over
//	SIGINT, SIGTERM the returned context is done: Run stops the workers
//
// After the first SIGINT or SIGTERM it lets go of the signals, so that a
// second one ends the master the default way (and the kernel ends its
// workers). The returned stop function lets go of them too.
func HandleSignals(ctx context.Context, m *Master) (_ context.Context, stop context.CancelFunc) {
	m.init()
	ctx, cancel := context.WithCancel(ctx)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		defer signal.Stop(sigs)
		for {
			select {
			case <-ctx.Done():
				return
			case sig := <-sigs:
				switch sig {
				case syscall.SIGHUP:
					m.Reload()
				case syscall.SIGUSR1:
					m.ReopenLogs()
				case syscall.SIGUSR2:
					m.Upgrade()
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
