package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/net/http2/hpack"

	"github.com/sluice-server/sluice/upstream"
)

// HTTP/2 to upstreams (transports h2c and h2). The client is the
// proxy's own (h2ClientConn, h2client.go): one goroutine per connection
// reads its frames and hands them to their streams, and a request's own
// goroutine writes its head, with a small body that has all arrived and
// its END_STREAM, in one write; only a body that streams has a goroutine
// of its own. The framing and HPACK are golang.org/x/net/http2's Framer
// and hpack. It replaced net/http's HTTP/2 client (http.ClientConn),
// which started a goroutine per request and wrote a call's HEADERS and
// DATA in separate writes: 36% of the proxy's CPU per unary gRPC call
// was its writeRequest, and the proxy spent 1.54x nginx's grpc_pass CPU
// per call. In interleaved in-process rounds (docs/benchmarks.md), the
// proxy's own CPU per unary gRPC call with this client was about 0.73
// of what it was with net/http's (0.49 to 0.88 on a loaded machine), and
// the client's alone about two thirds. What is the proxy's own above the
// client is unchanged: which connection a request goes on, how many
// streams each carries, dialling and TLS, and the balancing, health,
// retries and max_conns of package upstream, by the same Attempts the
// HTTP/1.1 client drives.
//
// Each upstream has a few connections (h2Host). A request takes a stream
// on the least busy connection with room: below MaxStreams and below the
// upstream's SETTINGS_MAX_CONCURRENT_STREAMS (h2ClientConn.limit; a
// connection is used once the upstream's first SETTINGS came). A stream
// the upstream did not process (REFUSED_STREAM, or above the last stream
// id of its GOAWAY) is sent again. Failing that it dials a new
// connection on a place among the upstream's max_conns (Host.Get), which
// requests arriving meanwhile wait for rather than dial their own; at
// max_conns it waits for a stream to end, for at most queue_timeout (503
// after, or at once with queue -1).
// A connection that received GOAWAY or failed takes no new stream, and
// gives its place back once its last stream ends.

// h2Transport is a Proxy's HTTP/2 client: its connections per upstream
// are each upstream's h2Host (in its hostExt). It is safe for concurrent
// use.
type h2Transport struct {
	p          *Proxy
	maxStreams int
	queue      bool          // requests may wait at max_conns
	queueTO    time.Duration // for at most this long
	idleTO     time.Duration
}

// h2Host is one upstream's HTTP/2 connections.
type h2Host struct {
	mu      sync.Mutex
	conns   []*h2Conn
	dialing int           // connections being dialled
	waiters int           // requests waiting for a stream or a dial
	closed  bool          // the Proxy closed, or the host left the set: a connection goes with its last stream
	gone    bool          // the host left the set: no new stream
	freed   chan struct{} // closed (and replaced) when waiters may find room
}

// h2Conn is one HTTP/2 connection and its streams in flight (guarded by
// its h2Host's mu).
type h2Conn struct {
	cc      *h2ClientConn
	streams int
}

func newH2Transport(p *Proxy, maxStreams int, cfg upstream.Config) *h2Transport {
	return &h2Transport{
		p:          p,
		maxStreams: maxStreams,
		queue:      cfg.MaxConns > 0 && cfg.Queue > 0,
		queueTO:    cfg.QueueTimeout,
		idleTO:     cfg.IdleTimeout,
	}
}

// newHost returns the HTTP/2 connections of u, none yet.
func (t *h2Transport) newHost(u *host) *h2Host {
	return &h2Host{freed: make(chan struct{})}
}

// h2HostOf returns u's HTTP/2 connections.
func h2HostOf(u *host) *h2Host { return u.Ext.(*hostExt).h2 }

// connect starts an HTTP/2 connection to u over nc (a new socket), with
// TLS and ALPN h2 for transport h2, all by deadline; nc is closed on
// failure.
func (t *h2Transport) connect(u *host, nc net.Conn, deadline time.Time) (*h2ClientConn, error) {
	if cfg := t.p.hostTLS(u); cfg != nil {
		tc, err := handshake(nc, cfg, deadline)
		if err != nil {
			return nil, err
		}
		nc = tc
	}
	return newH2ClientConn(nc, t.p.maxHead, t.p.maxFields, t.idleTO, deadline)
}

// wake tells the requests waiting on h to look again; h.mu is held.
func (h *h2Host) wake() {
	if h.waiters > 0 {
		close(h.freed)
		h.freed = make(chan struct{})
	}
}

// acquire returns a connection to u with a stream taken for a request
// (release gives it back), dialling one if need be within timeout. At
// max_conns it waits for a stream to end, until the queue's timeout or
// gone closes; then it fails with upstream.ErrFull, ErrQueueTimeout or
// ErrClientGone.
func (t *h2Transport) acquire(u *host, timeout time.Duration, gone <-chan struct{}) (*h2Conn, error) {
	h := h2HostOf(u)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	h.mu.Lock()
	for {
		if h.gone {
			h.mu.Unlock()
			return nil, errHostGone
		}
		var best *h2Conn
		var closed []*h2Conn
		for i := 0; i < len(h.conns); {
			c := h.conns[i]
			limit := c.cc.limit()
			if limit == 0 {
				// Failed, or closing (GOAWAY) with none of its streams
				// left: its place goes back.
				if c.streams == 0 {
					h.conns = append(h.conns[:i], h.conns[i+1:]...)
					closed = append(closed, c)
					continue
				}
			} else if c.streams < min(t.maxStreams, limit) && (best == nil || c.streams < best.streams) {
				best = c
			}
			i++
		}
		if len(closed) > 0 {
			h.mu.Unlock()
			for _, c := range closed {
				c.cc.Close()
				u.Release()
			}
			h.mu.Lock()
			continue
		}
		if best != nil {
			best.streams++
			h.mu.Unlock()
			return best, nil
		}
		if h.dialing == 0 {
			_, _, err := u.Get(upstream.Now(), true)
			if err == nil {
				h.dialing++
				h.mu.Unlock()
				c, err := t.dial(u, h, timeout)
				h.mu.Lock()
				h.dialing--
				if err == nil {
					c.streams = 1
					h.conns = append(h.conns, c)
				}
				h.wake()
				h.mu.Unlock()
				return c, err
			}
			if !t.queue {
				h.mu.Unlock()
				return nil, upstream.ErrFull
			}
		}
		// A connection is being dialled, or every one is full at
		// max_conns: wait for room.
		if timer == nil {
			wait := t.queueTO
			if h.dialing > 0 {
				wait = max(wait, timeout)
			}
			timer = time.NewTimer(wait)
		}
		ch := h.freed
		h.waiters++
		h.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-timer.C:
			err = upstream.ErrQueueTimeout
		case <-gone:
			err = upstream.ErrClientGone
		}
		h.mu.Lock()
		h.waiters--
		if err != nil {
			h.mu.Unlock()
			return nil, err
		}
	}
}

// release gives back the stream c took for a request to u.
func (t *h2Transport) release(u *host, c *h2Conn) {
	h := h2HostOf(u)
	h.mu.Lock()
	c.streams--
	last := h.closed && c.streams == 0
	h.wake()
	h.mu.Unlock()
	if last {
		c.cc.Close()
	}
}

// dial connects to u within timeout, over TLS with ALPN h2 for
// transport h2, and starts an HTTP/2 connection on it; on failure the
// place taken for it is given back.
func (t *h2Transport) dial(u *host, h *h2Host, timeout time.Duration) (*h2Conn, error) {
	deadline := time.Now().Add(timeout)
	nc, err := u.Dial(t.p.connectTO)
	if err != nil {
		return nil, err // Host.Dial gave the place back
	}
	cc, err := t.connect(u, nc, deadline)
	if err != nil {
		u.Release()
		return nil, err
	}
	return &h2Conn{cc: cc}, nil
}

// check is an active health check over HTTP/2: "GET path" on a
// connection of its own, over TLS for h2.
func (t *h2Transport) check(u *host) bool {
	p := t.p
	deadline := time.Now().Add(p.health.Timeout)
	nc, err := p.health.DialCheck(u.Network, u.Addr)
	if err != nil {
		return false
	}
	cc, err := t.connect(u, nc, deadline)
	if err != nil {
		return false
	}
	defer cc.Close()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	scheme := "http"
	if u.TLS {
		scheme = "https"
	}
	resp, err := cc.roundTrip(ctx, &h2Request{method: http.MethodGet, scheme: scheme, authority: u.Authority, path: p.health.Path,
		fields: []hpack.HeaderField{{Name: "user-agent", Value: "sluice-health-check"}}})
	if err != nil {
		return false
	}
	resp.Body.Close()
	return p.health.Passes(resp.StatusCode)
}

// close closes the connections no stream is on (a Proxy's Close); the
// others finish their streams, and close with the last.
func (t *h2Transport) close() {
	for _, u := range t.p.grp.Hosts() {
		h2HostOf(u).close()
	}
}

// close closes h's connections no stream is on; the others finish their
// streams, and close with the last (a Proxy's Close). New streams may
// still be taken, by the requests of the old config in flight.
func (h *h2Host) close() {
	h.mu.Lock()
	h.closed = true
	for _, c := range h.conns {
		if c.streams == 0 {
			c.cc.Close()
		}
	}
	h.mu.Unlock()
}

// leave closes h as close does, for a host that left the set: it takes
// no new stream, and the requests waiting for one look for another host
// (acquire fails with errHostGone).
func (h *h2Host) leave() {
	h.mu.Lock()
	h.gone = true
	h.wake()
	h.mu.Unlock()
	h.close()
}

// errHostGone reports that the host left the set while a request waited
// for a stream on it.
var errHostGone = errors.New("proxy: the upstream left the set")

var errHeaderTimeout = errors.New("proxy: the upstream's response head did not come in time")
