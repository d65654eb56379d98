//go:build linux

package supervisor

import (
	"context"

	"github.com/sluice-server/sluice/daemon"
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
	return daemon.OnSignals(ctx, daemon.SignalActions{Reload: m.Reload, ReopenLogs: m.ReopenLogs, Upgrade: m.Upgrade})
}
