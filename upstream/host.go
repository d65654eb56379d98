package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Conn is what a Host's pool holds: a transport's connection to the
// host (upstream/http1's today). The pool hands it out, takes it back
// and closes it, and calls nothing else on it: checking one before
// reuse, and its buffers, are the transport's. Its zero value (nil) is
// "no connection".
type Conn interface {
	comparable
	Close() error
}

// Host is one upstream server, with its pool of idle connections of the
// transport's type C, its count of requests in flight, its health and its
// place in a Group's queue. Name, Network, Addr and Authority are set by
// NewGroup and only read after. A Host is safe for concurrent use.
type Host[C Conn] struct {
	Name      string // as configured: "http://127.0.0.1:9000", "unix:/run/app.sock"
	Network   string // "tcp" or "unix"
	Addr      string // what Network dials
	Authority string // the host[:port] a request naming the upstream carries ("localhost" for a Unix socket)
	TLS       bool   // named by an https URL: the transport speaks TLS to it

	// Ext is the transport's own state for the host (its TLS
	// configuration, its HTTP/2 connections), set by the Group's Hooks
	// (Add) before the host takes a request, and only read after.
	Ext any

	active   atomic.Int64  // requests in flight, for least_conn and random_two
	requests atomic.Uint64 // attempts started on it
	fails    atomic.Uint64 // failures counted for passive health
	retired  atomic.Bool   // out of its Group's set
	stopped  atomic.Bool   // retired or draining: no new request, nothing handed to the queue
	health   *health       // shared with other Groups naming it
	index    int           // its slot in its Group: its bit in the masks of hosts
	queue    *Queue[C]     // its Group's; nil without one

	mu       sync.Mutex
	idle     []idleConn[C] // most recently used last
	open     int           // connections open, idle or in use
	maxConns int
	maxIdle  int
	idleTime time.Duration
	closed   bool
}

// idleConn is a connection in the pool, with when it was put there.
type idleConn[C Conn] struct {
	c     C
	since Instant
}

// parseHost reads "http://host:port" (port 80 if absent),
// "https://host:port" (port 443 if absent; TLS set) or "unix:/path" into
// a Host, which NewGroup completes.
func parseHost[C Conn](s string) (*Host[C], error) {
	if path, ok := strings.CutPrefix(s, "unix:"); ok {
		if path == "" || strings.HasPrefix(path, "//") {
			return nil, fmt.Errorf("upstream %q: want unix:/path/to/socket", s)
		}
		return &Host[C]{Name: s, Network: "unix", Addr: path, Authority: "localhost"}, nil
	}
	if s != "" && !strings.Contains(s, "://") && !strings.ContainsAny(s, "/?#@ ") {
		// host:port or a bare host, as nginx's upstream blocks and
		// Caddy's reverse_proxy take it.
		return nil, fmt.Errorf("upstream %q: no scheme: write http://%s (or unix:/path)", s, s)
	}
	if strings.HasPrefix(s, "/") {
		return nil, fmt.Errorf("upstream %q: a Unix socket is written with its scheme: write unix:%s", s, s)
	}
	if s != "" && !strings.Contains(s, "://") {
		// http//host:port, http:/host:port, host:port/path: a scheme
		// mistyped or left out.
		rest := strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(s, "http"), ":"), "/")
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			rest = rest[:i]
		}
		if u, err := url.Parse("http://" + rest); err == nil && rest != "" && u.Host == rest && !strings.ContainsAny(rest, " @") {
			return nil, fmt.Errorf("upstream %q: no scheme (it is written http:// with a colon and two slashes): write http://%s (or unix:/path)", s, rest)
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %v", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("upstream %q: the scheme must be http or https (or unix:/path)", s)
	}
	if u.Host != "" && u.User == nil && u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("upstream %q: an upstream has no path, the proxy sends each request's own: write %s://%s "+
			"(strip_prefix removes the start of the path the upstream should not see)", s, u.Scheme, u.Host)
	}
	if u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("upstream %q: want %s://host:port, without user, path or query", s, u.Scheme)
	}
	addr, tls := u.Host, u.Scheme == "https"
	if u.Port() == "" {
		port := "80"
		if tls {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	return &Host[C]{Name: s, Network: "tcp", Addr: addr, Authority: u.Host, TLS: tls}, nil
}

// ErrFull reports that a host has max_conns connections open.
var ErrFull = errors.New("upstream: at max_conns")

// Index returns h's slot in its Group, 0 to 63: its bit in the masks of
// hosts tried (Group.Pick) and waited for (Queue.Wait). A host keeps its
// slot while it stays in the Group's set (see LiveSet); a slot a host
// left may be given to a host added later.
func (h *Host[C]) Index() int { return h.index }

// Begin counts a request in flight to h (for least_conn and
// random_two); End counts it done.
func (h *Host[C]) Begin() { h.active.Add(1) }

// End counts a request to h done (see Begin).
func (h *Host[C]) End() { h.active.Add(-1) }

// Get returns, unless fresh, the most recently used idle connection and
// how long it was idle; the caller checks it (a peek) and uses it, or
// gives it up with Release after closing it. Connections idle longer
// than the idle timeout are closed on the way. With none idle (or
// fresh), it takes a place among the open connections for a new one and
// returns the zero C: the caller dials it (Dial), which gives the place
// back if it fails. It returns ErrFull when max_conns are open.
func (h *Host[C]) Get(now Instant, fresh bool) (c C, idleFor time.Duration, err error) {
	h.mu.Lock()
	for len(h.idle) > 0 && !fresh {
		ic := h.idle[len(h.idle)-1]
		h.idle[len(h.idle)-1] = idleConn[C]{}
		h.idle = h.idle[:len(h.idle)-1]
		if h.idleTime > 0 && now.Sub(ic.since) > h.idleTime {
			h.open--
			h.mu.Unlock()
			ic.c.Close()
			h.mu.Lock()
			continue
		}
		h.mu.Unlock()
		return ic.c, now.Sub(ic.since), nil
	}
	if h.maxConns > 0 && h.open >= h.maxConns {
		h.mu.Unlock()
		return c, 0, ErrFull
	}
	h.open++
	h.mu.Unlock()
	return c, 0, nil
}

// Dial connects to h within timeout on a place among the open
// connections already taken (by Get, or granted by the queue), which it
// gives back if it fails.
func (h *Host[C]) Dial(timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(context.Background(), h.Network, h.Addr)
	if err != nil {
		h.Release()
		return nil, err
	}
	return nc, nil
}

// HandOff gives c, a connection whose exchange ended cleanly, to the
// first request waiting in the queue for h, and reports whether there
// was one; the caller then lets go of c. Otherwise the caller puts it
// back with Keep. (Between the two, a transport releases what only a
// connection in use needs, such as its read buffer.)
func (h *Host[C]) HandOff(c C) bool {
	if h.stopped.Load() {
		return false // its Keep closes c, or pools it for when it takes requests again
	}
	return h.queue.handOff(h, c)
}

// Keep puts c, a connection whose exchange ended cleanly at now, in the
// pool, or closes it when the pool has enough idle ones or h is closed.
func (h *Host[C]) Keep(c C, now Instant) {
	h.mu.Lock()
	// Connections idle too long go now, oldest first, rather than wait
	// for a Get to find them: they hold a socket each.
	var expired []C
	for len(h.idle) > 0 && h.idleTime > 0 && now.Sub(h.idle[0].since) > h.idleTime {
		expired = append(expired, h.idle[0].c)
		h.idle[0] = idleConn[C]{}
		h.idle = h.idle[1:]
		h.open--
	}
	keep := !h.closed && len(h.idle) < h.maxIdle
	if keep {
		h.idle = append(h.idle, idleConn[C]{c, now})
	} else {
		h.open--
	}
	h.mu.Unlock()
	h.queue.freed(h)
	if !keep {
		c.Close()
	}
	for _, e := range expired {
		e.Close()
	}
}

// Release gives back a place among the open connections, that of a
// connection the caller closed or failed to dial: to a request waiting
// for one, or to the pool.
func (h *Host[C]) Release() {
	var none C
	if !h.stopped.Load() && h.queue.handOff(h, none) {
		return
	}
	h.mu.Lock()
	h.open--
	h.mu.Unlock()
	h.queue.freed(h)
}

// Open returns the connections open to h, idle or in use.
func (h *Host[C]) Open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.open
}

// IdleCount returns how many idle connections h's pool holds.
func (h *Host[C]) IdleCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.idle)
}

// InFlight returns the requests in flight to h (Begin less End).
func (h *Host[C]) InFlight() int64 { return h.active.Load() }

// Requests returns the attempts started on h since it joined its Group
// (Attempts.Start), and Fails those of them that failed for the
// passive health checks (Attempts.Failed with a fault, Rejected).
func (h *Host[C]) Requests() uint64 { return h.requests.Load() }

// Fails returns the failures counted against h (see Requests).
func (h *Host[C]) Fails() uint64 { return h.fails.Load() }

// Idle returns a copy of the list of h's idle connections, most recently
// used last: what a test or a status page looks at. The connections stay
// in the pool, where another request may take one at any time.
func (h *Host[C]) Idle() []C {
	h.mu.Lock()
	defer h.mu.Unlock()
	idle := make([]C, len(h.idle))
	for i, ic := range h.idle {
		idle[i] = ic.c
	}
	return idle
}

// close closes the idle connections; those in use are closed as their
// requests end.
func (h *Host[C]) close() {
	h.mu.Lock()
	idle := h.idle
	h.idle, h.closed = nil, true
	h.open -= len(idle)
	h.mu.Unlock()
	for _, ic := range idle {
		ic.c.Close()
	}
}
