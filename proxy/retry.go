package proxy

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/upstream"
)

// A failure of one attempt, and what the client is told if it is the
// last.
type failure struct {
	status int
	msg    string
	err    error
	retry  bool
	fault  bool // the upstream's: counts for passive health
	stale  bool // on a pooled connection, before any response byte, and safe to send again
}

// busy is the failure of an upstream at max_conns: nothing was sent.
var busy = &failure{status: http.StatusServiceUnavailable, msg: "upstreams busy", err: upstream.ErrFull, retry: true}

// busyFailure is the failure of a request that could not wait, or
// waited in vain, for an upstream at max_conns.
func busyFailure(err error) *failure {
	msg := "upstreams busy, too many requests waiting"
	switch err {
	case upstream.ErrQueueTimeout:
		msg = "upstreams busy, no connection came free in time"
	case upstream.ErrClientGone:
		msg = "upstreams busy"
	}
	return &failure{status: http.StatusServiceUnavailable, msg: msg, err: err}
}

// serve proxies c's request and writes the response to w.
func (p *Proxy) serve(c *pipe.Conn, w pipe.Writer, x *exchange) error {
	r := c.Request
	if r.IsMethod("CONNECT") {
		return writeError(c, w, http.StatusNotImplemented, "the proxy does not tunnel CONNECT")
	}
	hasBody := r.ContentLength != 0
	expect := hasBody && expectsContinue(r)
	upgrade := upgradeOf(r)
	var client []byte // ip_hash's key, kept apart from x.scratch, which bodies reuse
	var clientBuf [48]byte
	if p.bal.Policy() == IPHash {
		if a := p.resolver.Addr(r); a.IsValid() {
			client = a.AppendTo(clientBuf[:0])
		}
	}

	// Upstreams marked down count as tried already.
	var tried, full uint64 // tried, and found at max_conns
	now := upstream.Now()
	for i, u := range p.grp.Hosts {
		if !u.Up(now) {
			tried |= 1 << i
		}
	}
	all := uint64(1)<<len(p.grp.Hosts) - 1 // (wraps to every bit for 64)
	safe := idempotent(r) && !hasBody
	x.interim = false
	var last *failure
	var gen uint64              // the queue's generation as this round of asking began
	var queueDeadline time.Time // set once the request first waits
	for failures := 0; ; {
		if full == 0 {
			gen = p.queue.Generation()
		}
		var up *host
		var uc *upConn
		var err error
		if i := p.grp.Pick(tried|full, r, client); i >= 0 {
			up = p.grp.Hosts[i]
			if uc, err = getConn(up, now, p.connectTO, false); err == upstream.ErrFull {
				full |= 1 << i
				last = busy
				continue
			}
		} else if full != 0 && p.queue != nil {
			// Every upstream left is at max_conns: wait for one.
			if queueDeadline.IsZero() {
				queueDeadline = time.Now().Add(p.queue.Timeout())
			}
			g, werr := p.queue.Wait(full, gen, queueDeadline, c.Gone())
			if werr != nil {
				last = busyFailure(werr)
				break
			}
			full = 0
			now = upstream.Now() // waited: deadlines count from here
			if g.Conn == nil && !g.Place {
				continue // a connection came free meanwhile: ask again
			}
			up = g.Host
			uc, err = take(up, g.Conn, p.connectTO)
		} else {
			break
		}
		tried |= 1 << up.Index()
		up.Begin()
		try := attempt{c: c, x: x, up: up, uc: uc, getErr: err, now: now, hasBody: hasBody, expect: expect, upgrade: upgrade}
		uc, f := p.roundTrip(&try)
		if f != nil && f.stale {
			// A pooled connection the upstream had closed, found out
			// only by sending on it: not the upstream's fault, and safe
			// to try again on a new connection.
			try.uc, try.getErr = getConn(up, now, p.connectTO, true)
			uc, f = p.roundTrip(&try)
		}
		if f == nil && x.head.status == http.StatusSwitchingProtocols {
			err := p.tunnel(c, w, x, uc)
			up.End()
			return err
		}
		if f == nil && slices.Contains(p.failStatus, x.head.status) {
			p.failed(up)
			if !safe || x.interim || failures >= p.retries || (tried|full)&all == all {
				err := p.respond(c, w, x, uc, r)
				up.End()
				return err
			}
			// Tried elsewhere, as nginx's proxy_next_upstream does; the
			// connection goes, with the body unread.
			uc.discard()
			up.End()
			status := x.head.status
			p.log.Warn("proxy: upstream answered a fail_status", "upstream", up.Name, "method", string(r.Method), "path", string(r.Path), "status", status)
			last = &failure{status: status, msg: "upstream answered " + strconv.Itoa(status), retry: true}
			failures++
			continue
		}
		if f == nil {
			err := p.respond(c, w, x, uc, r)
			up.End()
			return err
		}
		up.End()
		last = f
		p.log.Warn("proxy: upstream failed", "upstream", up.Name, "method", string(r.Method), "path", string(r.Path), "err", f.err)
		if f.fault {
			p.failed(up)
		}
		if !f.retry || failures >= p.retries {
			break
		}
		failures++
	}
	if last == nil {
		return writeError(c, w, http.StatusServiceUnavailable, "no upstream available")
	}
	if last.status == http.StatusServiceUnavailable && (last == busy || last.err == upstream.ErrQueueFull || last.err == upstream.ErrQueueTimeout) {
		c.Header().Set("Retry-After", "1")
	}
	return writeError(c, w, last.status, last.msg)
}

// failed counts a failed request to up for the passive checks.
func (p *Proxy) failed(up *host) {
	if up.Failed(time.Now(), &p.passive) {
		p.log.Warn("proxy: upstream down after failed requests", "upstream", up.Name,
			"failures", p.passive.Failures, "window", p.passive.Window, "down_for", p.passive.DownFor)
	}
}

func expectsContinue(r *engine.Request) bool {
	for i := range r.Fields {
		if httpgrammar.EqualFold(r.Fields[i].Name, "expect") && httpgrammar.HasToken(r.Fields[i].Value, "100-continue") {
			return true
		}
	}
	return false
}

// idempotent reports whether RFC 9110 §9.2.2 makes r's method idempotent.
func idempotent(r *engine.Request) bool {
	switch string(r.Method) {
	case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE":
		return true
	}
	return false
}
