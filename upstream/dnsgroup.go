package upstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// dnsSource is one upstream from DNS of a Group, and the hosts its last
// good lookup gave; guarded by the Group's dnsMu once it runs.
type dnsSource struct {
	target dnsTarget
	hosts  []resolvedHost
	ttl    time.Duration // of the last good lookup
	fails  int           // lookups failed in a row
	client *dnsClient
}

// interval returns how long to wait before looking src up again: the
// TTL of its records, or after failures a delay doubling from the
// minimum; within the bounds of cfg.
func (src *dnsSource) interval(cfg DNSConfig) time.Duration {
	lo := OrDefault(cfg.MinInterval, DefaultDNSMinInterval)
	hi := max(OrDefault(cfg.MaxInterval, DefaultDNSMaxInterval), lo)
	d := src.ttl
	if src.fails > 0 {
		d = lo << min(src.fails-1, 20)
	}
	return min(max(d, lo), hi)
}

// startDNS looks every upstream from DNS up once, and makes the Group's
// first set of them and the hosts named.
func (g *Group[C]) startDNS() error {
	client, err := newDNSClient(g.cfg.DNS.Resolver)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*dnsTimeout)
	defer cancel()
	for _, src := range g.dns {
		src.client = client
		g.lookup(ctx, src)
	}
	g.dnsMu.Lock()
	defer g.dnsMu.Unlock()
	return g.applyDNS("")
}

// lookup looks src up, holding no lock (the lookup may take seconds),
// and records what it gave (g.dnsMu held), and reports whether its hosts
// changed. A failure is logged, and keeps the hosts of the last good
// lookup.
func (g *Group[C]) lookup(ctx context.Context, src *dnsSource) bool {
	hosts, ttl, err := src.client.lookup(ctx, &src.target)
	g.dnsMu.Lock()
	defer g.dnsMu.Unlock()
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return false
		}
		src.fails++
		msg := "upstream: DNS lookup failed; the hosts of the last good one stay"
		if src.hosts == nil {
			msg = "upstream: DNS lookup failed; it gives no host until one succeeds"
		}
		g.log.Warn(msg, "set", g.setName(), "upstream", src.target.spec, "err", err, "retry_in", src.interval(g.cfg.DNS).String())
		return false
	}
	src.fails, src.ttl = 0, ttl
	slices.SortFunc(hosts, func(a, b resolvedHost) int {
		if a.name < b.name {
			return -1
		}
		if a.name > b.name {
			return 1
		}
		return 0
	})
	hosts = slices.CompactFunc(hosts, func(a, b resolvedHost) bool { return a.name == b.name })
	same := slices.Equal(hosts, src.hosts)
	src.hosts = hosts
	return !same
}

// setName returns the name g is registered under, for log lines.
func (g *Group[C]) setName() string {
	if s := g.Live(); s != nil {
		return s.Name()
	}
	return g.cfg.Name
}

// applyDNS makes g's set the hosts named and those every upstream from
// DNS gave last, logging what changed as made by who (none: the first
// set). g.dnsMu is held.
func (g *Group[C]) applyDNS(who string) error {
	specs := slices.Clone(g.static)
	auth := map[string]string{}
	seen := map[string]bool{}
	for _, s := range specs {
		seen[s.Name] = true
	}
	dropped := 0
	for _, src := range g.dns {
		for _, h := range src.hosts {
			if seen[h.name] {
				continue
			}
			if len(specs) == MaxHosts {
				dropped++
				continue
			}
			seen[h.name] = true
			specs = append(specs, HostSpec{Name: h.name, Weight: h.weight})
			auth[h.name] = h.authority
		}
	}
	if dropped > 0 {
		g.log.Warn(fmt.Sprintf("upstream: DNS gives more than %d hosts; %d left out", MaxHosts, dropped), "set", g.setName())
	}
	c, err := g.changeHosts(true, specs, nil, auth, true)
	if err != nil {
		return err
	}
	if who != "" && len(c.added)+len(c.removed)+len(c.changed) > 0 {
		g.log.Info("upstream set changed", "set", g.setName(), "added", c.added, "removed", c.removed, "changed", c.changed, "by", who)
	}
	return nil
}

// follow looks src up again as its records expire, until ctx ends,
// and changes g's set when its hosts change.
func (g *Group[C]) follow(ctx context.Context, src *dnsSource) {
	defer g.dnsDone.Done()
	g.dnsMu.Lock()
	wait := src.interval(g.cfg.DNS)
	g.dnsMu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if g.lookup(ctx, src) {
			g.dnsMu.Lock()
			if err := g.applyDNS("dns " + src.target.spec); err != nil && ctx.Err() == nil {
				g.log.Warn("upstream: the hosts DNS gave cannot be used", "set", g.setName(), "upstream", src.target.spec, "err", err)
			}
			g.dnsMu.Unlock()
		}
		g.dnsMu.Lock()
		wait = src.interval(g.cfg.DNS)
		g.dnsMu.Unlock()
		t.Reset(wait)
	}
}
