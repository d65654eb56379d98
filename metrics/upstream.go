package metrics

import (
	"sync"
	"sync/atomic"
	"time"
)

// MaxUpstreams bounds the upstream labels of a Registry, as MaxRoutes
// does the routes': the upstreams past it share the label OtherUpstream.
const MaxUpstreams = 256

// OtherUpstream is the label the upstreams past MaxUpstreams share.
const OtherUpstream = "other"

// Upstream is the counters of one upstream host, by its name as the
// transport writes it in its log ("127.0.0.1:9000", "unix:/run/app.sock"):
// its responses by status class, the attempts that got none (connection
// refused, timed out, a malformed response), the time to the response's
// head and the time to its end. Safe for concurrent use; a nil *Upstream
// counts nothing.
type Upstream struct {
	name    string
	classes Classes
	failed  atomic.Uint64
	head    Histogram
	total   Histogram
}

// Name returns the upstream's label.
func (u *Upstream) Name() string { return u.name }

// Head counts a response head of status code that came d after the
// attempt began. A 1xx other than 101 is not a response: only the final
// head is counted.
func (u *Upstream) Head(code int, d time.Duration) {
	if u == nil {
		return
	}
	u.classes.Add(code)
	u.head.Observe(d)
}

// Done observes d, the time from the attempt's start to the end of the
// response passed on (a tunnel's is not: see Route.Observe).
func (u *Upstream) Done(d time.Duration) {
	if u != nil {
		u.total.Observe(d)
	}
}

// Response counts a response of status code whose head the transport
// does not time apart (FastCGI's, read and passed on in one go), and
// observes d, from the attempt's start to the response's end, as Done
// does.
func (u *Upstream) Response(code int, d time.Duration) {
	if u != nil {
		u.classes.Add(code)
		u.total.Observe(d)
	}
}

// Failed counts an attempt that got no response.
func (u *Upstream) Failed() {
	if u != nil {
		u.failed.Add(1)
	}
}

// UpstreamSnapshot is an Upstream at one moment.
type UpstreamSnapshot struct {
	Upstream string            `json:"upstream"`
	Classes  [5]uint64         `json:"classes"` // 1xx … 5xx
	Failed   uint64            `json:"failed"`
	Head     HistogramSnapshot `json:"head"`
	Total    HistogramSnapshot `json:"total"`
}

// Snapshot returns the counters now.
func (u *Upstream) Snapshot() UpstreamSnapshot {
	return UpstreamSnapshot{Upstream: u.name, Classes: u.classes.Snapshot(), Failed: u.failed.Load(), Head: u.head.Snapshot(), Total: u.total.Snapshot()}
}

// Upstream returns the counters of the upstream labelled name, made at
// the first call; once the Registry holds MaxUpstreams labels, a new
// name gets the shared OtherUpstream. It locks: a transport looks its
// hosts up through an Upstreams, which does not.
func (g *Registry) Upstream(name string) *Upstream {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.upSet.get(name, MaxUpstreams, OtherUpstream, func(name string) *Upstream { return &Upstream{name: name} })
}

// upstreams returns the upstreams, in order, OtherUpstream last if used.
func (g *Registry) upstreams() []*Upstream {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.upSet.all()
}

// Upstreams is a transport's view of a Registry's upstreams: Get finds a
// host's counters by name without a lock or an allocation once it has
// seen the name (a copy-on-write map), so a transport may call it on
// every attempt. Safe for concurrent use; the zero value uses Default.
type Upstreams struct {
	// Registry holds the counters; nil means Default. Set it before the
	// first Get.
	Registry *Registry

	m  atomic.Pointer[map[string]*Upstream]
	mu sync.Mutex
}

// Get returns the counters of the upstream called name.
func (us *Upstreams) Get(name string) *Upstream {
	if m := us.m.Load(); m != nil {
		if u := (*m)[name]; u != nil {
			return u
		}
	}
	us.mu.Lock()
	defer us.mu.Unlock()
	old := us.m.Load()
	if old != nil {
		if u := (*old)[name]; u != nil {
			return u
		}
	}
	g := us.Registry
	if g == nil {
		g = Default
	}
	u := g.Upstream(name)
	m := make(map[string]*Upstream, 1+lenOf(old))
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[name] = u
	us.m.Store(&m)
	return u
}

func lenOf(m *map[string]*Upstream) int {
	if m == nil {
		return 0
	}
	return len(*m)
}
