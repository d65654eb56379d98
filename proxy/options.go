package proxy

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/sluice-server/sluice/clientaddr"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/upstream"
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

// The balancing policies of Options.Policy (see upstream.Balancer).
const (
	RoundRobin = upstream.RoundRobin // each upstream in turn
	LeastConn  = upstream.LeastConn  // the one with the fewest requests in flight
	RandomTwo  = upstream.RandomTwo  // of two chosen at random, the less busy
	IPHash     = upstream.IPHash     // by the client's address
	Hash       = upstream.Hash       // by a header, a cookie or the path (HashKey)
)

// PassiveHealth configures Options.Passive: see upstream.PassiveHealth.
type PassiveHealth = upstream.PassiveHealth

// Health configures Options.Health: see upstream.Health.
type Health = upstream.Health

// Defaults of PassiveHealth and Health.
const (
	DefaultPassiveFailures = upstream.DefaultPassiveFailures
	DefaultPassiveWindow   = upstream.DefaultPassiveWindow
	DefaultPassiveDownFor  = upstream.DefaultPassiveDownFor
	DefaultHealthInterval  = upstream.DefaultHealthInterval
	DefaultHealthTimeout   = upstream.DefaultHealthTimeout
	DefaultHealthRise      = upstream.DefaultHealthRise
	DefaultHealthFall      = upstream.DefaultHealthFall
)

// Defaults of Options.Queue and Options.QueueTimeout.
const (
	DefaultQueue        = upstream.DefaultQueue
	DefaultQueueTimeout = upstream.DefaultQueueTimeout
)

// Defaults of Options.
const (
	DefaultConnectTimeout        = upstream.DefaultConnectTimeout
	DefaultResponseHeaderTimeout = 60 * time.Second
	DefaultIdleTimeout           = upstream.DefaultIdleTimeout
	DefaultMaxIdleConns          = upstream.DefaultMaxIdleConns
	DefaultRetries               = upstream.DefaultRetries
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
	// an http URL of a host and port (port 80 if absent), or an https
	// one (port 443 if absent: TLS, see Transport), without path or
	// query, or "unix:" and the path of a Unix socket; or a name whose
	// DNS records give them, looked up again as the records expire:
	// dns+http://name:port (or dns+https://) for the addresses of its A
	// and AAAA records, srv+http://_service._proto.name (or srv+https://)
	// for the targets, ports and weights of its SRV records. A host may
	// be followed by its weight and by drain, as nginx writes them:
	// "http://10.0.0.1:8080 weight=3" (1 to 100, default 1) takes three
	// times the requests of a host of weight 1; "… drain" is listed but
	// takes no new request.
	Upstreams []string `yaml:"upstreams"`

	// Name names the upstreams as a live set, whose hosts can be added,
	// removed, drained and weighted without a reload (upstream.LookupSet):
	// in a config file a token such as api, unique in the file. Without
	// one, a config file's entry is named after its route: the route's
	// (or its site's first) host and its first match
	// ("example.com/api/", "/api/"), then "#2", "#3"… for later routes
	// with the same. Empty outside a config file: not registered.
	Name string `yaml:"name"`

	// Transport is how requests reach the upstreams: http (HTTP/1.1, the
	// default for http:// and unix: upstreams), https (HTTP/1.1 over TLS,
	// the default for https:// ones), h2c (HTTP/2 without TLS, with prior
	// knowledge; http:// or unix: upstreams) or h2 (HTTP/2 over TLS, by
	// ALPN; https:// upstreams). HTTP/2 multiplexes requests on few
	// connections (MaxStreams each), passes trailers both ways and
	// streams both bodies at once: what gRPC needs.
	Transport string `yaml:"transport"`

	// TLS configures TLS to the upstreams (transports https and h2):
	// verified against the system's roots by default; ca, a private CA's
	// PEM file; cert and key, a client certificate; server_name, the name
	// sent and verified instead of the URL's host; insecure_skip_verify,
	// no verification at all (sluice check warns).
	TLS TLSOptions `yaml:"tls"`

	// MaxStreams bounds the requests in flight on one HTTP/2 connection
	// (transports h2c and h2; default 100), and the upstream's
	// SETTINGS_MAX_CONCURRENT_STREAMS bounds them too: a request finding
	// every connection at its bound opens another (up to MaxConns), or
	// waits for a stream to end, in turn, for at most QueueTimeout.
	MaxStreams int `yaml:"max_streams"`

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
	// else's are replaced, and the other fields by which proxies name the
	// client or the original URL (X-Real-IP, every X-Forwarded-*,
	// X-Original-URL…) dropped. ip_hash reads the client address through
	// them.
	TrustedProxies []string `yaml:"trusted_proxies"`

	// ClientIPHeader is the header ip_hash reads the client address from
	// when the peer is trusted ("X-Forwarded-For" by default).
	ClientIPHeader string `yaml:"client_ip_header"`

	// MaxHeaderBytes bounds an upstream response's head, and its
	// trailer section (default 32 KiB); a larger one is answered 502.
	MaxHeaderBytes int `yaml:"max_header_bytes"`

	// MaxHeaderCount bounds the fields of an upstream response's head
	// (default 256); more are answered 502. It bounds the trailer
	// section's fields too, over HTTP/1.1 and HTTP/2 alike; more cut the
	// response, as a malformed body does.
	MaxHeaderCount int `yaml:"max_header_count"`

	// Passive configures passive health checks, on by default: failures
	// (default 3; -1 turns them off) failed requests to an upstream
	// within window (default 10s) leave it out for down_for (default
	// 10s). A failure is a connection refused or timed out, or a
	// response head late, malformed or missing, or a status fail_status
	// lists; not max_conns, nor a request whose client went away while
	// waiting, nor a malformed head answering a request with a body or
	// with a percent-encoded control byte (%00-%1F, %7F) in its target
	// or fields, which the application may have reflected. The last
	// upstream up is never left out for failed requests: a proxy of one
	// upstream keeps it (as nginx does), and one whose upstreams were
	// all left out still tries them; only the active checks take it
	// out.
	Passive PassiveHealth `yaml:"passive"`

	// Health configures active health checks, off without a path: every
	// interval (default 5s) each upstream is sent GET path on a
	// connection of its own; a check fails when it cannot connect,
	// exceeds timeout (default 2s), or answers another status than
	// expect (default any 2xx). fall (default 3) failures in a row mark
	// the upstream down, rise (default 2) passes in a row up again.
	Health Health `yaml:"health"`

	// Resolver is the DNS server (host or host:port, port 53 if absent)
	// that the upstreams from DNS (dns+http://name:port,
	// srv+http://_service._proto.name, and their https forms) are
	// looked up on; empty: the nameservers of /etc/resolv.conf.
	Resolver string `yaml:"resolver"`

	// DNSMinInterval is the least time between two lookups of an
	// upstream from DNS (default 1s): it is looked up again when its
	// records' TTL runs out, but not sooner; after a failed lookup,
	// which keeps the hosts of the last good one, the wait doubles from
	// it.
	DNSMinInterval time.Duration `yaml:"dns_min_interval"`

	// DNSMaxInterval is the most time between two lookups of an
	// upstream from DNS (default 1m), however long its records' TTL.
	DNSMaxInterval time.Duration `yaml:"dns_max_interval"`

	// Logger receives upstream failures; nil is slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// upstreamOptions returns the options opts shares with every transport
// over package upstream, which checks them and fills in their defaults.
func (opts *Options) upstreamOptions() upstream.Options {
	return upstream.Options{
		Upstreams:      opts.Upstreams,
		Name:           opts.Name,
		Policy:         opts.Policy,
		HashKey:        opts.HashKey,
		Retries:        opts.Retries,
		MaxConns:       opts.MaxConns,
		Queue:          opts.Queue,
		QueueTimeout:   opts.QueueTimeout,
		MaxIdleConns:   opts.MaxIdleConns,
		ConnectTimeout: opts.ConnectTimeout,
		IdleTimeout:    opts.IdleTimeout,
		Passive:        opts.Passive,
		Health:         opts.Health,
		Resolver:       opts.Resolver,
		DNSMinInterval: opts.DNSMinInterval,
		DNSMaxInterval: opts.DNSMaxInterval,
	}
}

// New returns the Proxy opts describe, or an error naming the option
// that is wrong.
func New(opts Options) (*Proxy, error) {
	uo := opts.upstreamOptions()
	set, err := uo.Settings("proxy")
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		retries:     set.Retries,
		connectTO:   set.ConnectTimeout,
		headerTO:    orDefault(opts.ResponseHeaderTimeout, DefaultResponseHeaderTimeout),
		tunnelIdle:  orDefault(opts.TunnelIdleTimeout, DefaultTunnelIdleTimeout),
		stripPrefix: strings.TrimSuffix(opts.StripPrefix, "/"),
		host:        opts.Host,
		forwarded:   opts.Forwarded,
		maxHead:     orDefault(opts.MaxHeaderBytes, DefaultMaxHeaderBytes),
		maxFields:   orDefault(opts.MaxHeaderCount, DefaultMaxHeaderCount),
		log:         opts.Logger,
		bal:         set.Balancer,
		passive:     set.Passive,
		health:      set.Health,
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
	if p.resolver, err = clientaddr.New(opts.TrustedProxies, opts.ClientIPHeader); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	for _, st := range opts.FailStatus {
		if st < 400 || st > 599 {
			return nil, fmt.Errorf("proxy: fail_status %d: want an error status, 400 to 599", st)
		}
	}
	p.failStatus = slices.Clone(opts.FailStatus)
	set.Config.Log = p.log
	p.grp, err = upstream.NewGroup(opts.Upstreams, p.bal, set.Config, (*upConn).put)
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p.queue = p.grp.Queue()
	if err := p.setTransport(&opts, set.Config); err != nil {
		p.grp.Close()
		return nil, err
	}
	if set.Name != "" {
		p.grp.Register(set.Name, "proxy", p.log)
	}
	p.grp.Start()
	if p.health.Path != "" {
		p.grp.StartChecks(p.health.Interval, p.check, p.reportCheck)
	}
	return p, nil
}

// DefaultMaxStreams is the default of Options.MaxStreams.
const DefaultMaxStreams = 100

// setTransport resolves opts.Transport against the upstreams' schemes,
// and readies its TLS configurations and HTTP/2 client, and the hooks by
// which a host added to the set later (see upstream.LiveSet) is checked
// and readied the same way.
func (p *Proxy) setTransport(opts *Options, cfg upstream.Config) error {
	// By the upstreams as written: those from DNS may give no host yet.
	tlsHosts := 0
	for _, name := range opts.Upstreams {
		if strings.HasPrefix(strings.TrimPrefix(strings.TrimPrefix(name, "dns+"), "srv+"), "https://") {
			tlsHosts++
		}
	}
	t := opts.Transport
	switch {
	case t == "" && tlsHosts == 0:
		t = TransportHTTP
	case t == "" && tlsHosts == len(opts.Upstreams):
		t = TransportHTTPS
	case t == "":
		return errors.New("proxy: upstreams mix https:// and http:// (or unix:): write every one with the same scheme")
	}
	switch t {
	case TransportHTTP, TransportH2C:
	case TransportHTTPS, TransportH2:
	default:
		return fmt.Errorf("proxy: transport %q: want http, https, h2c or h2", opts.Transport)
	}
	p.transport = t
	wantTLS := p.wantTLS()
	if !wantTLS && opts.TLS.set() {
		return fmt.Errorf("proxy: tls options apply to TLS upstreams: write https:// upstreams (transport https or h2), or drop tls")
	}
	if opts.MaxStreams != 0 && t != TransportH2 && t != TransportH2C {
		return fmt.Errorf("proxy: max_streams applies to HTTP/2 upstreams: set transport h2c or h2, or drop max_streams")
	}
	if opts.TLS.InsecureSkipVerify {
		p.log.Warn("proxy: tls insecure_skip_verify: the upstreams' certificates are not verified, so anyone on the way can read and change the traffic: name the CA that signed them in tls.ca instead")
	}
	if wantTLS {
		proto := "http/1.1"
		if t == TransportH2 {
			proto = "h2"
		}
		base, err := opts.TLS.tlsConfig(proto)
		if err != nil {
			return err
		}
		p.tlsBase, p.tlsOpts = base, opts.TLS
	}
	if t == TransportH2 || t == TransportH2C {
		p.h2 = newH2Transport(p, max(orDefault(opts.MaxStreams, DefaultMaxStreams), 1), cfg)
	}
	if err := p.grp.SetHooks(upstream.Hooks[*upConn]{Add: p.addHost, Remove: p.removeHost}); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	return nil
}

// wantTLS reports whether p's transport speaks TLS.
func (p *Proxy) wantTLS() bool { return p.transport == TransportHTTPS || p.transport == TransportH2 }

// hostExt is what the proxy keeps for each upstream (its Ext).
type hostExt struct {
	tls *tls.Config // for https and h2; nil for plain transports
	h2  *h2Host     // for h2c and h2; nil for HTTP/1.1
}

// addHost checks that p's transport can serve h, and readies its TLS
// configuration and HTTP/2 connections: the upstream.Hooks' Add, for
// the upstreams configured and those added to the set later.
func (p *Proxy) addHost(h *host) error {
	t, wantTLS := p.transport, p.wantTLS()
	switch {
	case wantTLS && !h.TLS && h.Network == "unix":
		return fmt.Errorf("transport %s: upstream %q: TLS over a Unix socket is not supported: use transport %s", t, h.Name, map[bool]string{true: TransportH2C, false: TransportHTTP}[t == TransportH2])
	case wantTLS && !h.TLS:
		return fmt.Errorf("transport %s: upstream %q: write https://%s (TLS)", t, h.Name, h.Authority)
	case !wantTLS && h.TLS:
		return fmt.Errorf("transport %s: upstream %q is https: write http://%s, or use transport %s for TLS", t, h.Name, h.Authority, map[bool]string{true: TransportH2, false: TransportHTTPS}[t == TransportH2C])
	}
	ext := &hostExt{}
	if wantTLS {
		// The server name is the host's as written, or as looked up in
		// DNS (its Authority), not the address it resolved to.
		name := h.Addr
		if _, _, err := net.SplitHostPort(h.Authority); err == nil {
			name = h.Authority
		}
		ext.tls = p.tlsOpts.hostConfig(p.tlsBase, name)
	}
	h.Ext = ext
	if p.h2 != nil {
		ext.h2 = p.h2.newHost(h)
	}
	return nil
}

// removeHost lets go of an upstream that left the set: its HTTP/2
// connections close once their streams end (its HTTP/1.1 ones are the
// pool's, which closes them).
func (p *Proxy) removeHost(h *host) {
	if ext, ok := h.Ext.(*hostExt); ok && ext.h2 != nil {
		ext.h2.leave()
	}
}

// orDefault returns v, or def when v is zero; a negative v is taken as
// an explicit zero.
func orDefault[T int | time.Duration](v, def T) T { return upstream.OrDefault(v, def) }

func validHostValue(h string) bool {
	for i := range len(h) {
		c := h[i]
		if !httpgrammar.IsTokenChar(c) && c != ':' && c != '[' && c != ']' {
			return false
		}
	}
	return h != ""
}
