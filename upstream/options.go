package upstream

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluice-server/sluice/httpgrammar"
)

// Defaults of Options.
const (
	DefaultRetries        = 2
	DefaultQueue          = 100
	DefaultQueueTimeout   = 5 * time.Second
	DefaultMaxIdleConns   = 256
	DefaultConnectTimeout = 5 * time.Second
	DefaultIdleTimeout    = 60 * time.Second
)

// MaxHosts is how many upstreams a Group may have.
const MaxHosts = 64

// Options are the settings every transport over this package shares, as
// a config file sets them: the upstreams, how one is picked, how many
// connections each may have and how long they are kept, the queue,
// retries and health. A transport embeds it inline in its own options
// (the yaml keys are then its component's), and turns it into a Group
// with Settings and NewGroup. The zero value of every field but
// Upstreams is a valid default.
type Options struct {
	// Upstreams are the servers, at least one, at most 64, in the forms
	// the transport accepts (the proxy's: http://host:port or
	// unix:/path; FastCGI's: host:port, tcp://host:port or unix:/path),
	// or names whose DNS records give them, looked up again as the
	// records expire: dns+SCHEME://name:port for the addresses of its A
	// and AAAA records, srv+SCHEME://_service._proto.name for the
	// targets and ports of its SRV records (SCHEME: http or https for
	// the proxy, tcp for FastCGI). A host may be followed by its weight
	// and by drain, as nginx writes them: "http://10.0.0.1:8080 weight=3"
	// (1 to 100, default 1) takes three times the requests of a host of
	// weight 1; "… drain" is listed but takes no new request.
	Upstreams []string `yaml:"upstreams"`

	// Name names the upstreams as a live set, whose hosts can be added,
	// removed, drained and weighted without a reload (LookupSet): in a
	// config file a token such as api, unique in the file. Without one,
	// a config file's entry is named after its route: the route's (or
	// its site's first) host and its first match ("example.com/api/",
	// "/api/"), then "#2", "#3"… for later routes with the same. Empty
	// outside a config file: not registered.
	Name string `yaml:"name"`

	// Policy chooses an upstream per request: round_robin (the default),
	// least_conn, random_two, ip_hash or hash (HashKey).
	Policy string `yaml:"policy"`

	// HashKey is what policy hash hashes: "header:NAME", "cookie:NAME"
	// or "path" (the canonical path).
	HashKey string `yaml:"hash_key"`

	// Retries is how many other upstreams a request may be tried on
	// after a failure (default 2; -1 for none); when a request may be
	// sent again is the transport's to say.
	Retries int `yaml:"retries"`

	// MaxConns bounds the connections open to each upstream (0: no
	// bound). A request finding every upstream it may use at its bound
	// waits in the queue.
	MaxConns int `yaml:"max_conns"`

	// Queue bounds the requests waiting, under MaxConns, for a
	// connection (default 100, across the upstreams; -1: none wait). A
	// request finding it full, or still waiting after QueueTimeout, is
	// answered 503 with Retry-After: 1.
	Queue int `yaml:"queue"`

	// QueueTimeout bounds a request's wait in the queue (default 5s).
	QueueTimeout time.Duration `yaml:"queue_timeout"`

	// MaxIdleConns bounds the idle keep-alive connections kept per
	// upstream (default 256; -1 keeps none).
	MaxIdleConns int `yaml:"max_idle_conns"`

	// ConnectTimeout bounds connecting to an upstream (default 5s).
	ConnectTimeout time.Duration `yaml:"connect_timeout"`

	// IdleTimeout is how long an idle keep-alive connection is kept for
	// reuse (default 60s).
	IdleTimeout time.Duration `yaml:"idle_timeout"`

	// Passive configures passive health checks (see PassiveHealth), on
	// by default.
	Passive PassiveHealth `yaml:"passive"`

	// Health configures active health checks (see Health), off without
	// a path.
	Health Health `yaml:"health"`

	// Resolver is the DNS server (host or host:port, port 53 if absent)
	// that the upstreams from DNS (dns+SCHEME://name:port,
	// srv+SCHEME://_service._proto.name) are looked up on; empty: the
	// nameservers of /etc/resolv.conf.
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
}

// Settings are Options checked, with the defaults filled in: what a
// transport builds its Group from and reads per request.
type Settings struct {
	Name           string // Options.Name: the live set's, or none
	Balancer       *Balancer
	Config         Config // for NewGroup; the transport may set ParseAddr
	Retries        int
	ConnectTimeout time.Duration
	Passive        PassiveHealth
	Health         Health
}

// Settings checks o and returns its Settings, or an error starting with
// component and ": " that names the config key at fault ("proxy: policy
// \"x\": want round_robin, …"). The upstreams' spelling is checked by
// NewGroup, which knows the transport's forms.
func (o *Options) Settings(component string) (Settings, error) {
	var s Settings
	if len(o.Upstreams) == 0 {
		return s, errors.New(component + ": no upstreams")
	}
	if len(o.Upstreams) > MaxHosts {
		return s, fmt.Errorf("%s: more than %d upstreams", component, MaxHosts)
	}
	for _, r := range o.Name {
		if r < ' ' || r == 0x7f {
			return s, fmt.Errorf("%s: name %q has a control character: write a name such as api", component, o.Name)
		}
	}
	s.Name = o.Name
	var err error
	if s.Balancer, err = NewBalancer(o.Policy, o.HashKey); err != nil {
		return s, fmt.Errorf("%s: %w", component, err)
	}
	s.Retries = OrDefault(o.Retries, DefaultRetries)
	s.ConnectTimeout = OrDefault(o.ConnectTimeout, DefaultConnectTimeout)
	s.Passive = PassiveHealth{
		Failures: OrDefault(o.Passive.Failures, DefaultPassiveFailures),
		Window:   OrDefault(o.Passive.Window, DefaultPassiveWindow),
		DownFor:  OrDefault(o.Passive.DownFor, DefaultPassiveDownFor),
	}
	s.Health = Health{
		Path:     o.Health.Path,
		Interval: OrDefault(o.Health.Interval, DefaultHealthInterval),
		Timeout:  OrDefault(o.Health.Timeout, DefaultHealthTimeout),
		Expect:   o.Health.Expect,
		Rise:     max(OrDefault(o.Health.Rise, DefaultHealthRise), 1),
		Fall:     max(OrDefault(o.Health.Fall, DefaultHealthFall), 1),
	}
	if hp := s.Health.Path; hp != "" && (hp[0] != '/' || !validTarget(hp)) {
		return s, fmt.Errorf("%s: health path %q: want an origin-form path such as /healthz", component, hp)
	}
	if e := s.Health.Expect; e != 0 && (e < 100 || e > 999) {
		return s, fmt.Errorf("%s: health expect %d: want a status code", component, e)
	}
	dns := slices.ContainsFunc(o.Upstreams, IsDNS)
	switch {
	case !dns && (o.Resolver != "" || o.DNSMinInterval != 0 || o.DNSMaxInterval != 0):
		return s, fmt.Errorf("%s: resolver, dns_min_interval and dns_max_interval apply to upstreams from DNS, written dns+http://name:port or srv+http://_service._proto.name: drop them, or write such upstreams", component)
	case o.DNSMinInterval < 0 || o.DNSMaxInterval < 0:
		return s, fmt.Errorf("%s: dns_min_interval and dns_max_interval: want a duration such as 5s", component)
	case o.DNSMinInterval > 0 && o.DNSMaxInterval > 0 && o.DNSMinInterval > o.DNSMaxInterval:
		return s, fmt.Errorf("%s: dns_min_interval %v is more than dns_max_interval %v: want the minimum below the maximum", component, o.DNSMinInterval, o.DNSMaxInterval)
	}
	if o.Resolver != "" {
		if _, err := resolverAddr(o.Resolver); err != nil {
			return s, fmt.Errorf("%s: %w", component, err)
		}
	}
	s.Config = Config{
		DNS:          DNSConfig{Resolver: o.Resolver, MinInterval: o.DNSMinInterval, MaxInterval: o.DNSMaxInterval},
		Name:         o.Name,
		MaxConns:     o.MaxConns,
		MaxIdleConns: OrDefault(o.MaxIdleConns, DefaultMaxIdleConns),
		IdleTimeout:  OrDefault(o.IdleTimeout, DefaultIdleTimeout),
		Queue:        OrDefault(o.Queue, DefaultQueue),
		QueueTimeout: OrDefault(o.QueueTimeout, DefaultQueueTimeout),
		Health:       s.Health,
		Passive:      s.Passive,
	}
	return s, nil
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

// OrDefault returns v, or def when v is zero; a negative v is taken as
// an explicit zero. It is how every option of Options reads.
func OrDefault[T int | int64 | time.Duration](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}
