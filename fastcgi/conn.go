package fastcgi

import (
	"net"

	"github.com/sluice-server/sluice/upstream"
)

// conn is a connection to a FastCGI server, in a host's pool while idle.
type conn struct {
	nc net.Conn
	up *host
}

// put returns a connection whose exchange ended cleanly to its pool.
func (c *conn) put() {
	if c.up.HandOff(c) {
		return
	}
	c.up.Keep(c, upstream.Now())
}

// Close closes the connection: the pool's way (upstream.Conn).
func (c *conn) Close() error { return c.nc.Close() }
