//go:build !linux

package engine

// Outside Linux connections are not parked: an idle wait that moves goes
// on on a fresh goroutine with a minimal stack.

func (c *conn) park() bool { return false }

// unpark is never called: nothing is parked.
func (c *conn) unpark() {}

// leavePark has nothing to give back: nothing is parked.
func (c *conn) leavePark() {}

// firstRead leaves the first wait to the runtime's poller.
func (c *conn) firstRead() (read, parked bool) { return false, false }

// leaveParkSet has nothing to do: nothing is parked.
func (c *conn) leaveParkSet() {}
