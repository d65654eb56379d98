//go:build !linux

package engine

import (
	"net"
	"testing"
)

// skipUnlessLinux skips a test of what the engine does on Linux only, what
// naming it.
func skipUnlessLinux(t testing.TB, what string) {
	t.Helper()
	t.Skip(what + ": Linux only")
}

// waitReceived and waitConsumed read a socket's queues with Linux's
// SIOCINQ and SIOCOUTQ (see helpers_linux_test.go); a test that calls them
// skips elsewhere.

func waitReceived(t testing.TB, _ net.Conn, _ int) {
	t.Helper()
	skipUnlessLinux(t, "SIOCINQ")
}

func waitConsumed(t testing.TB, _, _ net.Conn) {
	t.Helper()
	skipUnlessLinux(t, "SIOCINQ and SIOCOUTQ")
}
