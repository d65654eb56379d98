package proxy

import (
	"crypto/tls"
	"sync"
	"time"

	"github.com/sluice-server/sluice/upstream"
)

// host is an upstream with its pool of the client's connections.
type host = upstream.Host[*upConn]

// peekAfter is how long a connection may have been idle and still be
// used without a peek at it: zero, so every reused connection is peeked
// at (one non-blocking recv with MSG_PEEK). Bytes an upstream sent while
// the connection was idle (a response nobody asked for, or the rest of a
// body longer than its framing said) would otherwise be read as the next
// request's response, which RFC 9112 §6.3 forbids a client to do: such a
// connection is closed instead, and the request sent on another. A
// connection that proves stale after the peek (closed meanwhile) is
// retried on a new one where that is safe (see Proxy.serve). A variable
// for the tests, which set it to reach that path.
var peekAfter time.Duration

// getConn returns an idle connection to u, or dials a new one within
// timeout unless max_conns are open (upstream.ErrFull). fresh skips the
// idle ones; now is the request's clock reading, for the idle
// connections' ages.
func (p *Proxy) getConn(u *host, now upstream.Instant, timeout time.Duration, fresh bool) (*upConn, error) {
	for {
		c, idle, err := u.Get(now, fresh)
		switch {
		case err != nil:
			return nil, err
		case c == nil:
			return p.dial(u, timeout)
		case c.r == c.w && (idle < peekAfter || c.peek()):
			c.reused = true
			return c, nil
		}
		c.discard()
	}
}

// dial connects to u within timeout on a place among the open
// connections already taken, which it gives back if it fails. Over TLS
// (transport https) the handshake is done within the same timeout.
func (p *Proxy) dial(u *host, timeout time.Duration) (*upConn, error) {
	deadline := time.Now().Add(timeout)
	nc, err := u.Dial(timeout)
	if err != nil {
		return nil, err
	}
	if cfg := p.hostTLS(u); cfg != nil {
		tc, err := handshake(nc, cfg, deadline)
		if err != nil {
			u.Release()
			return nil, err
		}
		nc = tc
	}
	c := &upConn{nc: nc, up: u}
	c.bindRaw()
	return c, nil
}

// take readies the connection a waiting request was handed (see
// upstream.Queue): c, just put back by the request before, or, c nil, a
// new one dialled on the place granted.
func (p *Proxy) take(u *host, c *upConn, timeout time.Duration) (*upConn, error) {
	if c == nil {
		return p.dial(u, timeout)
	}
	// Put back a moment ago, it is peeked at as getConn peeks at one
	// from the pool; one found unclean is replaced on the same place.
	if !c.peek() {
		c.nc.Close()
		return p.dial(u, timeout)
	}
	c.reused = true
	return c, nil
}

// put returns a connection whose exchange ended cleanly to its pool, or
// closes it when the pool has enough idle ones. A request waiting for
// the upstream gets it instead, with its read buffer if the exchange
// did not keep that (see exchange.readBuf).
func (c *upConn) put() {
	c.r, c.w, c.got = 0, 0, 0
	if c.up.HandOff(c) {
		return
	}
	putReadBuf(c.buf)
	c.buf = nil
	c.up.Keep(c, upstream.Now())
}

// hostTLS returns the TLS configuration of the connections to u; nil
// for plain ones.
func (p *Proxy) hostTLS(u *host) *tls.Config {
	return u.Ext.(*hostExt).tls
}

// discard closes a connection that cannot serve another request.
func (c *upConn) discard() {
	c.nc.Close()
	c.up.Release()
}

// Close closes the connection: the pool's way (upstream.Conn).
func (c *upConn) Close() error { return c.nc.Close() }

// readBufs holds read buffers for connections whose exchange has none
// at hand (an exchange keeps the one its last connection read with), so
// that an idle connection costs its socket and a few hundred bytes (with
// its last response head, at most maxLastHead), not a buffer: a pool may
// keep many idle connections for a burst.
var readBufs = sync.Pool{New: func() any { return new([readBufSize]byte) }}

func getReadBuf() []byte { return readBufs.Get().(*[readBufSize]byte)[:] }

// putReadBuf returns b to readBufs, unless a large response head grew it
// past the standard size (that one is left to the collector).
func putReadBuf(b []byte) {
	if len(b) == readBufSize && cap(b) == readBufSize {
		readBufs.Put((*[readBufSize]byte)(b))
	}
}
