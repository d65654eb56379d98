//go:build !unix

package proxy

// bindRaw does nothing where the platform offers no non-blocking peek:
// peek then trusts an idle connection, and a stale one is found by the
// exchange (and retried as a stale connection is; see Proxy.serve).
func (c *upConn) bindRaw() {}

func (c *upConn) peek() bool { return true }

func (c *upConn) read(p []byte) (int, error) {
	if b := c.pending; b != nil {
		c.pending = nil
		if _, err := c.nc.Write(b); err != nil {
			return 0, err
		}
	}
	return c.nc.Read(p)
}

func (c *upConn) write(p []byte) (int, error) { return c.nc.Write(p) }
