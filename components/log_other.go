//go:build !unix

package components

import "os"

// logReopenSignals is empty where there is no SIGUSR1: Log.ReopenOnSignal
// then needs the signals named.
var logReopenSignals []os.Signal
