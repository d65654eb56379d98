package proxy

import (
	"log/slog"
	"net/http"
	"slices"
	"strconv"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sock"
	"github.com/sluice-server/sluice/upstream"
)

// dialFixAttr is the log attribute fix=WHAT for err, an upstream's
// failure, when it is a failure to connect that sock.DialFix has advice
// for (setting names the component whose address is at fault), or the
// empty attribute, which handlers leave out.
func dialFixAttr(err error, setting string) slog.Attr {
	if fix := sock.DialFix(err, "the upstream", setting); fix != "" {
		return slog.String("fix", fix)
	}
	return slog.Attr{}
}

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

// busyFailure is the failure of a request that found every upstream
// left at max_conns (upstream.ErrFull) and could not wait, or waited in
// vain, for one.
func busyFailure(err error) *failure {
	if err == upstream.ErrFull {
		return busy
	}
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
	if p.h2 != nil {
		return p.serveH2(c, w, x)
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

	safe := idempotent(r) && !hasBody
	x.interim = false
	var last *failure
	try := attempt{c: c, x: x, hasBody: hasBody, safe: safe, expect: expect, upgrade: upgrade}
	a := p.grp.Begin(safe, p.retries)
	for a.Next(r, client, c) {
		up := a.Host()
		um := p.upm.Get(up.Name)
		var uc *upConn
		var err error
		if g, ok := a.Granted(); ok {
			uc, err = p.take(up, g, p.connectTO)
		} else if uc, err = p.getConn(up, a.Now(), p.connectTO, false); err == upstream.ErrFull {
			a.Full()
			continue
		}
		if !a.Start() { // up left the set meanwhile
			if err == nil {
				uc.discard()
			}
			continue
		}
		try.up, try.uc, try.getErr, try.now = up, uc, err, a.Now()
		uc, f := p.roundTrip(&try)
		if f != nil && f.stale {
			// A pooled connection the upstream had closed, found out
			// only by sending on it: not the upstream's fault, and safe
			// to try again on a new connection.
			try.uc, try.getErr = p.getConn(up, a.Now(), p.connectTO, true)
			uc, f = p.roundTrip(&try)
		}
		if f != nil {
			last = f
			if f.fault {
				um.Failed()
			}
			if f.err == errClientGone {
				// Not the upstream's failure: no warning for it.
				p.log.Info("proxy: client went away while the upstream was answering", "upstream", up.Name, "method", string(r.Method), "path", string(r.Path), c.RequestIDAttr())
			} else {
				p.log.Warn("proxy: upstream failed", "upstream", up.Name, "method", string(r.Method), "path", string(r.Path), "err", f.err,
					dialFixAttr(f.err, "proxy"), c.RequestIDAttr())
			}
			a.Failed(f.fault, f.retry)
			p.logDown(&a)
			continue
		}
		status := x.head.status
		um.Head(status, upstream.Now().Sub(try.now))
		if status == http.StatusSwitchingProtocols {
			err = p.tunnel(c, w, x, uc)
			a.Done()
			try.span.End(status, err)
			upstream.LogAnswer(c, up, try.now)
			return err
		}
		if slices.Contains(p.failStatus, status) {
			again := a.Rejected(x.interim)
			p.logDown(&a)
			if again {
				// Tried elsewhere, as nginx's proxy_next_upstream does;
				// the connection goes, with the body unread.
				uc.discard()
				a.Done()
				try.span.End(status, nil)
				p.log.Warn("proxy: upstream answered a fail_status", "upstream", up.Name, "method", string(r.Method), "path", string(r.Path), "status", status, c.RequestIDAttr())
				last = &failure{status: status, msg: "upstream answered " + strconv.Itoa(status), retry: true}
				continue
			}
		}
		err = p.respond(c, w, x, uc, r)
		a.Done()
		try.span.End(status, err)
		um.Done(upstream.Now().Sub(try.now))
		upstream.LogAnswer(c, up, try.now)
		return err
	}
	return p.answerFailure(c, w, a.Err(), last)
}

// answerFailure answers a request that ends without an upstream's
// answer: err is its Attempts' Err, last the last attempt's failure.
func (p *Proxy) answerFailure(c *pipe.Conn, w pipe.Writer, err error, last *failure) error {
	switch err {
	case nil:
	case upstream.ErrNoUpstream:
		return writeError(c, w, http.StatusServiceUnavailable, "no upstream available")
	default:
		last = busyFailure(err)
	}
	if last.status == http.StatusServiceUnavailable && (last == busy || last.err == upstream.ErrQueueFull || last.err == upstream.ErrQueueTimeout) {
		c.Header().Set("Retry-After", "1")
	}
	return writeError(c, w, last.status, last.msg)
}

// logDown logs an upstream that a's last failure marked down under the
// passive checks.
func (p *Proxy) logDown(a *upstream.Attempts[*upConn]) {
	if a.Down() {
		p.log.Warn("proxy: upstream down after failed requests", "upstream", a.Host().Name,
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
