package upstream

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Weights of a host (HostSpec.Weight).
const (
	DefaultWeight = 1
	MaxWeight     = 100
)

// HostSpec is a host of a set as a change names it (LiveSet.Replace,
// LiveSet.Patch): its Name in the forms the transport accepts
// ("http://10.0.0.1:8080", "unix:/run/app.sock"), its Weight (1 to
// MaxWeight; 0 is DefaultWeight, or, in a Patch of a host already in the
// set, its weight unchanged), and whether it is draining: listed, but
// taking no new request. The JSON names are those an API taking it as
// JSON reads.
type HostSpec struct {
	Name   string `json:"name"`
	Weight int    `json:"weight,omitempty"`
	Drain  bool   `json:"drain,omitempty"`
}

// HostState is a host of a set as it is now (LiveSet.State): its name,
// weight, whether it is draining and whether it is up (not marked down
// by the health checks), its requests in flight, its connections open
// and idle, and its attempts and failures since it joined the set.
type HostState struct {
	Name     string `json:"name"`
	Weight   int    `json:"weight"`
	Draining bool   `json:"draining"`
	Up       bool   `json:"up"`
	InFlight int64  `json:"in_flight"`
	Open     int    `json:"open"`
	Idle     int    `json:"idle"`
	Requests uint64 `json:"requests"`
	Fails    uint64 `json:"fails"`
}

// SetState is a set as it is now: its name, the transport serving it
// ("proxy", "fastcgi"), its balancing policy, where its hosts come from
// (Source: "config", or for a set resolved from DNS the upstream as
// written, "dns+http://app.internal:8080"), and its hosts, in the order
// listed.
type SetState struct {
	Name      string      `json:"name"`
	Transport string      `json:"transport"`
	Policy    string      `json:"policy"`
	Source    string      `json:"source"`
	Hosts     []HostState `json:"hosts"`
	// Queued is how many requests wait now in the set's max_conns queue
	// for a connection to come free (0 without a queue).
	Queued int `json:"queued"`
}

// SourceConfig is SetState.Source of a set whose hosts the config names.
const SourceConfig = "config"

// LiveSet is a handle on a Group registered under a name (Group.Register),
// by which an admin API or a metrics exposition reads and changes its
// hosts without knowing the transport's connection type. Its methods are
// safe for concurrent use. Its zero value is not usable.
type LiveSet struct {
	name      string
	transport string
	log       *slog.Logger
	g         liveGroup

	mu     sync.Mutex
	source string // SourceConfig, or the DNS upstream feeding it
}

// liveGroup is what a LiveSet needs of its Group[C], whatever C.
type liveGroup interface {
	hostStates() []HostState
	queued() int
	change(replace bool, specs []HostSpec, remove []string) (changes, error)
	Policy() string
}

// changes is what a change of a set did, for its log line.
type changes struct{ added, removed, changed []string }

// Name returns the name s is registered under.
func (s *LiveSet) Name() string { return s.name }

// State returns s as it is now.
func (s *LiveSet) State() SetState {
	s.mu.Lock()
	src := s.source
	s.mu.Unlock()
	return SetState{Name: s.name, Transport: s.transport, Policy: s.g.Policy(), Source: src, Hosts: s.g.hostStates(), Queued: s.g.queued()}
}

// ErrSetClosed reports a change of a set whose Group was closed: a
// reload replaced it, and LookupSet returns the set that took its name.
var ErrSetClosed = errors.New("closed: a reload replaced it; look the set up again")

// ErrFromDNS reports a change refused because the set takes its hosts
// from DNS.
var ErrFromDNS = errors.New("upstream: the set takes its hosts from DNS")

// Replace makes hosts the whole set (as a PUT does): those already in
// it keep their pool, requests in flight and health, and take the weight
// and drain given; those not named leave it, taking no new request once
// Replace returns (those in flight finish, and idle connections close);
// new ones join it. It fails, changing nothing, for a host the transport
// cannot serve or misspelt, a name given twice, a weight out of 1 to 100,
// no host, more than 64, or every one draining; the error names the host
// and says what to write. who (the caller's identity) goes in the log
// line the change makes. A set fed by DNS refuses it (ErrFromDNS).
func (s *LiveSet) Replace(hosts []HostSpec, who string) error {
	return s.apply(true, hosts, nil, who)
}

// Patch changes part of the set (as a PATCH does): the hosts of add
// join it, or, already in it, take the weight given (0 keeps theirs) and
// the drain given; those named in remove leave it, as for Replace. It
// fails, changing nothing, as Replace does, and for a host to remove
// that is not in the set or is also in add.
func (s *LiveSet) Patch(add []HostSpec, remove []string, who string) error {
	return s.apply(false, add, remove, who)
}

func (s *LiveSet) apply(replace bool, specs []HostSpec, remove []string, who string) error {
	s.mu.Lock()
	src := s.source
	s.mu.Unlock()
	if src != SourceConfig {
		return fmt.Errorf("%w: set %q follows the records of %s: change the records, or name the hosts in the config file instead", ErrFromDNS, s.name, src)
	}
	return s.applyAs(replace, specs, remove, who)
}

// applyAs makes a change, whatever the source, and logs it.
func (s *LiveSet) applyAs(replace bool, specs []HostSpec, remove []string, who string) error {
	c, err := s.g.change(replace, specs, remove)
	if err != nil {
		return fmt.Errorf("set %q: %w", s.name, err)
	}
	if len(c.added)+len(c.removed)+len(c.changed) > 0 {
		s.log.Info("upstream set changed", "set", s.name, "added", c.added, "removed", c.removed, "changed", c.changed, "by", who)
	}
	return nil
}

// setSource records where s's hosts come from.
func (s *LiveSet) setSource(src string) {
	s.mu.Lock()
	s.source = src
	s.mu.Unlock()
}

// The registry of live sets: by name, the sets registered under it,
// oldest first. A reload builds the new config's Group (which registers)
// before it closes the old one (which unregisters); a config that fails
// to load closes its Groups, and the name goes back to the set serving.
var (
	registryMu sync.Mutex
	registry   = map[string][]*LiveSet{}
)

// Register registers g's set under name, for the transport called
// transport ("proxy", "fastcgi"), logging its changes to log (nil:
// slog.Default()), and returns its handle: LookupSet(name) returns it
// until g is closed or another Group registers under the same name. Call
// it once, at most, after SetHooks.
func (g *Group[C]) Register(name, transport string, log *slog.Logger) *LiveSet {
	if log == nil {
		log = slog.Default()
	}
	s := &LiveSet{name: name, transport: transport, log: log, g: g, source: SourceConfig}
	if len(g.dns) > 0 {
		var specs []string
		for _, src := range g.dns {
			specs = append(specs, src.target.spec)
		}
		s.source = strings.Join(specs, ", ")
	}
	g.mu.Lock()
	g.live = s
	g.mu.Unlock()
	registryMu.Lock()
	registry[name] = append(registry[name], s)
	registryMu.Unlock()
	return s
}

// Live returns the handle g registered under (Register); nil if none.
func (g *Group[C]) Live() *LiveSet {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.live
}

// unregister takes s out of the registry.
func unregister(s *LiveSet) {
	registryMu.Lock()
	defer registryMu.Unlock()
	list := slices.DeleteFunc(registry[s.name], func(x *LiveSet) bool { return x == s })
	if len(list) == 0 {
		delete(registry, s.name)
	} else {
		registry[s.name] = list
	}
}

// LookupSet returns the set registered last under name and not closed
// since.
func LookupSet(name string) (*LiveSet, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	list := registry[name]
	if len(list) == 0 {
		return nil, false
	}
	return list[len(list)-1], true
}

// Sets returns the state of every registered set (the one registered
// last under each name), sorted by name.
func Sets() []SetState {
	registryMu.Lock()
	live := make([]*LiveSet, 0, len(registry))
	for _, list := range registry {
		live = append(live, list[len(list)-1])
	}
	registryMu.Unlock()
	sort.Slice(live, func(i, j int) bool { return live[i].name < live[j].name })
	out := make([]SetState, len(live))
	for i, s := range live {
		out[i] = s.State()
	}
	return out
}

// queued returns how many requests wait in g's queue now.
func (g *Group[C]) queued() int { return g.queue.Len() }

// hostStates returns the state of g's hosts now.
func (g *Group[C]) hostStates() []HostState {
	s := g.set.Load()
	now := Now()
	out := make([]HostState, len(s.order))
	for k, h := range s.order {
		h.mu.Lock()
		open, idle := h.open, len(h.idle)
		h.mu.Unlock()
		out[k] = HostState{
			Name: h.Name, Weight: int(s.weights[h.index]), Draining: s.drain&bit(h.index) != 0,
			Up: h.Up(now), InFlight: h.active.Load(), Open: open, Idle: idle,
			Requests: h.requests.Load(), Fails: h.fails.Load(),
		}
	}
	return out
}

// Replace makes hosts the whole set of g, as LiveSet.Replace does,
// without a log line: for a transport, or a program embedding one.
func (g *Group[C]) Replace(hosts []HostSpec) error {
	_, err := g.change(true, hosts, nil)
	return err
}

// Patch changes part of the set of g, as LiveSet.Patch does, without a
// log line.
func (g *Group[C]) Patch(add []HostSpec, remove []string) error {
	_, err := g.change(false, add, remove)
	return err
}

// entry is a host of a set being made.
type entry[C Conn] struct {
	h      *Host[C] // nil for a host to make
	name   string
	weight int32
	drain  bool
}

// change makes a new set of g's hosts: specs the whole set (replace),
// or specs added or changed and remove removed; it publishes it, retires
// the hosts that left, and wakes the requests waiting in the queue to
// look again.
func (g *Group[C]) change(replace bool, specs []HostSpec, remove []string) (changes, error) {
	return g.changeHosts(replace, specs, remove, nil, false)
}

// changeHosts is change, with the Authority of new hosts named in auth
// (hosts from DNS), and, with allowEmpty, a set of no host (every name
// from DNS failing at the start) allowed.
func (g *Group[C]) changeHosts(replace bool, specs []HostSpec, remove []string, auth map[string]string, allowEmpty bool) (changes, error) {
	var c changes
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return c, ErrSetClosed
	}
	cur := g.set.Load()
	byName := make(map[string]int, len(cur.order)) // index in want
	var want []entry[C]
	if !replace {
		gone := make(map[string]bool, len(remove))
		for _, name := range remove {
			if !slices.ContainsFunc(cur.order, func(h *Host[C]) bool { return h.Name == name }) {
				return c, fmt.Errorf("remove %q: no such host in the set (it has %s)", name, names(cur.order))
			}
			if slices.ContainsFunc(specs, func(s HostSpec) bool { return s.Name == name }) {
				return c, fmt.Errorf("host %q is both added and removed: name it in one of the two", name)
			}
			gone[name] = true
		}
		for _, h := range cur.order {
			if gone[h.Name] {
				continue
			}
			byName[h.Name] = len(want)
			want = append(want, entry[C]{h: h, name: h.Name, weight: cur.weights[h.index], drain: cur.drain&bit(h.index) != 0})
		}
	}
	given := make(map[string]bool, len(specs))
	for _, sp := range specs {
		if given[sp.Name] {
			return c, fmt.Errorf("host %q is named twice: name each host once", sp.Name)
		}
		given[sp.Name] = true
		if IsDNS(sp.Name) && auth == nil {
			return c, fmt.Errorf("host %q: a change names hosts, such as http://10.0.0.1:8080; an upstream from DNS is written in the config file", sp.Name)
		}
		if sp.Weight < 0 || sp.Weight > MaxWeight {
			return c, fmt.Errorf("host %q: weight %d: want 1 to %d (0 or none: %d)", sp.Name, sp.Weight, MaxWeight, DefaultWeight)
		}
		w := int32(sp.Weight)
		if k, ok := byName[sp.Name]; ok { // a Patch of a host kept
			if w != 0 {
				want[k].weight = w
			}
			want[k].drain = sp.Drain
			continue
		}
		if w == 0 {
			w = DefaultWeight
		}
		e := entry[C]{name: sp.Name, weight: w, drain: sp.Drain}
		if replace {
			if i := slices.IndexFunc(cur.order, func(h *Host[C]) bool { return h.Name == sp.Name }); i >= 0 {
				e.h = cur.order[i]
			}
		}
		byName[sp.Name] = len(want)
		want = append(want, e)
	}
	switch {
	case len(want) == 0 && allowEmpty:
	case len(want) == 0:
		return c, errors.New("no host left: a set keeps at least one (drain a host, drain: true, to stop sending it requests)")
	case len(want) > MaxHosts:
		return c, fmt.Errorf("%d hosts: a set has at most %d", len(want), MaxHosts)
	case !slices.ContainsFunc(want, func(e entry[C]) bool { return !e.drain }):
		return c, errors.New("every host draining: leave at least one with drain false to take the requests")
	}

	// Slots: a host kept keeps its own; a new one takes a free slot,
	// one no host of the set now holds first, so that a slot a host left
	// a moment ago (whose bit requests begun before may still hold) is
	// given again last.
	var used uint64
	for _, e := range want {
		if e.h != nil {
			used |= bit(e.h.index)
		}
	}
	var made, hooked []*Host[C]
	undo := func() {
		for _, h := range hooked {
			g.hooks.Remove(h)
		}
		for _, h := range made {
			releaseHealth(h.Name)
		}
	}
	for k := range want {
		e := &want[k]
		if e.h != nil {
			continue
		}
		slot := freeSlot(used, cur.drain|cur.pickable)
		h, err := g.newHost(e.name, slot, auth[e.name])
		if err != nil {
			undo()
			return c, err
		}
		h.health = acquireHealth(h.Name)
		made = append(made, h)
		if g.hooks.Add != nil {
			if err := g.hooks.Add(h); err != nil {
				undo()
				return c, err
			}
			if g.hooks.Remove != nil {
				hooked = append(hooked, h)
			}
		}
		e.h, used = h, used|bit(slot)
	}

	next := &hostSet[C]{order: make([]*Host[C], len(want))}
	for k, e := range want {
		i := e.h.index
		next.slots[i], next.weights[i], next.order[k] = e.h, e.weight, e.h
		next.n = max(next.n, i+1)
		if e.drain {
			next.drain |= bit(i)
		} else {
			next.pickable |= bit(i)
		}
	}
	next.rr, next.uniform = smoothOrder(next)
	g.set.Store(next)
	for _, h := range next.order {
		h.stopped.Store(next.drain&bit(h.index) != 0)
	}

	for _, h := range cur.order {
		if next.slots[h.index] != h {
			h.retired.Store(true)
			h.stopped.Store(true)
			h.close()
			releaseHealth(h.Name)
			if g.hooks.Remove != nil {
				g.hooks.Remove(h)
			}
			c.removed = append(c.removed, h.Name)
		}
	}
	for _, h := range next.order {
		i := h.index
		switch {
		case cur.slots[i] != h:
			c.added = append(c.added, h.Name)
		case cur.weights[i] != next.weights[i] || (cur.drain^next.drain)&bit(i) != 0:
			c.changed = append(c.changed, h.Name)
		}
	}
	g.queue.wakeAll()
	return c, nil
}

// freeSlot returns the lowest slot not in used, one not in recent
// either if there is one.
func freeSlot(used, recent uint64) int {
	for i := range MaxHosts {
		if (used|recent)&bit(i) == 0 {
			return i
		}
	}
	for i := range MaxHosts {
		if used&bit(i) == 0 {
			return i
		}
	}
	panic("upstream: no free slot") // want has at most MaxHosts hosts
}

// names lists the names of hosts, for a message.
func names[C Conn](hosts []*Host[C]) string {
	list := make([]string, len(hosts))
	for i, h := range hosts {
		list[i] = h.Name
	}
	return strings.Join(list, ", ")
}

// smoothOrder returns round_robin's order of the pickable slots of s,
// smooth and weighted as nginx's: each host is picked its weight's share
// of the turns, spread out (weights 5, 1, 1 go a a b a c a a, not a a a
// a a b c), and whether their weights are all equal. Weights are divided
// by their greatest common divisor, so that equal ones give one turn
// each.
func smoothOrder[C Conn](s *hostSet[C]) ([]uint8, bool) {
	var slots []int
	var w []int
	d := 0
	for _, h := range s.order {
		if s.pickable&bit(h.index) != 0 {
			slots = append(slots, h.index)
			w = append(w, int(s.weights[h.index]))
			d = gcd(d, int(s.weights[h.index]))
		}
	}
	total := 0
	uniform := true
	for i := range w {
		uniform = uniform && w[i] == w[0]
		w[i] /= d
		total += w[i]
	}
	cur := make([]int, len(w))
	order := make([]uint8, 0, total)
	for range total {
		best := -1
		for i := range w {
			cur[i] += w[i]
			if best < 0 || cur[i] > cur[best] {
				best = i
			}
		}
		cur[best] -= total
		order = append(order, uint8(slots[best]))
	}
	return order, uniform
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
