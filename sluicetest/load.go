package sluicetest

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// A Load sends requests from goroutines of its own until it is stopped,
// counting those served and those failed: a test changes the server
// under it, then checks that no request failed. Start one with
// StartLoad. Its methods are safe for concurrent use.
type Load struct {
	stop     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
	served   atomic.Int64
	failed   atomic.Int64
	firstErr atomic.Value // string: the first failure
}

// StartLoad starts n goroutines, each calling do over and over with a
// client: a new one from newClient for each goroutine (whose idle
// connections it closes when it stops), or, with newClient nil, the
// shared Client. do returns nil for a request served as the test wants,
// or what was wrong with it. The load runs until Stop, or until the test
// ends.
func StartLoad(t testing.TB, n int, newClient func() *http.Client, do func(*http.Client) error) *Load {
	l := &Load{stop: make(chan struct{})}
	t.Cleanup(func() { l.Stop() })
	for range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			c := Client
			if newClient != nil {
				c = newClient()
				defer c.CloseIdleConnections()
			}
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				if err := do(c); err != nil {
					l.failed.Add(1)
					l.firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				l.served.Add(1)
			}
		}()
	}
	return l
}

// Served returns how many requests were served so far.
func (l *Load) Served() int64 { return l.served.Load() }

// WaitServed waits until n more requests than when it was called are
// served, and fails the test if they are not within WaitTimeout.
func (l *Load) WaitServed(t testing.TB, n int64) {
	t.Helper()
	start := l.served.Load()
	WaitFor(t, fmt.Sprintf("%d more requests served", n), func() bool { return l.served.Load() >= start+n })
}

// Stop stops the goroutines, waits for their requests in flight, and
// returns how many requests were served and failed, and the first
// failure ("" if none). Stopping again returns the counts again.
func (l *Load) Stop() (served, failed int64, first string) {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
	first, _ = l.firstErr.Load().(string)
	return l.served.Load(), l.failed.Load(), first
}
