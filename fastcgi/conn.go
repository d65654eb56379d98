package fastcgi

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/sluice-server/sluice/cgi"
	"github.com/sluice-server/sluice/coarse"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/upstream"
)

// conn is a connection to a FastCGI server: in use by one request at a
// time, in its host's pool between requests.
type conn struct {
	nc     net.Conn
	up     *host
	reused bool // taken from the pool rather than dialled for this request
	raw    rawConn
	last   lastHead // the last response head read on it

	readDL, writeDL time.Time // the deadlines set on nc
}

// armRead sets the read deadline to timeout from now, or keeps the one
// set if it falls no more than deadlineSlack(timeout) later: a
// connection busy with one request after another then moves its
// runtime timer about once a slack rather than once a request. The
// deadline is never earlier than asked.
func (c *conn) armRead(now time.Time, timeout time.Duration) {
	want := now.Add(timeout)
	if c.readDL.Before(want) || c.readDL.After(want.Add(deadlineSlack(timeout))) {
		c.setRead(want.Add(deadlineSlack(timeout)))
	}
}

// setRead sets the read deadline to t.
func (c *conn) setRead(t time.Time) {
	c.readDL = t
	c.nc.SetReadDeadline(t)
}

// armWrite is armRead for the write deadline.
func (c *conn) armWrite(now time.Time, timeout time.Duration) {
	want := now.Add(timeout)
	if c.writeDL.Before(want) || c.writeDL.After(want.Add(deadlineSlack(timeout))) {
		c.writeDL = want.Add(deadlineSlack(timeout))
		c.nc.SetWriteDeadline(c.writeDL)
	}
}

// deadlineSlack bounds how much later than asked a timeout may expire
// (see armRead): an eighth of it, at most a second.
func deadlineSlack(timeout time.Duration) time.Duration {
	return min(timeout/8, time.Second)
}

// maxLastHead bounds the response head a connection remembers.
const maxLastHead = 2 << 10

// lastHead is the last response head a connection read, parsed: an
// application answers most requests with the same head (PHP's
// X-Powered-By and Content-type), which is then applied again without
// parsing it or allocating its strings.
type lastHead struct {
	raw    []byte
	fields []headField
	status int
	local  string // the Location of a local redirect (RFC 3875 §6.2.2), or ""
}

type headField struct{ name, value string }

// apply applies head to c's response: from the cache when it is the
// same bytes, else parsed by cgi.ParseHead and remembered. On error
// nothing is applied.
func (l *lastHead) apply(c *pipe.Conn, head []byte) error {
	h := c.Header()
	if l.raw != nil && bytes.Equal(head, l.raw) {
		for _, f := range l.fields {
			h.Add(f.name, f.value)
		}
		if l.status != 0 {
			c.SetStatus(l.status)
		}
		return nil
	}
	l.raw, l.fields, l.local = l.raw[:0], l.fields[:0], ""
	status, err := cgi.ParseHead(head, func(name, value string) {
		l.fields = append(l.fields, headField{name, value})
	})
	if err != nil {
		l.raw = nil
		return err
	}
	if status == 302 && !hasStatusField(head) {
		for _, f := range l.fields {
			if f.name == "Location" || strings.EqualFold(f.name, "Location") {
				if len(f.value) > 0 && f.value[0] == '/' && !strings.HasPrefix(f.value, "//") && !strings.HasPrefix(f.value, "/\\") {
					l.local = f.value
				}
				break
			}
		}
	}
	for _, f := range l.fields {
		h.Add(f.name, f.value)
	}
	if status != 0 {
		c.SetStatus(status)
	}
	l.status = status
	if len(head) <= maxLastHead {
		l.raw = append(l.raw, head...)
	} else {
		l.raw = nil
	}
	return nil
}

// hasStatusField reports whether a response head has a Status line.
func hasStatusField(head []byte) bool {
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		if len(line) >= 7 && strings.EqualFold(string(line[:7]), "Status:") {
			return true
		}
	}
	return false
}

// getConn returns an idle connection to u, or dials a new one within
// timeout unless max_conns are open (upstream.ErrFull). fresh skips the
// idle ones. atSend says the request goes in one write at the start of
// the read of its response (rawConn.writeThenRead), which peeks at the
// connection itself just before writing: an idle one is then not
// peeked at here.
func getConn(u *host, now upstream.Instant, timeout time.Duration, fresh, atSend bool) (*conn, error) {
	for {
		c, _, err := u.Get(now, fresh)
		switch {
		case err != nil:
			return nil, err
		case c == nil:
			return dial(u, timeout)
		case atSend && c.raw.peeksAtSend(), c.clean():
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
// dialled on the place granted. atSend is getConn's.
func take(u *host, c *conn, timeout time.Duration, atSend bool) (*conn, error) {
	if c == nil {
		return dial(u, timeout)
	}
	if !(atSend && c.raw.peeksAtSend()) && !c.clean() {
		c.nc.Close()
		return dial(u, timeout)
	}
	c.reused = true
	return c, nil
}

// clean reports whether an idle connection may be used: the server has
// neither closed it nor sent anything on it since its last request (a
// peek, where the platform has one).
func (c *conn) clean() bool { return noPeek || c.raw.peekClean() }

// noPeek skips the peek at idle connections, for the tests, which set it
// to reach what a connection the server closes just after the peek
// leads to: the request sent on it fails before any response byte, and
// is sent again on a new connection (failure.stale).
var noPeek bool

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
	body    [][]byte // the body's pieces in one read of rbuf, written together
	rr      recordReader
	local   string // the Location of a local redirect the response was

	cl      *Client
	c       *pipe.Conn
	script  Script
	content pipe.Content // x.serve, bound once

	// The watch of a slow head's client (see Client.receive): slow
	// starts it goneAfter into the wait for the head, on coarse's
	// goroutine, unless the head came first.
	slow    coarse.Timer
	slowFn  func() // x.watchSlow, bound once
	uc      *conn  // the connection waited on
	watchMu sync.Mutex
	waiting bool                // for the head: slow may start the watch
	watch   *upstream.GoneWatch // started by slow
}

// watchSlow starts the watch of the client of a head that is slow to
// come, unless it came. A call the timer was already making when the
// wait ended may come after x is reused: it then starts the next wait's
// watch early, or finds no wait, and never starts a second watch.
func (x *exchange) watchSlow() {
	x.watchMu.Lock()
	defer x.watchMu.Unlock()
	if x.waiting && x.watch == nil {
		x.watch = upstream.WatchGone(x.c.Gone(), x.uc.nc)
	}
}

// endWatch ends the wait for the head: the timer is stopped, a watch
// slow started is stopped, and it reports whether that watch saw the
// client go (the connection then has a read deadline in the past and
// must not be reused).
func (x *exchange) endWatch() bool {
	if !x.waiting {
		return false
	}
	x.slow.Stop()
	x.watchMu.Lock()
	w := x.watch
	x.waiting, x.watch, x.uc = false, nil, nil
	x.watchMu.Unlock()
	return w.Stop()
}

// serve is the request's content phase; x goes back to the pool after
// it (one whose content never runs, because a later component ended the
// pipeline, is left to the collector).
func (x *exchange) serve(w pipe.Writer) error {
	defer putExchange(x)
	return x.cl.serve(x.c, w, x)
}

const (
	readBufSize = 32 << 10
	bodyChunk   = 32 << 10 // request body bytes per STDIN record
)

// exchanges holds exchanges between requests (New is set by init: an
// exchange's content puts it back).
var exchanges sync.Pool

func init() {
	exchanges.New = func() any {
		x := &exchange{out: make([]byte, 0, 4<<10), params: make([]byte, 0, 2<<10), rbuf: make([]byte, readBufSize)}
		x.content = x.serve
		x.slowFn = x.watchSlow
		return x
	}
}

func getExchange() *exchange { return exchanges.Get().(*exchange) }

// putExchange pools x, unless a large request grew its buffers.
func putExchange(x *exchange) {
	if cap(x.out) > 256<<10 || cap(x.params) > 256<<10 || cap(x.head) > 64<<10 {
		return
	}
	x.out, x.params, x.head = x.out[:0], x.params[:0], x.head[:0]
	x.rr = recordReader{}
	x.cl, x.c, x.script, x.local = nil, nil, Script{}, ""
	exchanges.Put(x)
}
