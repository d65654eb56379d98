//go:build unix

package components

import (
	"os"
	"syscall"
)

// logReopenSignals are the signals Log.ReopenOnSignal listens for when
// given none: SIGUSR1, as logrotate configurations expect.
var logReopenSignals = []os.Signal{syscall.SIGUSR1}
