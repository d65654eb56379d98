//go:build !unix

package proxy

// bindRaw does nothing where the platform offers no non-blocking peek:
// peek then trusts an idle connection, and a stale one is found by the
// exchange (and retried as a stale connection is; see Proxy.serve).
func (c *upConn) bindRaw() {}

func (c *upConn) peek() bool { return true }
