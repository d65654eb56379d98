package proxy

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// upstream is one server requests are proxied to, with its pool of
// keep-alive connections. It is safe for concurrent use.
type upstream struct {
	name    string // as configured: "http://127.0.0.1:9000", "unix:/run/app.sock"
	network string // "tcp" or "unix"
	addr    string
	host    string // the Host an upstream-named request carries

	active atomic.Int64 // requests in flight, for least_conn and random_two
	health *health      // shared with other Proxies naming it
	index  int          // in its Proxy's upstreams
	queue  *waitQueue   // its Proxy's; nil without one

	mu       sync.Mutex
	idle     []*upConn // most recently used last
	open     int       // connections open, idle or in use
	maxConns int
	maxIdle  int
	idleTime time.Duration
	closed   bool
}

// parseUpstream reads "http://host:port" (port 80 if absent) or
// "unix:/path".
func parseUpstream(s string) (*upstream, error) {
	if path, ok := strings.CutPrefix(s, "unix:"); ok {
		if path == "" || strings.HasPrefix(path, "//") {
			return nil, fmt.Errorf("upstream %q: want unix:/path/to/socket", s)
		}
		return &upstream{name: s, network: "unix", addr: path, host: "localhost"}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %v", s, err)
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("upstream %q: the scheme must be http (or unix:/path)", s)
	}
	if u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("upstream %q: want http://host:port, without user, path or query", s)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return &upstream{name: s, network: "tcp", addr: addr, host: u.Host}, nil
}

// errFull reports that an upstream has max_conns connections open.
var errFull = fmt.Errorf("proxy: upstream at max_conns")

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

// get returns an idle connection, or dials a new one within timeout
// unless max_conns are open. fresh skips the idle ones; now is the
// request's clock reading, for the idle connections' ages.
func (u *upstream) get(now instant, timeout time.Duration, fresh bool) (*upConn, error) {
	u.mu.Lock()
	for len(u.idle) > 0 && !fresh {
		c := u.idle[len(u.idle)-1]
		u.idle[len(u.idle)-1] = nil
		u.idle = u.idle[:len(u.idle)-1]
		if u.idleTime > 0 && now.sub(c.idleSince) > u.idleTime {
			u.open--
			u.mu.Unlock()
			c.nc.Close()
			u.mu.Lock()
			continue
		}
		u.mu.Unlock()
		if c.r == c.w && (now.sub(c.idleSince) < peekAfter || c.peek()) {
			c.reused = true
			return c, nil
		}
		u.discard(c)
		u.mu.Lock()
	}
	if u.maxConns > 0 && u.open >= u.maxConns {
		u.mu.Unlock()
		return nil, errFull
	}
	u.open++
	u.mu.Unlock()
	return u.dial(timeout)
}

// dial connects within timeout on a place among the open connections
// already taken, which it gives back if it fails.
func (u *upstream) dial(timeout time.Duration) (*upConn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(context.Background(), u.network, u.addr)
	if err != nil {
		u.release()
		return nil, err
	}
	c := &upConn{nc: nc, up: u}
	c.bindRaw()
	return c, nil
}

// take readies the connection a waiting request was handed (see
// waitQueue): c, just put back by the request before, or, c nil, a new
// one dialled on the place granted.
func (u *upstream) take(c *upConn, timeout time.Duration) (*upConn, error) {
	if c == nil {
		return u.dial(timeout)
	}
	// Put back a moment ago, it is peeked at as get peeks at one from
	// the pool; one found unclean is replaced on the same place.
	if !c.peek() {
		c.nc.Close()
		return u.dial(timeout)
	}
	c.reused = true
	return c, nil
}

// put returns a connection whose exchange ended cleanly to the pool, or
// closes it when the pool has enough idle ones. A request waiting for
// the upstream gets it instead, with its read buffer if the exchange
// did not keep that (see exchange.readBuf).
func (u *upstream) put(c *upConn) {
	c.r, c.w, c.got = 0, 0, 0
	now := monoNow()
	c.idleSince = now
	if u.queue.handOff(u, c) {
		return
	}
	putReadBuf(c.buf)
	c.buf = nil
	u.mu.Lock()
	// Connections idle too long go now, oldest first, rather than wait
	// for a get to find them: they hold a socket each.
	var expired []*upConn
	for len(u.idle) > 0 && u.idleTime > 0 && now.sub(u.idle[0].idleSince) > u.idleTime {
		expired = append(expired, u.idle[0])
		u.idle[0] = nil
		u.idle = u.idle[1:]
		u.open--
	}
	keep := !u.closed && len(u.idle) < u.maxIdle
	if keep {
		u.idle = append(u.idle, c)
	} else {
		u.open--
	}
	u.mu.Unlock()
	u.queue.freed(u)
	if !keep {
		c.nc.Close()
	}
	for _, e := range expired {
		e.nc.Close()
	}
}

// discard closes a connection that cannot serve another request.
func (u *upstream) discard(c *upConn) {
	c.nc.Close()
	u.release()
}

// release gives back a place among the open connections: to a request
// waiting for one, or to the pool.
func (u *upstream) release() {
	if u.queue.handOff(u, nil) {
		return
	}
	u.mu.Lock()
	u.open--
	u.mu.Unlock()
	u.queue.freed(u)
}

// close closes the idle connections; those in use are closed as their
// requests end.
func (u *upstream) close() {
	u.mu.Lock()
	idle := u.idle
	u.idle, u.closed = nil, true
	u.open -= len(idle)
	u.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
}

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
