package proxy

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
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
var busy = &failure{status: http.StatusServiceUnavailable, msg: "upstreams busy", err: errFull, retry: true}

// busyFailure is the failure of a request that could not wait, or
// waited in vain, for an upstream at max_conns.
func busyFailure(err error) *failure {
	msg := "upstreams busy, too many requests waiting"
	switch err {
	case errQueueTimeout:
		msg = "upstreams busy, no connection came free in time"
	case errClientGone:
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
	if p.bal.policy == IPHash {
		if a := p.resolver.Addr(r); a.IsValid() {
			client = a.AppendTo(clientBuf[:0])
		}
	}

	// Upstreams marked down count as tried already.
	var tried, full uint64 // tried, and found at max_conns
	now := monoNow()
	for i, u := range p.ups {
		if !u.health.up(now) {
			tried |= 1 << i
		}
	}
	all := uint64(1)<<len(p.ups) - 1 // (wraps to every bit for 64)
	safe := idempotent(r) && !hasBody
	x.interim = false
	var last *failure
	var gen uint64              // the queue's generation as this round of asking began
	var queueDeadline time.Time // set once the request first waits
	for failures := 0; ; {
		if full == 0 {
			gen = p.queue.generation()
		}
		var up *upstream
		var uc *upConn
		var err error
		if i := p.bal.pick(p.ups, tried|full, r, client); i >= 0 {
			up = p.ups[i]
			if uc, err = up.get(now, p.connectTO, false); err == errFull {
				full |= 1 << i
				last = busy
				continue
			}
		} else if full != 0 && p.queue != nil {
			// Every upstream left is at max_conns: wait for one.
			if queueDeadline.IsZero() {
				queueDeadline = time.Now().Add(p.queue.timeout)
			}
			g, werr := p.queue.wait(full, gen, queueDeadline, c.Gone())
			if werr != nil {
				last = busyFailure(werr)
				break
			}
			full = 0
			now = monoNow() // waited: deadlines count from here
			if g.c == nil && !g.place {
				continue // a connection came free meanwhile: ask again
			}
			up = g.u
			uc, err = up.take(g.c, p.connectTO)
		} else {
			break
		}
		tried |= 1 << up.index
		up.active.Add(1)
		try := attempt{c: c, x: x, up: up, uc: uc, getErr: err, now: now, hasBody: hasBody, expect: expect, upgrade: upgrade}
		uc, f := p.roundTrip(&try)
		if f != nil && f.stale {
			// A pooled connection the upstream had closed, found out
			// only by sending on it: not the upstream's fault, and safe
			// to try again on a new connection.
			try.uc, try.getErr = up.get(now, p.connectTO, true)
			uc, f = p.roundTrip(&try)
		}
		if f == nil && x.head.status == http.StatusSwitchingProtocols {
			err := p.tunnel(c, w, x, uc)
			up.active.Add(-1)
			return err
		}
		if f == nil && slices.Contains(p.failStatus, x.head.status) {
			p.failed(up)
			if !safe || x.interim || failures >= p.retries || (tried|full)&all == all {
				err := p.respond(c, w, x, uc, r)
				up.active.Add(-1)
				return err
			}
			// Tried elsewhere, as nginx's proxy_next_upstream does; the
			// connection goes, with the body unread.
			up.discard(uc)
			up.active.Add(-1)
			status := x.head.status
			p.log.Warn("proxy: upstream answered a fail_status", "upstream", up.name, "method", string(r.Method), "path", string(r.Path), "status", status)
			last = &failure{status: status, msg: "upstream answered " + strconv.Itoa(status), retry: true}
			failures++
			continue
		}
		if f == nil {
			err := p.respond(c, w, x, uc, r)
			up.active.Add(-1)
			return err
		}
		up.active.Add(-1)
		last = f
		p.log.Warn("proxy: upstream failed", "upstream", up.name, "method", string(r.Method), "path", string(r.Path), "err", f.err)
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
	if last.status == http.StatusServiceUnavailable && (last == busy || last.err == errQueueFull || last.err == errQueueTimeout) {
		c.Header().Set("Retry-After", "1")
	}
	return writeError(c, w, last.status, last.msg)
}

// failed counts a failed request to up for the passive checks.
func (p *Proxy) failed(up *upstream) {
	if up.health.failed(time.Now(), &p.passive) {
		p.log.Warn("proxy: upstream down after failed requests", "upstream", up.name,
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
