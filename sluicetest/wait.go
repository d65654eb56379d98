package sluicetest

import (
	"testing"
	"time"
)

// WaitTimeout bounds how long WaitFor waits before it fails the test. It
// is a bound on a hung test, not a figure the test asserts.
const WaitTimeout = 10 * time.Second

// WaitFor polls cond every few milliseconds until it holds, and fails the
// test, naming what, if it does not within WaitTimeout. Tests use it to
// wait for something the server does in its own time (a connection
// closing, a process exiting) instead of sleeping a fixed time.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
