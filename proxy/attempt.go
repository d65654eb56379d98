package proxy

import (
	"errors"
	"net/http"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/tracing"
	"github.com/sluice-server/sluice/upstream"
)

// smallHead is the largest request head written without a write
// deadline: far below any socket's send buffer.
const smallHead = 4 << 10

// attempt is what one try of a request on one upstream needs: roundTrip's
// parameters. serve fills the request's part once and the upstream's for
// each try; it lives on serve's stack.
type attempt struct {
	c       *pipe.Conn
	x       *exchange
	up      *host
	uc      *upConn          // the connection got for the try; nil when getErr says why not
	getErr  error            // the failure to get a connection
	now     upstream.Instant // when the try began: its deadlines count from here
	hasBody bool             // the request has a body to send
	safe    bool             // an idempotent method and no body: the upstream cannot have acted on a resend
	expect  bool             // it asks for 100-continue
	upgrade []byte           // the protocols it asks to switch to (upgradeOf); nil for none
	span    *tracing.Span    // the try's, when the request is traced; ended by roundTrip on failure, else by serve
}

// roundTrip sends a's request to a.up over a.uc, the connection got for
// it (or a.getErr, the failure to get one), at a.now, and reads the
// response head into a.x.head. On success the connection is returned, its
// body reader ready in x.body; on failure the connection is closed and
// the failure says why.
func (p *Proxy) roundTrip(a *attempt) (*upConn, *failure) {
	a.span = tracing.StartUpstream(a.c, "proxy", a.up.Name)
	uc, f := p.roundTripOnce(a)
	if f != nil {
		a.span.End(0, f.traceErr())
	}
	return uc, f
}

// errLeftSet ends the span of an attempt whose upstream left the set
// before it began.
var errLeftSet = errors.New("upstream left the set")

// traceErr is the failure as its span reports it.
func (f *failure) traceErr() error {
	if f.err != nil {
		return f.err
	}
	return errors.New(f.msg)
}

// roundTripOnce is roundTrip without its span.
func (p *Proxy) roundTripOnce(a *attempt) (*upConn, *failure) {
	c, x, up, uc, r, now := a.c, a.x, a.up, a.uc, a.c.Request, a.now
	hasBody, expect, upgrade, safe := a.hasBody, a.expect, a.upgrade, a.safe
	if err := a.getErr; err != nil {
		switch {
		case err == upstream.ErrFull:
			return nil, busy // a fresh connection after a stale one (see serve)
		case isTimeout(err):
			return nil, &failure{status: http.StatusGatewayTimeout, msg: "upstream did not accept the connection in time", err: err, retry: true, fault: true}
		}
		return nil, connectFailure(err)
	}
	if uc.buf == nil {
		uc.buf = x.readBuf
		x.readBuf = nil
		if uc.buf == nil {
			uc.buf = getReadBuf()
		}
	}
	// Retrying is safe when the upstream cannot have acted on the request.
	fail := func(status int, msg string, err error) (*upConn, *failure) {
		uc.discard()
		retry := safe && uc.got == 0 && !isTimeout(err)
		if _, bad := err.(*BadResponseError); bad {
			retry = false
		}
		if retry && uc.reused {
			return nil, &failure{status: status, msg: msg, err: err, stale: true}
		}
		return nil, &failure{status: status, msg: msg, err: err, retry: retry, fault: true}
	}

	x.reqHead = p.appendRequestHead(x.reqHead[:0], r, up, expect, upgrade, &x.peer)
	nc := uc.nc
	armed := false // the read deadline is armHead's
	if hasBody || expect || len(x.reqHead) > smallHead {
		d := now.Add(p.headerTO)
		nc.SetDeadline(d.Time())
		uc.readDeadline = d
		uc.writeDeadline = true
	} else {
		// A small head fits the idle connection's empty send buffer:
		// its write cannot block, and only the response's wait needs
		// the timeout (one timer the fewer per request), which a
		// deadline left by the exchanges before may serve (armHead).
		uc.armHead(now, p.headerTO)
		armed = true
	}
	sendBody := hasBody
	if expect {
		// Ask the upstream first (RFC 9110 §10.1.1): the client's body is
		// read, which sends it 100 Continue, only once the upstream says
		// 100 or stays silent for a while; a final answer instead is
		// passed on and the body never read.
		if _, err := nc.Write(x.reqHead); err != nil {
			return fail(http.StatusBadGateway, "upstream closed the connection", err)
		}
		x.reqHead = x.reqHead[:0]
		nc.SetReadDeadline(time.Now().Add(expectContinueTimeout))
		err := uc.readHead(&x.head, p.maxHead, p.maxFields)
		uc.readDeadline = upstream.Now().Add(p.headerTO)
		nc.SetReadDeadline(uc.readDeadline.Time())
		switch {
		case err == nil && x.head.status == http.StatusContinue:
		case err == nil && x.head.status >= 200:
			sendBody = false
			x.head.close = true // the body it might wait for never comes
		case err == nil:
			// Another interim response: passed on; the final one follows.
			passInterim(c, x)
			sendBody = true
		case isTimeout(err) && uc.got == 0:
			// Silence: send the body anyway, as clients do.
		default:
			return p.headFailure(fail, err, true)
		}
		if err == nil && x.head.status >= 200 {
			return uc, p.startBody(x, uc, r)
		}
	}
	if sendBody {
		if err := p.sendBody(x, nc, r); err != nil {
			if errors.Is(err, errClientBody) {
				uc.discard()
				return nil, &failure{status: http.StatusBadRequest, msg: "request body incomplete", err: err}
			}
			// The upstream may have answered before the body was all
			// sent (a 413) and closed: that answer is the one to pass on.
			if herr := uc.readHead(&x.head, p.maxHead, p.maxFields); herr == nil && x.head.status >= 200 {
				x.head.close = true
				return uc, p.startBody(x, uc, r)
			}
			return fail(http.StatusBadGateway, "upstream closed the connection", err)
		}
	} else if len(x.reqHead) > 0 {
		// Written by the first read of the response, which then waits
		// for it without a failed try (see upConn.read).
		uc.pending = x.reqHead
	}
	// The response head is due by the read deadline set (the header
	// timeout); the wait for it watches the client past goneAfter.
	due := now.Add(p.headerTO)
	if !armed {
		due = uc.readDeadline
		n := upstream.Now()
		uc.armHead(n, due.Sub(n))
	}
	for {
		if err := p.awaitHead(c, uc, &x.head, due); err != nil {
			return p.headFailure(fail, err, hasBody || carriesControl(r))
		}
		if x.head.status >= 200 {
			break
		}
		if x.head.status == http.StatusSwitchingProtocols {
			if upgrade == nil {
				return fail(http.StatusBadGateway, "upstream switched protocols unasked", errors.New("101 response to a request without Upgrade"))
			}
			if !switchedAsAsked(x.head.fields, upgrade) {
				return fail(http.StatusBadGateway, "upstream switched to a protocol not asked for", errors.New("101 response whose Upgrade is missing or names a protocol the request did not"))
			}
			uc.nc.SetDeadline(time.Time{})
			uc.readDeadline = 0
			return uc, nil
		}
		// Other interim responses (102, 103) go to the client as they
		// come (RFC 9110 §15.2); those the proxy asked for (100 to its
		// Expect) were handled above.
		// Sent at once: a 103's hints are for now. (No byte of a
		// response having come is no longer true: no retry follows.)
		passInterim(c, x)
	}
	return uc, p.startBody(x, uc, r)
}

// connectFailure is the failure to connect to an upstream (err, not a
// timeout): unreachable, or its TLS handshake failed. Nothing was sent:
// another upstream may be tried.
func connectFailure(err error) *failure {
	var te *TLSError
	if errors.As(err, &te) {
		return &failure{status: http.StatusBadGateway, msg: "upstream TLS handshake failed", err: err, retry: true, fault: true}
	}
	return &failure{status: http.StatusBadGateway, msg: "upstream unreachable", err: err, retry: true, fault: true}
}

// headFailure is the failure of the wait for a response head that ended
// in err. A malformed head is not counted against the upstream when
// clientBytes says the request may have carried what made it malformed
// (see carriesControl).
func (p *Proxy) headFailure(fail func(int, string, error) (*upConn, *failure), err error, clientBytes bool) (*upConn, *failure) {
	var bad *BadResponseError
	switch {
	case err == errClientGone:
		uc, f := fail(statusClientClosed, "the client closed the request", err)
		f.fault, f.retry, f.stale = false, false, false
		return uc, f
	case errors.As(err, &bad):
		uc, f := fail(http.StatusBadGateway, "upstream sent a malformed response", err)
		if clientBytes {
			f.fault = false
		}
		return uc, f
	case isTimeout(err):
		return fail(http.StatusGatewayTimeout, "upstream timed out", err)
	}
	return fail(http.StatusBadGateway, "upstream closed the connection", err)
}

// statusClientClosed is the status logged for a request whose client
// went away while the proxy waited for the upstream: nginx's 499, which
// nobody receives.
const statusClientClosed = 499

// errClientGone reports that the client went away while the proxy waited
// for the upstream's response head.
var errClientGone = errors.New("proxy: the client went away while the upstream was answering")

// awaitHead reads a response head into h, as uc.readHead does, by due,
// the header timeout. A wait that armHead's first deadline cut short
// goes on until due with a watch of the client (c.Gone): if the client
// goes meanwhile (closes its connection, resets its HTTP/2 stream), the
// wait ends at once with errClientGone, rather than hold the upstream
// connection, and a place under max_conns, for nobody until the timeout.
// The connection then has a past read deadline: the caller closes it.
// (A head after an interim response that came late is waited for with
// the watch from the start.)
func (p *Proxy) awaitHead(c *pipe.Conn, uc *upConn, h *responseHead, due upstream.Instant) error {
	if uc.readDeadline < due || due.Sub(upstream.Now()) <= goneAfter {
		err := uc.readHead(h, p.maxHead, p.maxFields)
		if err == nil || !isTimeout(err) || upstream.Now() >= due {
			return err
		}
		uc.readDeadline = due
		uc.nc.SetReadDeadline(due.Time())
	}
	w := upstream.WatchGone(c.Gone(), uc.nc)
	err := uc.readHead(h, p.maxHead, p.maxFields)
	if w.Stop() {
		return errClientGone
	}
	return err
}

// carriesControl reports whether r's target or header fields carry a
// percent-encoded control byte (%00 to %1F, or %7F), which the engine
// lets through encoded and an application may decode into a response
// field: a response head the proxy refuses for such a byte may be the
// request's doing, and is not counted against the upstream.
func carriesControl(r *engine.Request) bool {
	if pctControl(r.Target) {
		return true
	}
	for i := range r.Fields {
		if pctControl(r.Fields[i].Value) {
			return true
		}
	}
	return false
}

// pctControl reports whether s holds %XX naming a control byte.
func pctControl(s []byte) bool {
	for i := 0; i+2 < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		hi, lo := s[i+1], s[i+2]|0x20
		if (hi == '0' || hi == '1') && (lo >= '0' && lo <= '9' || lo >= 'a' && lo <= 'f') || hi == '7' && lo == 'f' {
			return true
		}
	}
	return false
}

// startBody clears the deadlines and readies x.body for the response
// head in x.head.
func (p *Proxy) startBody(x *exchange, uc *upConn, r *engine.Request) *failure {
	h := &x.head
	mode := bodyClose
	switch {
	case r.IsMethod("HEAD") || h.status == http.StatusNoContent || h.status == http.StatusNotModified:
		mode = bodyNone
	case h.chunked:
		mode = bodyChunked
	case h.contentLength >= 0:
		mode = bodyLength
	}
	x.body.start(uc, mode, h.contentLength, p.maxHead, p.maxFields)
	// The body is read without a deadline (an event stream may be silent
	// for long). One already in the buffer, whole, needs no read: the
	// deadline stays, and the next exchange sets its own (getConn's peek
	// ignores it).
	switch {
	case !x.body.done && (mode != bodyLength || int64(uc.w-uc.r) < h.contentLength):
		uc.nc.SetDeadline(time.Time{})
		uc.readDeadline = 0
		uc.writeDeadline = false
	case uc.writeDeadline:
		// A small head's exchange sets no write deadline: none may be
		// left for it.
		uc.nc.SetWriteDeadline(time.Time{})
		uc.writeDeadline = false
	}
	return nil
}
