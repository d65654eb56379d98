package upstream

import (
	"errors"
	"fmt"
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
	// unix:/path; FastCGI's: host:port, tcp://host:port or unix:/path).
	Upstreams []string `yaml:"upstreams"`

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
}

// Settings are Options checked, with the defaults filled in: what a
// transport builds its Group from and reads per request.
type Settings struct {
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
	s.Config = Config{
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
