package fastcgi

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-server/sluice/cgi"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sock"
	"github.com/sluice-server/sluice/tracing"
	"github.com/sluice-server/sluice/upstream"
)

// A failure of one attempt, and what the client is told if nothing was
// sent to it yet.
type failure struct {
	status int
	msg    string
	err    error // for the log; with committed, what ends the response
	fault  bool  // the upstream's: counts for passive health
	stale  bool  // a pooled connection that failed before any response byte, request safe to send again

	// committed: the response was started (or the client failed): err
	// goes back to the pipeline, which cuts the connection.
	committed bool
}

// serve is the content phase: the request to an upstream and its
// response to the client.
func (cl *Client) serve(c *pipe.Conn, w pipe.Writer, x *exchange) error {
	r := c.Request
	s := &x.script

	// Chunked: FastCGI needs CONTENT_LENGTH, so it is read whole.
	body, length, spool, err := cgi.ReadBody(r, cl.maxBody)
	if err != nil {
		if cgi.BodyTooLarge(err) {
			return cgi.Answer(c, w, http.StatusRequestEntityTooLarge, "request body too large")
		}
		return err // the client went away or was too slow
	}
	if spool != nil {
		defer spool.Close()
	}
	// One span for the exchange, its attempts' upstreams and failures
	// on it: the script's parameters, HTTP_TRACEPARENT among them, are
	// built once for all attempts, and name it.
	span := tracing.StartUpstream(c, "fastcgi", "")
	if span != nil {
		defer func() { span.End(c.Status(), nil) }()
	}
	cl.buildRequest(x, c, s, length, body == nil)

	var client []byte
	var clientBuf [48]byte
	if cl.bal.Policy() == upstream.IPHash {
		if a, ok := r.RemoteAddr.(*net.TCPAddr); ok {
			client = a.AddrPort().Addr().AppendTo(clientBuf[:0])
		}
	}
	// The request is sent again only when it cannot have reached a
	// script: the connection was refused, or a kept-alive connection
	// proved closed when the request was written on it (the socket took
	// none of it). A GET, HEAD or OPTIONS without a body is also sent
	// again when its kept-alive connection closed before any response
	// byte (safe methods, as nginx and Go's net/http resend them); any
	// other request may have run its script and is never sent twice.
	replay := body == nil && (r.IsMethod("GET") || r.IsMethod("HEAD") || r.IsMethod("OPTIONS"))
	var last *failure
	a := cl.grp.Begin(false, cl.set.Retries)
attempts:
	for a.Next(r, client, c) {
		up := a.Host()
		um := cl.upm.Get(up.Name)
		var uc *conn
		var err error
		if g, ok := a.Granted(); ok {
			uc, err = take(up, g, cl.set.ConnectTimeout, body == nil)
		} else if uc, err = getConn(up, a.Now(), cl.set.ConnectTimeout, false, body == nil); err == upstream.ErrFull {
			a.Full()
			continue
		}
		if !a.Start() { // up left the set meanwhile
			if err == nil {
				uc.discard()
			}
			continue
		}
		started := a.Now()
		f := (*failure)(nil)
		for {
			if err != nil {
				attrs := []any{"upstream", up.Name, "err", err}
				if fix := sock.DialFix(err, "the FastCGI server (php-fpm, say)", "fastcgi"); fix != "" {
					attrs = append(attrs, "fix", fix)
				}
				attrs = append(attrs, c.RequestIDAttr())
				cl.log.Warn("fastcgi: cannot connect to upstream", attrs...)
				last = &failure{status: http.StatusBadGateway, msg: "upstream unreachable"}
				span.Attempt(up.Name, err)
				um.Failed()
				a.Failed(true, true)
				cl.logDown(&a)
				continue attempts
			}
			if f = cl.roundTrip(c, w, x, uc, body, replay); f == nil || !f.stale {
				break
			}
			// A kept-alive connection the server had closed (a worker
			// recycled by pm.max_requests): not its fault. roundTrip
			// closed it but kept its place under max_conns, on which a
			// new connection is dialled (which is never stale): giving
			// the place back could hand it to a waiting request and
			// leave this one without.
			x.rr = recordReader{}
			uc, err = dial(up, cl.set.ConnectTimeout)
		}
		if f == nil {
			span.Attempt(up.Name, nil)
			a.Done()
			um.Response(c.Status(), upstream.Now().Sub(started))
			upstream.LogAnswer(c, up, started)
			if x.local != "" {
				return cl.localRedirect(c, w, x.local)
			}
			return nil
		}
		if f.err == errClientGone {
			a.Failed(false, false)
			cl.log.Info("fastcgi: client went away while the script was running", "upstream", up.Name, "script", escape([]byte(s.Name)), c.RequestIDAttr())
			return f.err
		}
		if f.committed {
			a.Failed(f.fault, false)
			if f.fault {
				um.Failed()
				cl.log.Warn("fastcgi: response cut short", "upstream", up.Name, "script", escape([]byte(s.Name)), "err", f.err, c.RequestIDAttr())
				cl.logDown(&a)
			}
			return f.err
		}
		if f.fault {
			um.Failed()
			cl.log.Warn("fastcgi: "+f.msg, "upstream", up.Name, "script", escape([]byte(s.Name)), "status", f.status, "err", f.err, c.RequestIDAttr())
		}
		a.Failed(f.fault, false)
		cl.logDown(&a)
		last = f
		span.Attempt(up.Name, errors.New(f.msg))
	}
	switch err := a.Err(); {
	case err == upstream.ErrNoUpstream:
		return cgi.Answer(c, w, http.StatusServiceUnavailable, "no upstream available")
	case err != nil:
		c.Header().Set("Retry-After", "1")
		return cgi.Answer(c, w, http.StatusServiceUnavailable, "upstreams busy")
	case last == nil:
		return cgi.Answer(c, w, http.StatusBadGateway, "no upstream")
	}
	return cgi.Answer(c, w, last.status, last.msg)
}

// maxLocalRedirects bounds the local redirects one request follows.
const maxLocalRedirects = 10

// redirectsKey is the pipe.Conn value counting a request's local
// redirects.
const redirectsKey = "fastcgi.local_redirects"

// localRedirect answers a local redirect (RFC 3875 §6.2.2: a Location
// that is a path, without Status): the request is handled again for
// that path, as a GET (HEAD stays HEAD) without a body, by
// Options.LocalRedirect (the Client's own Handle by default), and what
// that sets up is written to w. The path is held to the request line's
// rules (engine.CanonicalPath, no control byte); after
// maxLocalRedirects hops the answer is 500. The request is as it came
// once the response is written.
func (cl *Client) localRedirect(c *pipe.Conn, w pipe.Writer, loc string) error {
	r := c.Request
	hops, _ := strconv.Atoi(c.Value(redirectsKey))
	if hops >= maxLocalRedirects {
		cl.log.Error("fastcgi: too many local redirects", "path", escape(r.Path), "location", escape([]byte(loc)), "hops", hops, c.RequestIDAttr())
		return cgi.Answer(c, w, http.StatusInternalServerError, "too many local redirects")
	}
	raw, query, _ := strings.Cut(loc, "?")
	p, err := engine.CanonicalPath([]byte(raw))
	if err == nil && bytes.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		err = errors.New("control byte in the path")
	}
	if err != nil {
		cl.log.Warn("fastcgi: invalid local redirect", "path", escape(r.Path), "location", escape([]byte(loc)), "err", err, c.RequestIDAttr())
		return cgi.Answer(c, w, http.StatusBadGateway, "invalid local redirect")
	}
	c.SetValue(redirectsKey, strconv.Itoa(hops+1))
	saved := *r
	defer func() { *r = saved }()
	if !r.IsMethod("HEAD") {
		r.Method = []byte("GET")
	}
	r.Target, r.RawPath, r.Path, r.Query = []byte(loc), []byte(raw), p, []byte(query)
	r.ContentLength = 0
	r.Fields = slices.DeleteFunc(slices.Clone(r.Fields), func(f engine.Field) bool {
		return httpgrammar.EqualFold(f.Name, "Content-Type") || httpgrammar.EqualFold(f.Name, "Content-Length") ||
			httpgrammar.EqualFold(f.Name, "Transfer-Encoding")
	})
	c.SetContent(nil)
	cl.redirect(c)
	if content := c.Content(); content != nil {
		return content(w)
	}
	return nil
}

// logDown logs an upstream that a's last failure marked down under the
// passive checks.
func (cl *Client) logDown(a *upstream.Attempts[*conn]) {
	if a.Down() {
		p := cl.set.Passive
		cl.log.Warn("fastcgi: upstream down after failed requests", "upstream", a.Host().Name,
			"failures", p.Failures, "window", p.Window, "down_for", p.DownFor)
	}
}

// buildRequest writes the request's records into x.out: BEGIN_REQUEST,
// the PARAMS stream and its end, and for a request without a body the
// empty STDIN record that ends it, so that such a request goes in one
// write.
func (cl *Client) buildRequest(x *exchange, c *pipe.Conn, s *Script, length int64, bodyless bool) {
	p := x.params[:0]
	m := cgi.Meta{
		ScriptName:     s.Name,
		ScriptFilename: s.Filename,
		PathInfo:       s.PathInfo,
		DocumentRoot:   cl.rootPath,
		ServerName:     cl.host,
		User:           c.Value("user"),
		ContentLength:  length,
		Authorization:  true,
	}
	if s.PathInfo != "" {
		m.PathTranslated = filepath.Join(cl.rootPath, filepath.FromSlash(s.PathInfo))
	}
	// Configured env wins: the request's variable of the same name is
	// not sent, so that PHP-FPM's handling of duplicates never matters.
	env := cl.env
	x.scratch = cgi.Vars(c.Request, &m, x.scratch, func(name string, v []byte) {
		if len(env) == 0 || !cl.hasEnv(name) {
			p = appendPair(p, name, v)
		}
	})
	if len(env) == 0 || !cl.hasEnv("REDIRECT_STATUS") {
		p = appendPair(p, "REDIRECT_STATUS", "200") // php-cgi's force_cgi_redirect; harmless to PHP-FPM
	}
	for _, e := range env {
		p = appendPair(p, e.name, e.value)
	}
	x.out, x.params = appendRequest(x.out[:0], p, bodyless), p
}

// appendRequest appends a request's records to out: BEGIN_REQUEST, the
// PARAMS stream params and its end, and for a request without a body
// the empty STDIN record that ends it.
func appendRequest(out, params []byte, bodyless bool) []byte {
	out = appendBeginRequest(out)
	out = appendStream(out, typeParams, params)
	out = appendHeader(out, typeParams, 0)
	if bodyless {
		out = appendHeader(out, typeStdin, 0)
	}
	return out
}

// hasEnv reports whether Options.Env sets name.
func (cl *Client) hasEnv(name string) bool {
	_, found := slices.BinarySearchFunc(cl.env, name, func(e envVar, n string) int { return strings.Compare(e.name, n) })
	return found
}

// roundTrip sends x's request on uc, with body, and passes the response
// to the client; nil when all went well (uc is then back in its pool).
// On failure uc is closed.
//
// A stale failure (the connection proved closed before the request can
// have reached a script: see replay in serve) closes uc but keeps its
// place among the host's open connections, for the caller to dial on.
func (cl *Client) roundTrip(c *pipe.Conn, w pipe.Writer, x *exchange, uc *conn, body io.Reader, replay bool) *failure {
	f, keep := cl.send(x, uc, body), false
	if f == nil {
		f, keep = cl.receive(c, w, x, uc, body == nil, replay)
	}
	switch {
	case keep:
		uc.put()
	case f != nil && f.stale:
		uc.nc.Close()
	default:
		uc.discard()
	}
	return f
}

// send writes the request's records, and the body as STDIN records. A
// request without a body is left to receive, whose first read writes it
// (rawConn.writeThenRead).
func (cl *Client) send(x *exchange, uc *conn, body io.Reader) *failure {
	uc.armWrite(time.Now(), cl.sendTO)
	if body == nil {
		return nil
	}
	if n, err := uc.nc.Write(x.out); err != nil {
		if uc.reused && n == 0 {
			return &failure{stale: true, err: err} // nothing sent, the body still unread
		}
		return &failure{status: http.StatusBadGateway, msg: "cannot send the request upstream", err: err, fault: true}
	}
	buf := x.rbuf[:headerLen+min(bodyChunk, len(x.rbuf)-headerLen)]
	for {
		n, rerr := body.Read(buf[headerLen:])
		if n > 0 {
			appendHeader(buf[:0], typeStdin, n)
			uc.armWrite(time.Now(), cl.sendTO)
			if _, err := uc.nc.Write(buf[:headerLen+n]); err != nil {
				return &failure{status: http.StatusBadGateway, msg: "cannot send the request body upstream", err: err, fault: true}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if cgi.BodyTooLarge(rerr) {
				return &failure{status: http.StatusRequestEntityTooLarge, msg: "request body too large", err: rerr}
			}
			return &failure{committed: true, err: rerr} // the client went away or was too slow
		}
	}
	var end [headerLen]byte
	if _, err := uc.nc.Write(appendHeader(end[:0], typeStdin, 0)); err != nil {
		return &failure{status: http.StatusBadGateway, msg: "cannot send the request body upstream", err: err, fault: true}
	}
	return nil
}

// receive reads the response records and passes the response on. keep
// says the exchange ended cleanly, so that uc may serve another request.
// noBody says the request has none: its first read writes x.out. A
// kept-alive connection found closed before any response byte is stale
// (f.stale: to be tried again) when that write failed with nothing sent,
// or, replay, for a request that may be sent twice.
func (cl *Client) receive(c *pipe.Conn, w pipe.Writer, x *exchange, uc *conn, noBody, replay bool) (f *failure, keep bool) {
	var (
		headDone  bool
		bodyless  bool     // 204 or 304: the body is dropped
		unflushed bool     // written to w since the last flush
		drained   bool     // the last read took less than x.rbuf: nothing more was there
		got       bool     // any byte from the server
		unsent    = noBody // x.out, for the first read to write
		logs      = stderrCount{c: c}
	)
	defer cl.stderrDropped(&logs, c.Request.Path)
	// The head is waited for until the header timeout; past goneAfter,
	// with a watch of the client, so that a slow script's connection (a
	// place under max_conns, and a PHP-FPM worker) is given up when
	// nobody waits for its answer any more. Quick answers never start
	// the watch. The read deadline is the header timeout's from the
	// start, and goneAfter a coarse timer's: a deadline set short and
	// moved later when the head came would leave the runtime a wake-up
	// at the short one's time (see package coarse).
	uc.armRead(time.Now(), cl.headerTO)
	if cl.headerTO > goneAfter {
		x.uc, x.waiting = uc, true
		x.slow.Start(goneAfter, x.slowFn)
	}
	defer func() {
		if x.endWatch() && f != nil && !f.committed {
			f = &failure{committed: true, err: errClientGone}
		}
	}()
	for !x.rr.done {
		n, ok, err := 0, false, error(nil)
		if headDone && unflushed {
			// Flush what was written once the server pauses. A read
			// that did not fill the buffer took all there was (a
			// stream socket's read returns what it holds), so the
			// server has paused without a try at reading, as nginx
			// tells it. Otherwise the try tells; the body's deadline
			// is armed first: a try at reading fails once the deadline
			// has passed, even with bytes waiting, and the one armed
			// for the head (the header timeout) may be far shorter
			// than a body streamed without a pause lasts.
			uc.armRead(time.Now(), cl.readTO)
			if !drained {
				n, ok, err = uc.raw.tryRead(x.rbuf)
			}
			if !ok {
				if err := w.Flush(); err != nil {
					return &failure{committed: true, err: err}, false
				}
				unflushed = false
			}
		}
		if !ok {
			switch {
			case headDone:
				uc.armRead(time.Now(), cl.readTO)
				n, err = uc.raw.read(x.rbuf)
			case unsent:
				unsent = false
				n, err = uc.raw.writeThenRead(x.out, x.rbuf)
			default:
				n, err = uc.raw.read(x.rbuf)
			}
		}
		if n == 0 {
			if err == nil {
				continue
			}
			var ne net.Error
			timeout := errors.As(err, &ne) && ne.Timeout()
			switch {
			case headDone:
				return &failure{committed: true, fault: true, err: err}, false
			case timeout:
				return &failure{status: http.StatusGatewayTimeout, msg: "upstream timed out", err: err, fault: true}, false
			case !got && uc.reused && noBody && (replay || uc.raw.nothingSent()):
				return &failure{stale: true, err: err}, false
			}
			if err == io.EOF {
				err = errors.New("connection closed before the response head")
			}
			return &failure{status: http.StatusBadGateway, msg: "upstream closed the connection", err: err, fault: true}, false
		}
		got, drained = true, n < len(x.rbuf)
		// The body's bytes of every STDOUT record in this read go to w
		// together, in one write: a script that prints faster than it
		// is read sends many records at a time, and a write each would
		// be a system call each.
		body := x.body[:0]
		for p := x.rbuf[:n]; len(p) > 0; {
			k, ev, data, err := x.rr.next(p)
			if err != nil {
				if headDone {
					return &failure{committed: true, fault: true, err: err}, false
				}
				return &failure{status: http.StatusBadGateway, msg: "invalid response from upstream", err: err, fault: true}, false
			}
			p = p[k:]
			switch ev {
			case evStdout:
				if !headDone {
					var rest []byte
					var f *failure
					if headDone, rest, f = cl.gatherHead(c, x, uc, data); f != nil {
						return f, false
					}
					if !headDone {
						continue
					}
					if x.endWatch() {
						return &failure{committed: true, err: errClientGone}, false
					}
					s := c.Status()
					bodyless = s == http.StatusNoContent || s == http.StatusNotModified
					if uc.last.local != "" {
						// A local redirect: nothing of it goes to the client;
						// serve runs the new path once the exchange ends.
						x.local, bodyless = uc.last.local, true
						for _, f := range uc.last.fields {
							c.Header().Del(f.name)
						}
						c.SetStatus(0)
					}
					data = rest
				}
				if len(data) > 0 && !bodyless {
					body = append(body, data)
				}
			case evStderr:
				cl.logStderr(&logs, c.Request.Path, data)
			case evEnd:
				if len(p) > 0 {
					// Bytes after END_REQUEST: the connection is not clean.
					keep = false
					p = nil
				} else {
					keep = true
				}
			}
		}
		// Written before the next read reuses x.rbuf, which they are in.
		x.body = body
		if len(body) > 0 {
			var err error
			if len(body) == 1 {
				_, err = w.Write(body[0])
			} else {
				_, err = pipe.WriteBuffers(w, body)
			}
			clear(body)
			if err != nil {
				return &failure{committed: true, err: err}, false
			}
			unflushed = true
		}
	}
	if ps := x.rr.protocolStatus; ps != statusRequestComplete {
		msg := "upstream refused the request"
		status := http.StatusBadGateway
		if ps == statusOverloaded {
			msg, status = "upstream overloaded", http.StatusServiceUnavailable
		}
		if headDone {
			return &failure{committed: true, fault: true, err: errors.New(msg)}, false
		}
		return &failure{status: status, msg: msg, err: errors.New("END_REQUEST protocolStatus " + strconv.Itoa(int(ps))), fault: true}, false
	}
	if !headDone {
		return &failure{status: http.StatusBadGateway, msg: "upstream sent no valid response head", err: errors.New("STDOUT ended without a response head"), fault: true}, keep
	}
	return nil, keep
}

// gatherHead adds STDOUT content to the response head; once the head is
// whole it is applied to c (cgi.ParseHead, through uc's last head), and rest is the start of the
// body. Usually the head comes in one record and is read in place.
func (cl *Client) gatherHead(c *pipe.Conn, x *exchange, uc *conn, data []byte) (done bool, rest []byte, f *failure) {
	head := data
	scan := 0
	if len(x.head) > 0 {
		scan = max(0, len(x.head)-3)
		x.head = append(x.head, data...)
		head = x.head
	}
	end, bodyAt := cgi.HeadEnd(head, scan)
	if end < 0 {
		if len(head) > cl.maxHead {
			return false, nil, &failure{status: http.StatusBadGateway, msg: "upstream's response head too large", err: errors.New("response head over max_header_bytes"), fault: true}
		}
		if len(x.head) == 0 {
			x.head = append(x.head, data...)
		}
		return false, nil, nil
	}
	if end > cl.maxHead {
		return false, nil, &failure{status: http.StatusBadGateway, msg: "upstream's response head too large", err: errors.New("response head over max_header_bytes"), fault: true}
	}
	if err := uc.last.apply(c, head[:end]); err != nil {
		return false, nil, &failure{status: http.StatusBadGateway, msg: "upstream sent an invalid response head", err: err, fault: true}
	}
	return true, head[bodyAt:], nil
}

// goneAfter is how long a response head is waited for before the client
// is watched (as the proxy does): the watch costs a goroutine and the
// client's gone notice, which quick answers never pay.
const goneAfter = 500 * time.Millisecond

// errClientGone ends a request whose client went away while the script
// was running.
var errClientGone = errors.New("fastcgi: the client went away while the script was running")

// check sends one active health check to u: a GET of Health.Path (such
// as PHP-FPM's ping.path) on a connection of its own; it passes when the
// response head is valid (cgi.ParseHead, as for a request) and its
// status (200 without a Status field) is Health.Expect, or any 2xx.
func (cl *Client) check(u *host) bool {
	hc := cl.set.Health
	nc, err := hc.DialCheck(u.Network, u.Addr)
	if err != nil {
		return false
	}
	defer nc.Close()
	var p []byte
	for _, kv := range [][2]string{
		{"GATEWAY_INTERFACE", "CGI/1.1"}, {"SERVER_SOFTWARE", "sluice"}, {"REQUEST_METHOD", "GET"},
		{"SCRIPT_NAME", hc.Path}, {"SCRIPT_FILENAME", filepath.Join(cl.rootPath, filepath.FromSlash(hc.Path))},
		{"REQUEST_URI", hc.Path}, {"QUERY_STRING", ""}, {"DOCUMENT_ROOT", cl.rootPath},
		{"SERVER_PROTOCOL", "HTTP/1.1"}, {"HTTP_USER_AGENT", "sluice-health-check"},
	} {
		p = appendPair(p, kv[0], kv[1])
	}
	if _, err := nc.Write(appendRequest(nil, p, true)); err != nil {
		return false
	}
	var rr recordReader
	var head []byte
	buf := make([]byte, 4<<10)
	for !rr.done {
		n, err := nc.Read(buf)
		for b := buf[:n]; len(b) > 0 && !rr.done; {
			k, ev, data, perr := rr.next(b)
			if perr != nil {
				return false
			}
			if ev == evStdout && len(head) < 8<<10 {
				head = append(head, data...)
			}
			b = b[k:]
		}
		if err != nil && !rr.done {
			return false
		}
	}
	end, _ := cgi.HeadEnd(head, 0)
	if end < 0 || rr.protocolStatus != statusRequestComplete {
		return false
	}
	status, err := cgi.ParseHead(head[:end], func(string, string) {})
	switch {
	case err != nil:
		return false
	case status == 0:
		status = http.StatusOK
	}
	return hc.Passes(status)
}

// reportCheck logs a change of u's health the active checks found.
func (cl *Client) reportCheck(u *host, change int) {
	switch change {
	case -1:
		cl.log.Warn("fastcgi: upstream down: health check failed", "upstream", u.Name, "checks", cl.set.Health.Fall)
	case +1:
		cl.log.Info("fastcgi: upstream up again: health check passed", "upstream", u.Name, "checks", cl.set.Health.Rise)
	}
}
