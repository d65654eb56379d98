package proxy

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/clientaddr"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
)

// Values of Options.Host.
const (
	HostClient   = "client"   // the Host the client sent (the default)
	HostUpstream = "upstream" // the upstream's host:port from its URL
)

// Values of Options.Forwarded.
const (
	ForwardedXFF     = "x-forwarded" // X-Forwarded-For, -Proto, -Host (the default)
	ForwardedRFC7239 = "forwarded"   // RFC 7239 Forwarded
	ForwardedNone    = "none"        // neither: the request's fields pass as received
)

// Defaults of Options.
const (
	DefaultConnectTimeout        = 5 * time.Second
	DefaultResponseHeaderTimeout = 60 * time.Second
	DefaultIdleTimeout           = 60 * time.Second
	DefaultMaxIdleConns          = 256
	DefaultRetries               = 2
	DefaultMaxHeaderBytes        = 32 << 10
	DefaultMaxHeaderCount        = 256
	DefaultTunnelIdleTimeout     = time.Hour
	expectContinueTimeout        = time.Second
)

// Options configures a Proxy. The yaml tags are the keys of a config
// file's proxy entry. The zero value of every field but Upstreams is a
// valid default.
type Options struct {
	// Upstreams are the servers to proxy to, at least one, at most 64:
	// an http URL of a host and port (port 80 if absent), without path or
	// query, or "unix:" and the path of a Unix socket.
	Upstreams []string `yaml:"upstreams"`

	// Policy chooses an upstream per request: round_robin (the default),
	// least_conn, random_two, ip_hash (the client's address, as
	// TrustedProxies and ClientIPHeader find it) or hash (HashKey).
	Policy string `yaml:"policy"`

	// HashKey is what policy hash hashes: "header:NAME", "cookie:NAME"
	// or "path" (the canonical path).
	HashKey string `yaml:"hash_key"`

	// Retries is how many other upstreams a request may be tried on
	// after a failure (default 2; -1 for none). A request is retried
	// only when nothing of it was sent, or when it is idempotent (GET,
	// HEAD, OPTIONS, TRACE, PUT, DELETE), has no body, and no byte of a
	// response came back before the failure; never after a timeout.
	// An upstream at MaxConns has not failed: the request moves on to
	// another without spending a retry.
	Retries int `yaml:"retries"`

	// FailStatus lists the response statuses that count as the
	// upstream failing (400 to 599, such as [502, 503, 504]; none by
	// default, as nginx counts only errors unless told). Each such
	// response counts for the passive checks as a refused connection
	// does. It is passed on to the client, but for a request that may be
	// retried (idempotent, without a body, no interim response passed
	// on) while Retries allows and an upstream is left untried: that one
	// is tried instead, and the response dropped, as nginx's
	// proxy_next_upstream http_502 does.
	FailStatus []int `yaml:"fail_status"`

	// MaxConns bounds the connections open to each upstream (0: no
	// bound). A request finding every upstream it may use at its bound
	// waits in the queue (Queue) for a connection to come free.
	MaxConns int `yaml:"max_conns"`

	// Queue bounds the requests waiting, under MaxConns, for a
	// connection (default 100, across the upstreams; -1: none wait).
	// Each is handed, first come first served, a connection put back to
	// its upstream's pool or the place of one closed, without polling. A
	// request finding the queue full, or still waiting after
	// QueueTimeout, is answered 503 with Retry-After: 1.
	Queue int `yaml:"queue"`

	// QueueTimeout bounds a request's wait in the queue (default 5s).
	QueueTimeout time.Duration `yaml:"queue_timeout"`

	// MaxIdleConns bounds the idle keep-alive connections kept per
	// upstream (default 256; -1 keeps none). Requests beyond it in flight
	// at once open connections that are closed after use: under load
	// that is a connect and a close per request, which costs more than
	// the request itself, so keep it above the requests usually in
	// flight. An idle connection holds a socket on each side and a few
	// hundred bytes here, with a copy of the last response head it read
	// (at most 2 KiB; its read buffer is pooled), until IdleTimeout.
	MaxIdleConns int `yaml:"max_idle_conns"`

	// ConnectTimeout bounds connecting to an upstream (default 5s).
	ConnectTimeout time.Duration `yaml:"connect_timeout"`

	// ResponseHeaderTimeout bounds the wait for the response head once
	// the request is sent, and each write of the request (default 60s).
	// Expiry answers 504. The wait may last up to an eighth of it (at
	// most 1s) longer: a connection keeps its timer between requests.
	ResponseHeaderTimeout time.Duration `yaml:"response_header_timeout"`

	// IdleTimeout is how long an idle keep-alive connection is kept for
	// reuse (default 60s).
	IdleTimeout time.Duration `yaml:"idle_timeout"`

	// TunnelIdleTimeout closes a tunnel (a WebSocket, or any protocol
	// an Upgrade switched to) once no byte has crossed it either way for
	// this long (default 1h; -1 for no bound), so that a peer gone
	// without a word does not hold two connections for ever. Traffic
	// either way keeps it open.
	TunnelIdleTimeout time.Duration `yaml:"tunnel_idle_timeout"`

	// StripPrefix is removed from the start of the canonical path before
	// it is sent upstream ("/api" sends /api/users as /users, /api as /);
	// it matches whole segments, and requests whose path does not start
	// with it (/apix) pass unchanged.
	StripPrefix string `yaml:"strip_prefix"`

	// Host is the Host sent upstream: "client" (the default: the one
	// the client sent), "upstream" (the upstream's from its URL), or a
	// host[:port] to send always.
	Host string `yaml:"host"`

	// Forwarded is how the client is named to the upstream:
	// "x-forwarded" (the default: X-Forwarded-For, -Proto and -Host),
	// "forwarded" (RFC 7239) or "none".
	Forwarded string `yaml:"forwarded"`

	// TrustedProxies lists the proxies in front of this one (CIDRs or
	// addresses, "unix:" for Unix-socket peers), as ipfilter's option:
	// the forwarding fields a trusted peer sent are appended to; anyone
	// else's are replaced. ip_hash reads the client address through them.
	TrustedProxies []string `yaml:"trusted_proxies"`

	// ClientIPHeader is the header ip_hash reads the client address from
	// when the peer is trusted ("X-Forwarded-For" by default).
	ClientIPHeader string `yaml:"client_ip_header"`

	// MaxHeaderBytes bounds an upstream response's head, and its
	// trailer section (default 32 KiB); a larger one is answered 502.
	MaxHeaderBytes int `yaml:"max_header_bytes"`

	// MaxHeaderCount bounds the fields of an upstream response's head
	// (default 256); more are answered 502.
	MaxHeaderCount int `yaml:"max_header_count"`

	// Passive configures passive health checks, on by default: failures
	// (default 3; -1 turns them off) failed requests to an upstream
	// within window (default 10s) leave it out for down_for (default
	// 10s). A failure is a connection refused or timed out, or a
	// response head late, malformed or missing, or a status fail_status
	// lists; not max_conns.
	Passive PassiveHealth `yaml:"passive"`

	// Health configures active health checks, off without a path: every
	// interval (default 5s) each upstream is sent GET path on a
	// connection of its own; a check fails when it cannot connect,
	// exceeds timeout (default 2s), or answers another status than
	// expect (default any 2xx). fall (default 3) failures in a row mark
	// the upstream down, rise (default 2) passes in a row up again.
	Health Health `yaml:"health"`

	// Logger receives upstream failures; nil is slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// Proxy is a reverse proxy: a pipeline Source that sends each request to
// an upstream and produces the upstream's response, so that the filters
// after it (compress, headers, log) act on it. It is safe for concurrent
// use; Close releases its idle connections.
type Proxy struct {
	ups         []*upstream
	bal         *balancer
	resolver    *clientaddr.Resolver
	retries     int
	connectTO   time.Duration
	headerTO    time.Duration
	tunnelIdle  time.Duration
	stripPrefix string
	host        string
	forwarded   string
	maxHead     int
	maxFields   int
	log         *slog.Logger
	passive     PassiveHealth
	health      Health
	failStatus  []int
	queue       *waitQueue // nil without MaxConns or with Queue -1

	closeOnce sync.Once
	stopCheck chan struct{} // closed by Close; nil without active checks
	checkDone chan struct{}

	// tunnelReadOn, if set (by tests, before the first request), is
	// called from a tunnel's relay each time its read from src outlives
	// its idle deadline and goes on because the other way is busy.
	tunnelReadOn func(src net.Conn)
}

var _ pipe.Component = (*Proxy)(nil)

// New returns the Proxy opts describe, or an error naming the option
// that is wrong.
func New(opts Options) (*Proxy, error) {
	if len(opts.Upstreams) == 0 {
		return nil, errors.New("proxy: no upstreams")
	}
	if len(opts.Upstreams) > 64 {
		return nil, errors.New("proxy: more than 64 upstreams")
	}
	p := &Proxy{
		retries:     orDefault(opts.Retries, DefaultRetries),
		connectTO:   orDefault(opts.ConnectTimeout, DefaultConnectTimeout),
		headerTO:    orDefault(opts.ResponseHeaderTimeout, DefaultResponseHeaderTimeout),
		tunnelIdle:  orDefault(opts.TunnelIdleTimeout, DefaultTunnelIdleTimeout),
		stripPrefix: strings.TrimSuffix(opts.StripPrefix, "/"),
		host:        opts.Host,
		forwarded:   opts.Forwarded,
		maxHead:     orDefault(opts.MaxHeaderBytes, DefaultMaxHeaderBytes),
		maxFields:   orDefault(opts.MaxHeaderCount, DefaultMaxHeaderCount),
		log:         opts.Logger,
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.stripPrefix != "" && p.stripPrefix[0] != '/' {
		return nil, fmt.Errorf("proxy: strip_prefix %q does not start with /", opts.StripPrefix)
	}
	switch p.forwarded {
	case "":
		p.forwarded = ForwardedXFF
	case ForwardedXFF, ForwardedRFC7239, ForwardedNone:
	default:
		return nil, fmt.Errorf("proxy: forwarded %q: want %s, %s or %s", p.forwarded, ForwardedXFF, ForwardedRFC7239, ForwardedNone)
	}
	switch p.host {
	case "", HostClient, HostUpstream:
	default:
		if !validHostValue(p.host) {
			return nil, fmt.Errorf("proxy: host %q: want client, upstream or a host[:port]", p.host)
		}
	}
	var err error
	if p.bal, err = newBalancer(opts.Policy, opts.HashKey); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	if p.resolver, err = clientaddr.New(opts.TrustedProxies, opts.ClientIPHeader); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p.passive = PassiveHealth{
		Failures: orDefault(opts.Passive.Failures, DefaultPassiveFailures),
		Window:   orDefault(opts.Passive.Window, DefaultPassiveWindow),
		DownFor:  orDefault(opts.Passive.DownFor, DefaultPassiveDownFor),
	}
	p.health = Health{
		Path:     opts.Health.Path,
		Interval: orDefault(opts.Health.Interval, DefaultHealthInterval),
		Timeout:  orDefault(opts.Health.Timeout, DefaultHealthTimeout),
		Expect:   opts.Health.Expect,
		Rise:     max(orDefault(opts.Health.Rise, DefaultHealthRise), 1),
		Fall:     max(orDefault(opts.Health.Fall, DefaultHealthFall), 1),
	}
	if hp := p.health.Path; hp != "" && (hp[0] != '/' || !validTarget(hp)) {
		return nil, fmt.Errorf("proxy: health path %q: want an origin-form path such as /healthz", hp)
	}
	if e := p.health.Expect; e != 0 && (e < 100 || e > 999) {
		return nil, fmt.Errorf("proxy: health expect %d: want a status code", e)
	}
	for _, st := range opts.FailStatus {
		if st < 400 || st > 599 {
			return nil, fmt.Errorf("proxy: fail_status %d: want an error status, 400 to 599", st)
		}
	}
	p.failStatus = slices.Clone(opts.FailStatus)
	if q := orDefault(opts.Queue, DefaultQueue); opts.MaxConns > 0 && q > 0 {
		p.queue = newWaitQueue(q, orDefault(opts.QueueTimeout, DefaultQueueTimeout))
	}
	maxIdle := orDefault(opts.MaxIdleConns, DefaultMaxIdleConns)
	for i, s := range opts.Upstreams {
		u, err := parseUpstream(s)
		if err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
		u.maxConns, u.maxIdle = opts.MaxConns, max(maxIdle, 0)
		u.idleTime = orDefault(opts.IdleTimeout, DefaultIdleTimeout)
		u.index, u.queue = i, p.queue
		p.ups = append(p.ups, u)
	}
	for _, u := range p.ups {
		u.health = acquireHealth(u.name)
	}
	if p.health.Path != "" {
		p.stopCheck, p.checkDone = make(chan struct{}), make(chan struct{})
		go p.checker(p.stopCheck, p.checkDone)
	}
	return p, nil
}

// validTarget reports whether every byte of t may appear in a
// request-target.
func validTarget(t string) bool {
	for i := range len(t) {
		if !httpgrammar.IsTargetChar(t[i]) {
			return false
		}
	}
	return true
}

// orDefault returns v, or def when v is zero; a negative v is taken as
// an explicit zero.
func orDefault[T int | time.Duration](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

func validHostValue(h string) bool {
	for i := range len(h) {
		c := h[i]
		if !httpgrammar.IsTokenChar(c) && c != ':' && c != '[' && c != ']' {
			return false
		}
	}
	return h != ""
}

// Close stops the active health checks and closes the idle upstream
// connections. Requests in flight finish; their connections are closed
// rather than kept. The upstreams' health is kept for another Proxy
// naming them (the next config's, after a reload).
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		if p.stopCheck != nil {
			close(p.stopCheck)
			<-p.checkDone
		}
		for _, u := range p.ups {
			u.close()
			releaseHealth(u.name)
		}
	})
	return nil
}

// Handle sets the proxy's content on c: the exchange with the upstream
// happens in the content phase, so that every component of the pipeline
// has run first and nothing is sent upstream for a request they refuse.
func (p *Proxy) Handle(c *pipe.Conn) bool {
	x := exchangePool.Get().(*exchange)
	x.p, x.c = p, c
	c.SetContent(x.content)
	return true
}

// exchange is one request's dealings with an upstream.
type exchange struct {
	head    responseHead
	body    bodyReader
	reqHead []byte
	scratch []byte
	// readBuf is a read buffer (readBufSize) lent to the exchange's
	// upstream connection, which comes from its pool without one, and
	// taken back when the response ends: one buffer a request, without
	// a trip through readBufs.
	readBuf []byte
	peer    peerCache
	fields  []string // the response fields passed on: name, value, …
	interim bool     // an interim response was passed on to the client
	text    []byte   // the bytes of the fields not kept from the response before, made one string
	ends    []int    // where each name and value ends in text; -1 for one kept

	p       *Proxy
	c       *pipe.Conn
	content pipe.Content // x.serve, bound once
}

// exchangePool holds exchanges between requests (New is set by init: an
// exchange's content puts it back).
var exchangePool sync.Pool

func init() {
	exchangePool.New = func() any {
		x := &exchange{reqHead: make([]byte, 0, 4<<10), scratch: make([]byte, 32<<10)}
		x.content = x.serve
		return x
	}
}

// serve is the request's content: the exchange with an upstream. The
// exchange goes back to the pool after it (one whose content never runs,
// because a later pipe ended the pipeline, is left to the collector).
func (x *exchange) serve(w pipe.Writer) error {
	p, c := x.p, x.c
	defer func() {
		x.p, x.c = nil, nil
		exchangePool.Put(x)
	}()
	return p.serve(c, w, x)
}

// smallHead is the largest request head written without a write
// deadline: far below any socket's send buffer.
const smallHead = 4 << 10

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
var busy = &failure{http.StatusServiceUnavailable, "upstreams busy", errFull, true, false, false}

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
	return &failure{http.StatusServiceUnavailable, msg, err, false, false, false}
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
		uc, f := p.roundTrip(c, x, up, uc, err, r, now, hasBody, expect, upgrade)
		if f != nil && f.stale {
			// A pooled connection the upstream had closed, found out
			// only by sending on it: not the upstream's fault, and safe
			// to try again on a new connection.
			uc, err = up.get(now, p.connectTO, true)
			uc, f = p.roundTrip(c, x, up, uc, err, r, now, hasBody, expect, upgrade)
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
			last = &failure{status, "upstream answered " + strconv.Itoa(status), nil, true, false, false}
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

// roundTrip sends r to up over uc, the connection got for it (or err,
// the failure to get one), at now, and reads the response head into x.head. On
// success the connection is returned, its body reader ready in x.body; on
// failure the connection is closed and the failure says why.
func (p *Proxy) roundTrip(c *pipe.Conn, x *exchange, up *upstream, uc *upConn, err error, r *engine.Request, now instant, hasBody, expect bool, upgrade []byte) (*upConn, *failure) {
	if err != nil {
		switch {
		case err == errFull:
			return nil, busy // a fresh connection after a stale one (see serve)
		case isTimeout(err):
			return nil, &failure{http.StatusGatewayTimeout, "upstream did not accept the connection in time", err, true, true, false}
		}
		return nil, &failure{http.StatusBadGateway, "upstream unreachable", err, true, true, false}
	}
	if uc.buf == nil {
		uc.buf = x.readBuf
		x.readBuf = nil
		if uc.buf == nil {
			uc.buf = getReadBuf()
		}
	}
	// Retrying is safe when the upstream cannot have acted on the request.
	safe := idempotent(r) && !hasBody
	fail := func(status int, msg string, err error) (*upConn, *failure) {
		up.discard(uc)
		retry := safe && uc.got == 0 && !isTimeout(err)
		if _, bad := err.(*BadResponseError); bad {
			retry = false
		}
		if retry && uc.reused {
			return nil, &failure{status, msg, err, false, false, true}
		}
		return nil, &failure{status, msg, err, retry, true, false}
	}

	x.reqHead = p.appendRequestHead(x.reqHead[:0], r, up, expect, upgrade, &x.peer)
	nc := uc.nc
	if hasBody || expect || len(x.reqHead) > smallHead {
		d := now.add(p.headerTO)
		nc.SetDeadline(d.time())
		uc.readDeadline = d
		uc.writeDeadline = true
	} else {
		// A small head fits the idle connection's empty send buffer:
		// its write cannot block, and only the response's wait needs
		// the timeout (one timer the fewer per request), which a
		// deadline left by the exchanges before may serve (armRead).
		uc.armRead(now, p.headerTO)
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
		uc.readDeadline = monoNow().add(p.headerTO)
		nc.SetReadDeadline(uc.readDeadline.time())
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
			return p.headFailure(fail, err)
		}
		if err == nil && x.head.status >= 200 {
			return uc, p.startBody(x, uc, r)
		}
	}
	if sendBody {
		if err := p.sendBody(x, nc, r); err != nil {
			if errors.Is(err, errClientBody) {
				up.discard(uc)
				return nil, &failure{http.StatusBadRequest, "request body incomplete", err, false, false, false}
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
	for {
		if err := uc.readHead(&x.head, p.maxHead, p.maxFields); err != nil {
			return p.headFailure(fail, err)
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

func (p *Proxy) headFailure(fail func(int, string, error) (*upConn, *failure), err error) (*upConn, *failure) {
	var bad *BadResponseError
	switch {
	case errors.As(err, &bad):
		return fail(http.StatusBadGateway, "upstream sent a malformed response", err)
	case isTimeout(err):
		return fail(http.StatusGatewayTimeout, "upstream timed out", err)
	}
	return fail(http.StatusBadGateway, "upstream closed the connection", err)
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
	x.body.start(uc, mode, h.contentLength, p.maxHead)
	// The body is read without a deadline (an event stream may be silent
	// for long). One already in the buffer, whole, needs no read: the
	// deadline stays, and the next exchange sets its own (get's peek
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

// errClientBody marks a failure to read the client's request body.
var errClientBody = errors.New("proxy: reading the request body")

// sendBody writes the request head in x.reqHead (unless already sent)
// with the body, streamed through x.scratch: as it came for a
// Content-Length, re-chunked for a chunked one, with the client's trailer
// fields. Each piece goes in one writev with the framing around it.
func (p *Proxy) sendBody(x *exchange, nc net.Conn, r *engine.Request) error {
	chunked := r.ContentLength < 0
	var vec [4][]byte
	var size [20]byte
	out := append(vec[:0], x.reqHead)
	for {
		n, err := r.Body.Read(x.scratch)
		if err != nil && err != io.EOF {
			return fmt.Errorf("%w: %w", errClientBody, err)
		}
		if n > 0 {
			if chunked {
				hdr := strconv.AppendInt(size[:0], int64(n), 16)
				out = append(out, append(hdr, "\r\n"...), x.scratch[:n], crlf)
			} else {
				out = append(out, x.scratch[:n])
			}
		}
		if err == io.EOF && chunked {
			last := []byte("0\r\n") // once a request: the trailer fields follow
			for _, f := range r.Trailer {
				if !httpgrammar.IsHopByHop(f.Name) && !isFramingField(f.Name) {
					last = appendField(last, f.Name, f.Value)
				}
			}
			out = append(out, append(last, "\r\n"...))
		}
		nc.SetWriteDeadline(time.Now().Add(p.headerTO))
		bufs := net.Buffers(out)
		if _, werr := bufs.WriteTo(nc); werr != nil {
			return werr
		}
		if err == io.EOF {
			return nil
		}
		out = vec[:0]
	}
}

var crlf = []byte("\r\n")

// respond passes the upstream response in x on to the client through w:
// the status, the end-to-end header fields, Via, and the body, flushed
// whenever no more of it is at hand. The first piece of the body is read
// before anything is written, so that a body malformed from its start
// (a bad first chunk line) is still answered 502; one malformed later is
// cut off, and the client sees it incomplete.
func (p *Proxy) respond(c *pipe.Conn, w pipe.Writer, x *exchange, uc *upConn, r *engine.Request) error {
	h := &x.head
	var optBuf [maxConnectionOptions][]byte
	conn := responseOptions(optBuf[:0], h.fields)
	// The fields are views into the connection's buffer, which reading
	// the body reuses: they are made strings first. One the same as the
	// field at its place in the exchange's previous response keeps that
	// response's string (an upstream's responses mostly repeat their
	// fields; Date changes once a second), so that a response like the
	// one before costs no allocation; the others are copied into one new
	// string, cut into names and values.
	prev := x.fields
	x.text, x.ends = x.text[:0], x.ends[:0]
	for _, f := range h.fields {
		if isHopByHop(f.name, conn) {
			continue
		}
		if x.body.mode == bodyNone && len(f.name) == 14 && httpgrammar.EqualFold(f.name, "content-length") && !r.IsMethod("HEAD") {
			continue
		}
		for _, b := range [2][]byte{f.name, f.value} {
			if i := len(x.ends); i < len(prev) && prev[i] == string(b) {
				x.ends = append(x.ends, -1) // prev[i] is kept
				continue
			}
			x.text = append(x.text, b...)
			x.ends = append(x.ends, len(x.text))
		}
	}
	var text string
	if len(x.text) > 0 {
		text = string(x.text)
	}
	x.fields = x.fields[:0]
	start := 0
	for i, end := range x.ends {
		if end < 0 {
			x.fields = append(x.fields, prev[i]) // its own place: i < len(prev)
			continue
		}
		x.fields = append(x.fields, text[start:end])
		start = end
	}
	status, reusable := h.status, !h.close
	hdr := c.Header()
	var err error
	var watch *goneWatch
	buf := x.scratch
	for first := true; ; first = false {
		if !first && watch == nil {
			// The body is still coming: a client that goes away now must
			// not leave this request waiting on a silent upstream (an
			// event stream), so its going ends the wait.
			watch = watchGone(c.Gone(), uc)
		}
		// Read what is at hand, up to a buffer's worth. A whole body
		// that came with the head is written from the connection's
		// buffer, not copied.
		var body []byte
		rerr := error(nil)
		if first {
			body = x.body.whole()
		}
		if body != nil {
			rerr = io.EOF
		} else {
			n := 0
			for n < len(buf) {
				m, err := x.body.Read(buf[n:])
				n += m
				if err != nil {
					rerr = err
					break
				}
				if !x.body.ready() {
					break
				}
			}
			body = buf[:n]
		}
		if rerr != nil && rerr != io.EOF {
			p.log.Warn("proxy: upstream response body failed", "upstream", uc.up.name, "path", string(r.Path), "err", rerr)
			if first {
				uc.up.discard(uc)
				return writeError(c, w, http.StatusBadGateway, "upstream sent a malformed response")
			}
			err, reusable = rerr, false
			break
		}
		if first {
			c.SetStatus(status)
			for i := 0; i < len(x.fields); i += 2 {
				hdr.Add(x.fields[i], x.fields[i+1])
			}
			hdr.Add("Via", viaValue)
		}
		if len(body) > 0 {
			if _, werr := w.Write(body); werr != nil {
				err, reusable = werr, false
				break
			}
		}
		if rerr == io.EOF {
			for _, f := range x.body.trailer {
				if !httpgrammar.IsHopByHop(f.name) && !isFramingField(f.name) {
					hdr.AddTrailer(string(f.name), string(f.value))
				}
			}
			break
		}
		if werr := w.Flush(); werr != nil {
			err, reusable = werr, false
			break
		}
	}
	if watch.stop() {
		reusable = false
	}
	// Nothing refers to the read buffer any more (the fields and trailer
	// are copied): the exchange keeps it for its next request.
	if x.readBuf == nil && len(uc.buf) == readBufSize && cap(uc.buf) == readBufSize {
		x.readBuf, uc.buf = uc.buf, nil
	}
	if extra := uc.w - uc.r; extra > 0 && reusable && x.body.done {
		// More came than the response's framing holds: RFC 9112 §6.3
		// lets a client drop it, never take it for a response. The
		// connection goes; what it carries cannot be trusted.
		p.log.Warn("proxy: upstream sent more than its response", "upstream", uc.up.name, "bytes", extra)
		reusable = false
	}
	if reusable && x.body.mode != bodyClose && x.body.done {
		uc.up.put(uc)
	} else {
		uc.up.discard(uc)
	}
	return err
}

// tunnel passes a 101 (Switching Protocols) response in x on to the
// client and relays bytes both ways, unchanged, until either side closes
// its connection or the tunnel is idle for tunnelIdle; then both are
// closed.
func (p *Proxy) tunnel(c *pipe.Conn, w pipe.Writer, x *exchange, uc *upConn) error {
	h := &x.head
	var optBuf [maxConnectionOptions][]byte
	conn := responseOptions(optBuf[:0], h.fields)
	hdr := c.Header()
	for _, f := range h.fields {
		if !isHopByHop(f.name, conn) || httpgrammar.EqualFold(f.name, "upgrade") {
			hdr.Add(string(f.name), string(f.value))
		}
	}
	hdr.Add("Via", viaValue)
	client, early, err := c.Tunnel()
	if err != nil {
		uc.up.discard(uc)
		return writeError(c, w, http.StatusBadGateway, "could not switch protocols")
	}
	// What the upstream sent after its 101, and the client after its
	// request, go first.
	fromUp := uc.buf[uc.r:uc.w]
	t := &relay{idle: p.tunnelIdle, readOn: p.tunnelReadOn}
	t.last.Store(time.Now().UnixNano())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := client.Write(fromUp); err == nil {
			t.copy(client, uc.nc, uc.buf) // fromUp is sent: its buffer is free
		}
		client.Close()
		uc.nc.Close()
	}()
	if _, err := uc.nc.Write(early); err == nil {
		t.copy(uc.nc, client, x.scratch)
	}
	client.Close()
	uc.nc.Close()
	<-done
	uc.up.discard(uc)
	return nil
}

// relay is a tunnel's two copies, which share its idle bound.
type relay struct {
	idle time.Duration // 0: no bound
	last atomic.Int64  // when a byte last crossed, either way: unix nanoseconds

	readOn func(src net.Conn) // Proxy.tunnelReadOn
}

// copy copies from src to dst through buf until src ends or fails, dst
// fails, or nothing crossed the tunnel either way for t.idle: the
// read deadline of src is the idle bound from the last byte that
// crossed, moved on when it expires if the other way was busy.
func (t *relay) copy(dst, src net.Conn, buf []byte) {
	if t.idle > 0 {
		src.SetReadDeadline(time.Now().Add(t.idle))
	}
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if t.idle > 0 {
				t.last.Store(time.Now().UnixNano())
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if t.idle > 0 && isTimeout(err) {
				if until := time.Unix(0, t.last.Load()).Add(t.idle); time.Until(until) > 0 {
					src.SetReadDeadline(until)
					if t.readOn != nil {
						t.readOn(src)
					}
					continue
				}
			}
			return
		}
	}
}

// passInterim passes the interim (1xx) response head in x on to the
// client with its end-to-end fields (RFC 9110 §15.2: a proxy forwards
// the 1xx responses it did not ask for).
func passInterim(c *pipe.Conn, x *exchange) {
	x.interim = true
	h := &x.head
	var optBuf [maxConnectionOptions][]byte
	conn := responseOptions(optBuf[:0], h.fields)
	x.fields = x.fields[:0]
	for _, f := range h.fields {
		if !isHopByHop(f.name, conn) {
			x.fields = append(x.fields, string(f.name), string(f.value))
		}
	}
	c.WriteInterim(h.status, x.fields...)
}

// isFramingField reports whether a trailer field is one a sender must not
// put in a trailer section (RFC 9110 §6.5.1): framing, routing, and the
// fields read before the body.
func isFramingField(name []byte) bool {
	for _, n := range [...]string{"Content-Length", "Host", "Content-Type", "Content-Encoding", "Content-Range", "Trailer", "Authorization", "Set-Cookie", "Cache-Control", "Expect", "Max-Forwards", "TE"} {
		if httpgrammar.EqualFold(name, n) {
			return true
		}
	}
	return false
}

// goneWatch ends the wait for an upstream's body when the client goes.
type goneWatch struct {
	quit, exited chan struct{}
	fired        bool
}

// watchGone starts a goneWatch over uc for the gone channel of a
// request; nil when the server cannot tell (gone is nil).
func watchGone(gone <-chan struct{}, uc *upConn) *goneWatch {
	if gone == nil {
		return nil
	}
	w := &goneWatch{quit: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(w.exited)
		select {
		case <-gone:
			w.fired = true
			uc.nc.SetReadDeadline(time.Unix(1, 0))
		case <-w.quit:
		}
	}()
	return w
}

// stop ends the watch and reports whether the client went (the
// connection then has a deadline in the past and is not reused).
func (w *goneWatch) stop() bool {
	if w == nil {
		return false
	}
	close(w.quit)
	<-w.exited
	return w.fired
}

// writeError answers the client with status and a short message, before
// anything of a response was written.
func writeError(c *pipe.Conn, w pipe.Writer, status int, msg string) error {
	c.SetStatus(status)
	h := c.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.SetContentLength(-1)
	_, err := io.WriteString(w, strconv.Itoa(status)+" "+http.StatusText(status)+": "+msg+"\n")
	return err
}
