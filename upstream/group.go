package upstream

import (
	"fmt"
	"sync"
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
}

// Group is the upstreams a transport serves requests from: its Hosts,
// each with its pool of connections of the transport's type C, the
// Balancer that picks among them, the Queue of requests waiting at
// max_conns, and the hosts' health, passive (Host.Failed) and active
// (StartChecks). A host's health is shared by every Group naming it, as
// long as one does, so that it carries over a config reload that builds
// the new Group before it closes the old. A Group is safe for concurrent
// use; Close releases it.
type Group[C Conn] struct {
	// Hosts are the upstreams, in the order named; each one's Index is
	// its place here. Read-only.
	Hosts []*Host[C]

	bal     *Balancer
	queue   *Queue[C]
	health  Health
	passive PassiveHealth

	closeOnce sync.Once
	stopCheck chan struct{} // closed by Close; nil without active checks
	checkDone chan struct{}
}

// NewGroup returns the Group of the hosts named, one to 64, each
// "http://host:port" (port 80 if absent) or "unix:/path", picked among by
// bal, under cfg. put is how the transport puts back a connection after a
// clean exchange (see Host.HandOff and Host.Keep): the queue calls it for
// a connection granted to a request that gave up meanwhile.
func NewGroup[C Conn](names []string, bal *Balancer, cfg Config, put func(C)) (*Group[C], error) {
	if len(names) == 0 || len(names) > MaxHosts {
		return nil, fmt.Errorf("upstream: %d hosts, want 1 to %d", len(names), MaxHosts)
	}
	g := &Group[C]{bal: bal, health: cfg.Health, passive: cfg.Passive}
	if cfg.MaxConns > 0 && cfg.Queue > 0 {
		g.queue = newQueue(cfg.Queue, cfg.QueueTimeout, put)
	}
	for i, s := range names {
		var h *Host[C]
		if cfg.ParseAddr != nil {
			network, addr, authority, err := cfg.ParseAddr(s)
			if err != nil {
				return nil, err
			}
			h = &Host[C]{Name: s, Network: network, Addr: addr, Authority: authority}
		} else {
			var err error
			if h, err = parseHost[C](s); err != nil {
				return nil, err
			}
		}
		h.maxConns, h.maxIdle, h.idleTime = cfg.MaxConns, max(cfg.MaxIdleConns, 0), cfg.IdleTimeout
		h.index, h.queue = i, g.queue
		g.Hosts = append(g.Hosts, h)
	}
	for _, h := range g.Hosts {
		h.health = acquireHealth(h.Name)
	}
	return g, nil
}

// Pick returns the index in Hosts of the host for r, skipping those
// whose bit (by index) is set in tried, or -1 when every one was tried.
// client is the client's address, for IPHash.
func (g *Group[C]) Pick(tried uint64, r *engine.Request, client []byte) int {
	return pick(g.bal, g.Hosts, tried, r, client)
}

// Policy returns the balancing policy (see Balancer.Policy).
func (g *Group[C]) Policy() string { return g.bal.policy }

// Queue returns the queue of requests waiting at max_conns; nil (whose
// methods do nothing) without one.
func (g *Group[C]) Queue() *Queue[C] { return g.queue }

// StartChecks runs the active health checks until Close: every interval
// each host is checked by check, at once for every host, and its health
// updated by the result under the Group's Health (Rise and Fall);
// report is told of each change, -1 down, +1 up again. Call it once, at
// most.
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
		for _, h := range g.Hosts {
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

// Close stops the active checks and closes the idle connections;
// connections in use are closed as their requests end (Keep closes
// them). The hosts' health is kept for another Group naming them (the
// next config's, after a reload). Close may be called more than once.
func (g *Group[C]) Close() {
	g.closeOnce.Do(func() {
		if g.stopCheck != nil {
			close(g.stopCheck)
			<-g.checkDone
		}
		for _, h := range g.Hosts {
			h.close()
			releaseHealth(h.Name)
		}
	})
}
