package upstream

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/engine"
)

// Config configures a Group's hosts. The zero value bounds nothing,
// keeps no idle connection and has no queue.
type Config struct {
	// MaxConns bounds the connections open to each host; 0: no bound.
	MaxConns int
	// MaxIdleConns bounds the idle connections kept per host.
	MaxIdleConns int
	// IdleTimeout is how long an idle connection is kept; 0: no bound.
	IdleTimeout time.Duration
	// Queue bounds the requests waiting, under MaxConns, for a
	// connection; 0 (or no MaxConns): no queue, Group.Queue is nil.
	Queue int
	// QueueTimeout bounds one request's wait in the queue.
	QueueTimeout time.Duration
	// Health gives the Rise and Fall of the active checks' verdicts
	// (StartChecks).
	Health Health
	// Passive says when the failures Attempts counts (Failed,
	// Rejected) mark a host down; its zero value never does.
	Passive PassiveHealth
	// ParseAddr, when set, reads each host's name instead of the HTTP
	// forms ("http://host:port", "unix:/path"): it returns the network
	// to dial ("tcp" or "unix"), the address, and the authority a
	// request naming the host carries, or an error telling the forms it
	// accepts. A transport with other spellings (FastCGI's host:port)
	// sets it.
	ParseAddr func(name string) (network, addr, authority string, err error)
	// DNS configures the lookups of the upstreams from DNS (dns+ and
	// srv+ names).
	DNS DNSConfig
	// Log receives the changes of the hosts from DNS and the failed
	// lookups; nil is slog.Default().
	Log *slog.Logger
	// Name is the name of the set (Options.Name), for those log lines.
	Name string
}

// Group is the upstreams a transport serves requests from: its hosts
// (Hosts), each with its pool of connections of the transport's type C,
// the Balancer that picks among them, the Queue of requests waiting at
// max_conns, and the hosts' health, passive (Host.Failed) and active
// (StartChecks). A host's health is shared by every Group naming it, as
// long as one does, so that it carries over a config reload that builds
// the new Group before it closes the old.
//
// The hosts may change while the Group serves (Replace, Patch, and the
// LiveSet a Group registered under a name hands out): each change
// publishes a new immutable set of hosts, which a request takes once
// (Begin) and keeps, so that picking a host takes no lock and allocates
// nothing. A host that stays keeps its *Host, with its pool, requests in
// flight and health; one that leaves takes no new request, finishes
// those it has and closes its idle connections.
//
// A Group is safe for concurrent use; Close releases it.
type Group[C Conn] struct {
	set atomic.Pointer[hostSet[C]]

	bal     *Balancer
	queue   *Queue[C]
	health  Health
	passive PassiveHealth
	cfg     Config

	mu     sync.Mutex // serialises changes of the set
	hooks  Hooks[C]
	live   *LiveSet // the name it is registered under; nil if none
	closed bool

	log     *slog.Logger
	static  []HostSpec   // the hosts named, not from DNS
	dns     []*dnsSource // the upstreams from DNS; nil without
	dnsMu   sync.Mutex   // serialises their changes
	dnsStop context.CancelFunc
	dnsDone sync.WaitGroup

	closeOnce sync.Once
	stopCheck chan struct{} // closed by Close; nil without active checks
	checkDone chan struct{}
}

// Hooks are a transport's part in a change of its Group's hosts.
type Hooks[C Conn] struct {
	// Add readies a host before it takes a request: it checks that the
	// transport can serve it (an http:// host for an HTTPS transport is
	// refused, saying what to write), and sets its Ext. An error keeps
	// the change from happening.
	Add func(h *Host[C]) error
	// Remove is told of a host that left the set, once it takes no new
	// request; its requests in flight may still run.
	Remove func(h *Host[C])
}

// hostSet is one immutable version of a Group's hosts: what a request
// picks from.
type hostSet[C Conn] struct {
	slots    [MaxHosts]*Host[C] // by Index; nil where free
	weights  [MaxHosts]int32    // by Index
	n        int                // the highest slot used, plus one
	order    []*Host[C]         // as listed
	drain    uint64             // slots of the hosts draining
	pickable uint64             // slots of the hosts that take new requests
	uniform  bool               // every pickable host has the same weight
	rr       []uint8            // round_robin's order of slots, smooth and weighted
}

// bit returns the mask of slot i.
func bit(i int) uint64 { return 1 << uint(i) }

// NewGroup returns the Group of the hosts named, one to 64, each
// "http://host:port" (port 80 if absent) or "unix:/path", of weight 1,
// or a name whose records give hosts (dns+http://name:port,
// srv+http://_service._proto.name: see DNSConfig), picked among by bal,
// under cfg. put is how the transport puts back a connection after a
// clean exchange (see Host.HandOff and Host.Keep): the queue calls it for
// a connection granted to a request that gave up meanwhile.
//
// The names from DNS are looked up once before NewGroup returns; one
// whose lookup fails is logged and tried again once the Group runs
// (Start), and until then gives no host: a Group of such names alone may
// start with none, and answers ErrNoUpstream.
func NewGroup[C Conn](names []string, bal *Balancer, cfg Config, put func(C)) (*Group[C], error) {
	if len(names) == 0 || len(names) > MaxHosts {
		return nil, fmt.Errorf("upstream: %d hosts, want 1 to %d", len(names), MaxHosts)
	}
	g := &Group[C]{bal: bal, health: cfg.Health, passive: cfg.Passive, cfg: cfg, log: cfg.Log}
	if g.log == nil {
		g.log = slog.Default()
	}
	if cfg.MaxConns > 0 && cfg.Queue > 0 {
		g.queue = newQueue(cfg.Queue, cfg.QueueTimeout, put)
	}
	g.set.Store(&hostSet[C]{})
	for _, s := range names {
		if !IsDNS(s) {
			spec, err := parseSpec(s)
			if err != nil {
				return nil, err
			}
			g.static = append(g.static, spec)
			continue
		}
		if strings.ContainsAny(s, " \t") {
			return nil, fmt.Errorf("upstream %q: weight and drain apply to a host, not to a name looked up in DNS (SRV records carry weights): write the name alone", s)
		}
		t, err := parseDNSTarget(s, func(name string) error { _, err := g.newHost(name, 0, ""); return err })
		if err != nil {
			return nil, err
		}
		g.dns = append(g.dns, &dnsSource{target: t})
	}
	if len(g.dns) == 0 {
		if _, err := g.change(true, g.static, nil); err != nil {
			return nil, err
		}
		return g, nil
	}
	if err := g.startDNS(); err != nil {
		return nil, err
	}
	return g, nil
}

// Start starts what runs in the background while the Group serves: the
// lookups again of its upstreams from DNS, until Close. The transport
// calls it once it is ready for hosts to be added (after SetHooks).
func (g *Group[C]) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	g.dnsStop = cancel
	for _, src := range g.dns {
		g.dnsDone.Add(1)
		go g.follow(ctx, src)
	}
}

// parseSpec reads a host as a config lists it: its name, then, after
// white space, weight=N (1 to 100) and drain, as nginx's server lines
// write them ("http://10.0.0.1:8080 weight=3").
func parseSpec(s string) (HostSpec, error) {
	f := strings.Fields(s)
	if len(f) <= 1 {
		return HostSpec{Name: s}, nil // misspellings are newHost's to tell
	}
	spec := HostSpec{Name: f[0]}
	for _, opt := range f[1:] {
		switch w, ok := strings.CutPrefix(opt, "weight="); {
		case opt == "drain":
			spec.Drain = true
		case ok:
			n, err := strconv.Atoi(w)
			if err != nil || n < 1 || n > MaxWeight {
				return spec, fmt.Errorf("upstream %q: %s: want weight=N, N from 1 to %d", s, opt, MaxWeight)
			}
			spec.Weight = n
		default:
			return spec, fmt.Errorf("upstream %q: %q: after the host, write weight=N (1 to %d) or drain", s, opt, MaxWeight)
		}
	}
	return spec, nil
}

// newHost returns the Host called name in slot i, not yet in the set;
// authority, if set, is its Authority (a host from DNS: the name looked
// up).
func (g *Group[C]) newHost(name string, i int, authority string) (*Host[C], error) {
	var h *Host[C]
	if g.cfg.ParseAddr != nil {
		network, addr, authority, err := g.cfg.ParseAddr(name)
		if err != nil {
			return nil, err
		}
		h = &Host[C]{Name: name, Network: network, Addr: addr, Authority: authority}
	} else {
		var err error
		if h, err = parseHost[C](name); err != nil {
			return nil, err
		}
	}
	if authority != "" {
		h.Authority = authority
	}
	h.maxConns, h.maxIdle, h.idleTime = g.cfg.MaxConns, max(g.cfg.MaxIdleConns, 0), g.cfg.IdleTimeout
	h.index, h.queue = i, g.queue
	return h, nil
}

// SetHooks sets the transport's hooks, and runs h.Add on every host
// already in the set; call it once, after NewGroup and before the Group
// serves. It returns the first error of Add.
func (g *Group[C]) SetHooks(h Hooks[C]) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hooks = h
	if h.Add == nil {
		return nil
	}
	for _, host := range g.set.Load().order {
		if err := h.Add(host); err != nil {
			return err
		}
	}
	return nil
}

// Hosts returns the hosts of the set now, in the order listed: a shared
// slice, read-only. A change of the set (Replace, Patch) does not
// change a slice returned before.
func (g *Group[C]) Hosts() []*Host[C] { return g.set.Load().order }

// Pick returns the host of the set now for r, skipping those whose bit
// (by Index) is set in tried and those draining, or nil when every one
// is skipped. client is the client's address, for IPHash.
func (g *Group[C]) Pick(tried uint64, r *engine.Request, client []byte) *Host[C] {
	s := g.set.Load()
	if i := pick(g.bal, s, tried|^s.pickable, r, client); i >= 0 {
		return s.slots[i]
	}
	return nil
}

// Policy returns the balancing policy (see Balancer.Policy).
func (g *Group[C]) Policy() string { return g.bal.policy }

// Queue returns the queue of requests waiting at max_conns; nil (whose
// methods do nothing) without one.
func (g *Group[C]) Queue() *Queue[C] { return g.queue }

// StartChecks runs the active health checks until Close: every interval
// each host of the set then is checked by check, at once for every
// host, and its health updated by the result under the Group's Health
// (Rise and Fall); report is told of each change, -1 down, +1 up again.
// Call it once, at most.
func (g *Group[C]) StartChecks(interval time.Duration, check func(*Host[C]) bool, report func(h *Host[C], change int)) {
	g.stopCheck, g.checkDone = make(chan struct{}), make(chan struct{})
	go g.checker(interval, check, report, g.stopCheck, g.checkDone)
}

// checker runs the active health checks of g until stop is closed.
func (g *Group[C]) checker(interval time.Duration, check func(*Host[C]) bool, report func(*Host[C], int), stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(interval)
	defer t.Stop()
	var wg sync.WaitGroup
	for {
		for _, h := range g.Hosts() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok := check(h)
				if change := h.health.checked(ok, &g.health); change != 0 {
					report(h, change)
				}
			}()
		}
		wg.Wait()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// Close stops the active checks, takes the Group's set out of the
// registry of live sets (a newer Group under its name stays), and closes
// the idle connections; connections in use are closed as their requests
// end (Keep closes them). The hosts' health is kept for another Group
// naming them (the next config's, after a reload). Close may be called
// more than once.
func (g *Group[C]) Close() {
	g.closeOnce.Do(func() {
		if g.stopCheck != nil {
			close(g.stopCheck)
			<-g.checkDone
		}
		if g.dnsStop != nil {
			g.dnsStop()
			g.dnsDone.Wait()
		}
		g.mu.Lock()
		g.closed = true
		live := g.live
		hosts := g.set.Load().order
		g.mu.Unlock()
		if live != nil {
			unregister(live)
		}
		for _, h := range hosts {
			h.close()
			releaseHealth(h.Name)
		}
	})
}
