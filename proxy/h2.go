package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sluice-server/sluice/upstream"
)

// HTTP/2 to upstreams (transports h2c and h2). The framing, flow
// control and HPACK of the client side are net/http's HTTP/2 client, one
// http.ClientConn per connection (Transport.NewClientConn, Go 1.26):
// golang.org/x/net/http2's client, whose HPACK the engine's server uses,
// is deprecated in its favour, and it is the client net/http and gRPC-Go
// users run everywhere; a client connection to a few trusted upstreams is
// not the attack surface a server's is, so the reasons the engine has an
// HTTP/2 server of its own do not hold for it. What is the proxy's own is
// above it: which connection a request goes on, how many streams each
// carries, dialling and TLS, and the balancing, health, retries and
// max_conns of package upstream, by the same Attempts the HTTP/1.1 client
// drives.
//
// Each upstream has a few connections (h2Host). A request takes a stream
// on the least busy connection with room: below MaxStreams and below the
// upstream's SETTINGS_MAX_CONCURRENT_STREAMS (ClientConn.Available). A
// stream the upstream refused (REFUSED_STREAM: sent before its SETTINGS
// came, past its limit) was not processed and is sent again. Failing
// that it dials a new connection on a place among the
// upstream's max_conns (Host.Get), which requests arriving meanwhile wait
// for rather than dial their own; at max_conns it waits for a stream to
// end, for at most queue_timeout (503 after, or at once with queue -1).
// A connection that received GOAWAY or failed takes no new stream, and
// gives its place back once its last stream ends.

// h2Transport is a Proxy's HTTP/2 client: its connections per upstream,
// indexed as the Group's Hosts. It is safe for concurrent use.
type h2Transport struct {
	p          *Proxy
	maxStreams int
	queue      bool          // requests may wait at max_conns
	queueTO    time.Duration // for at most this long
	idleTO     time.Duration
	hosts      []*h2Host
}

// h2Host is one upstream's HTTP/2 connections.
type h2Host struct {
	t       *http.Transport // dials the host (its DialContext, DialTLSContext)
	mu      sync.Mutex
	conns   []*h2Conn
	dialing int           // connections being dialled
	waiters int           // requests waiting for a stream or a dial
	closed  bool          // the Proxy closed: a connection goes with its last stream
	freed   chan struct{} // closed (and replaced) when waiters may find room
}

// h2Conn is one HTTP/2 connection and its streams in flight (guarded by
// its h2Host's mu).
type h2Conn struct {
	cc      *http.ClientConn
	streams int
}

func newH2Transport(p *Proxy, maxStreams int, cfg upstream.Config) *h2Transport {
	t := &h2Transport{
		p:          p,
		maxStreams: maxStreams,
		queue:      cfg.MaxConns > 0 && cfg.Queue > 0,
		queueTO:    cfg.QueueTimeout,
		idleTO:     cfg.IdleTimeout,
	}
	for _, u := range p.grp.Hosts {
		t.hosts = append(t.hosts, &h2Host{t: t.transport(u, nil), freed: make(chan struct{})})
	}
	return t
}

// transport returns the http.Transport that makes HTTP/2 connections to
// u: over the socket dial returns, or a new one on a place among u's
// max_conns (Host.Dial) when dial is nil; with TLS for transport h2.
func (t *h2Transport) transport(u *host, dial func() (net.Conn, error)) *http.Transport {
	p := t.p
	tr := &http.Transport{
		DisableCompression:     true, // the client's Accept-Encoding goes as it came
		IdleConnTimeout:        t.idleTO,
		MaxResponseHeaderBytes: int64(p.maxHead),
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: 30 * time.Second, // a PING then finds a dead connection
			PingTimeout:     15 * time.Second,
		},
		Protocols: new(http.Protocols),
	}
	if dial == nil {
		dial = func() (net.Conn, error) { return u.Dial(p.connectTO) }
	}
	if cfg := p.hostTLS(u); cfg != nil {
		tr.Protocols.SetHTTP2(true)
		tr.DialTLSContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			deadline, _ := ctx.Deadline()
			nc, err := dial()
			if err != nil {
				return nil, err
			}
			tc, err := handshake(nc, cfg, deadline)
			if err != nil {
				return nil, &dialedError{err}
			}
			return tc, nil
		}
	} else {
		tr.Protocols.SetUnencryptedHTTP2(true)
		tr.DialContext = func(context.Context, string, string) (net.Conn, error) { return dial() }
	}
	return tr
}

// dialedError is the failure of a connection dialled (on a place among
// max_conns) and closed since.
type dialedError struct{ err error }

func (e *dialedError) Error() string { return e.err.Error() }
func (e *dialedError) Unwrap() error { return e.err }

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
	h := t.hosts[u.Index()]
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	h.mu.Lock()
	for {
		var best *h2Conn
		var closed []*h2Conn
		for i := 0; i < len(h.conns); {
			c := h.conns[i]
			if c.cc.Err() != nil || c.cc.Available() == 0 && c.streams == 0 {
				// Failed, or closing (GOAWAY) with none of its streams
				// left: its place goes back.
				if c.streams == 0 {
					h.conns = append(h.conns[:i], h.conns[i+1:]...)
					closed = append(closed, c)
					continue
				}
			} else if c.streams < t.maxStreams && c.cc.Available() > 0 && (best == nil || c.streams < best.streams) {
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
	h := t.hosts[u.Index()]
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
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cc, err := h.t.NewClientConn(ctx, t.scheme(u), u.Addr)
	if err != nil {
		var de *dialedError
		var ne *net.OpError
		switch {
		case errors.As(err, &de):
			// handshake closed it: the place goes back.
			u.Release()
			return nil, de.err
		case errors.As(err, &ne) && ne.Op == "dial":
			return nil, err // Host.Dial gave the place back
		}
		u.Release()
		return nil, err
	}
	return &h2Conn{cc: cc}, nil
}

// scheme is the scheme net/http is told for u's connections.
func (t *h2Transport) scheme(u *host) string {
	if t.p.hostTLS(u) != nil {
		return "https"
	}
	return "http"
}

// check is an active health check over HTTP/2: "GET path" on a
// connection of its own, over TLS for h2.
func (t *h2Transport) check(u *host) bool {
	p := t.p
	deadline := time.Now().Add(p.health.Timeout)
	tr := t.transport(u, func() (net.Conn, error) { return p.health.DialCheck(u.Network, u.Addr) })
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cc, err := tr.NewClientConn(ctx, t.scheme(u), u.Addr)
	if err != nil {
		return false
	}
	defer cc.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.scheme(u)+"://"+u.Authority+p.health.Path, nil)
	if err != nil {
		return false
	}
	req.Header.Set("User-Agent", "sluice-health-check")
	resp, err := cc.RoundTrip(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return p.health.Passes(resp.StatusCode)
}

// close closes the connections no stream is on (a Proxy's Close); the
// others finish their streams, and close with the last.
func (t *h2Transport) close() {
	for _, h := range t.hosts {
		h.mu.Lock()
		h.closed = true
		for _, c := range h.conns {
			if c.streams == 0 {
				c.cc.Close()
			}
		}
		h.mu.Unlock()
	}
}

var errHeaderTimeout = errors.New("proxy: the upstream's response head did not come in time")
