package fastcgi

import (
	"net"
	"sync"
	"time"

	"github.com/sluice-server/sluice/upstream"
)

// conn is a connection to a FastCGI server: in use by one request at a
// time, in its host's pool between requests.
type conn struct {
	nc     net.Conn
	up     *host
	reused bool // taken from the pool rather than dialled for this request
	raw    rawConn
}

// getConn returns an idle connection to u, or dials a new one within
// timeout unless max_conns are open (upstream.ErrFull). fresh skips the
// idle ones.
func getConn(u *host, now upstream.Instant, timeout time.Duration, fresh bool) (*conn, error) {
	for {
		c, _, err := u.Get(now, fresh)
		switch {
		case err != nil:
			return nil, err
		case c == nil:
			return dial(u, timeout)
		case c.clean():
			c.reused = true
			return c, nil
		}
		c.discard()
	}
}

// dial connects to u within timeout on a place among the open
// connections already taken, which it gives back if it fails.
func dial(u *host, timeout time.Duration) (*conn, error) {
	nc, err := u.Dial(timeout)
	if err != nil {
		return nil, err
	}
	c := &conn{nc: nc, up: u}
	c.raw.bind(nc)
	return c, nil
}

// take readies the connection a waiting request was handed by the
// queue: c, just put back by another request, or, c nil, a new one
// dialled on the place granted.
func take(u *host, c *conn, timeout time.Duration) (*conn, error) {
	if c == nil {
		return dial(u, timeout)
	}
	if !c.clean() {
		c.nc.Close()
		return dial(u, timeout)
	}
	c.reused = true
	return c, nil
}

// clean reports whether an idle connection may be used: the server has
// neither closed it nor sent anything on it since its last request (a
// peek, where the platform has one).
func (c *conn) clean() bool { return c.raw.peekClean() }

// put returns a connection whose exchange ended cleanly to its pool, or
// to a request waiting for one.
func (c *conn) put() {
	c.reused = false
	if c.up.HandOff(c) {
		return
	}
	c.up.Keep(c, upstream.Now())
}

// discard closes a connection that cannot serve another request.
func (c *conn) discard() {
	c.nc.Close()
	c.up.Release()
}

// Close closes the connection: the pool's way (upstream.Conn).
func (c *conn) Close() error { return c.nc.Close() }

// exchange is a request's working memory, pooled: the request's records
// and the read buffer.
type exchange struct {
	out     []byte   // BEGIN_REQUEST, PARAMS, STDIN records
	params  []byte   // the PARAMS stream before framing
	scratch []byte   // cgi.Vars's
	rbuf    []byte   // the response, as read
	head    []byte   // the response head, gathered across records
	added   []string // the fields cgi.ApplyHead set
	rr      recordReader
}

const (
	readBufSize = 32 << 10
	bodyChunk   = 32 << 10 // request body bytes per STDIN record
)

var exchanges = sync.Pool{New: func() any {
	return &exchange{out: make([]byte, 0, 4<<10), params: make([]byte, 0, 2<<10), rbuf: make([]byte, readBufSize)}
}}

func getExchange() *exchange { return exchanges.Get().(*exchange) }

// putExchange pools x, unless a large request grew its buffers.
func putExchange(x *exchange) {
	if cap(x.out) > 256<<10 || cap(x.params) > 256<<10 || cap(x.head) > 64<<10 {
		return
	}
	x.out, x.params, x.head = x.out[:0], x.params[:0], x.head[:0]
	x.rr = recordReader{}
	exchanges.Put(x)
}
