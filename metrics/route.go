package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/sluice-server/sluice/pipe"
)

// MaxRoutes bounds the route labels of a Registry: the routes past it
// share the label OtherRoute, so that no config, however long, makes an
// unbounded number of series.
const MaxRoutes = 128

// OtherRoute is the label the routes past MaxRoutes share.
const OtherRoute = "other"

// Registry holds the counters of each route label, for a process: Route
// returns the same *Route for a label every time, so that the counters
// of a route go on across a reload that keeps its label. Safe for
// concurrent use; the zero value is ready. Counting does not touch the
// Registry (the pipe holds its *Route), only building a config does.
type Registry struct {
	mu       sync.Mutex
	routeSet labels[Route]
	upSet    labels[Upstream]
}

// labels are the series of one kind in a Registry, by label: a label has
// series of its own up to a bound, past which every new label shares
// the series of the "other" label. The Registry's lock guards them; the
// zero value is empty.
type labels[T any] struct {
	byName map[string]*T
	order  []*T // in the order labels were first asked for
	other  *T
}

// get returns the series labelled name, made by newSeries at the first
// call; once limit labels have series, a new name gets those labelled
// other.
func (l *labels[T]) get(name string, limit int, other string, newSeries func(name string) *T) *T {
	if s := l.byName[name]; s != nil {
		return s
	}
	if len(l.order) >= limit {
		if l.other == nil {
			l.other = newSeries(other)
		}
		return l.other
	}
	if l.byName == nil {
		l.byName = map[string]*T{}
	}
	s := newSeries(name)
	l.byName[name] = s
	l.order = append(l.order, s)
	return s
}

// all returns the series in order, other's last if it is used.
func (l *labels[T]) all() []*T {
	out := append([]*T(nil), l.order...)
	if l.other != nil {
		out = append(out, l.other)
	}
	return out
}

// Default is the Registry of the process, which the config's routes
// count into and the status source shows.
var Default = new(Registry)

// Route returns the counters of the route labelled name, made at the
// first call; once the Registry holds MaxRoutes labels, a new name gets
// the shared OtherRoute.
func (g *Registry) Route(name string) *Route {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.routeSet.get(name, MaxRoutes, OtherRoute, func(name string) *Route { return &Route{name: name} })
}

// routes returns the routes, in order, OtherRoute last if it is used.
func (g *Registry) routes() []*Route {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.routeSet.all()
}

// Route is the counters of one route label: its responses by status
// class and their latency, from the moment the route took the request to
// the end of the response's content (see Component). Safe for concurrent
// use.
type Route struct {
	name     string
	classes  Classes
	duration Histogram
}

// Name returns the route's label.
func (r *Route) Name() string { return r.name }

// Observe counts one response of status code that took d. A 101
// (a tunnel, whose duration is the tunnel's) is counted but its
// duration is not observed.
func (r *Route) Observe(code int, d time.Duration) {
	r.classes.Add(code)
	if code != http.StatusSwitchingProtocols {
		r.duration.Observe(d)
	}
}

// RouteSnapshot is a Route at one moment.
type RouteSnapshot struct {
	Route    string            `json:"route"`
	Classes  [5]uint64         `json:"classes"` // 1xx … 5xx
	Duration HistogramSnapshot `json:"duration"`
}

// Snapshot returns the counters now.
func (r *Route) Snapshot() RouteSnapshot {
	return RouteSnapshot{Route: r.name, Classes: r.classes.Snapshot(), Duration: r.duration.Snapshot()}
}

// Component returns the pipe that counts the route's requests into r:
// put first in the route's pipeline, it sees every request the router
// gives the route, those a later component answers with an error
// included, and counts each when the content phase ends, with the final
// status. It is safe for concurrent use, allocates nothing per request
// (its per-request record is pooled) and keeps a file served by
// sendfile(2) going out that way.
func (r *Route) Component() pipe.Component {
	return pipe.Pipe(func(c *pipe.Conn) bool {
		rec := recPool.Get().(*routeRec)
		rec.r, rec.start = r, time.Now()
		c.AddFilter(rec.filterFn)
		return true
	})
}

// routeRec follows one request from the route's start to the end of its
// content. Recycled through recPool.
type routeRec struct {
	pipe.Through // Next: the writer beneath, while the content is written

	r     *Route
	c     *pipe.Conn
	start time.Time

	filterFn pipe.Filter // rec.filter, bound once
	wrapFn   pipe.Wrap   // rec.wrap, bound once
}

var recPool sync.Pool // of *routeRec; New is set by init

func init() {
	recPool.New = func() any {
		rec := new(routeRec)
		rec.filterFn, rec.wrapFn = rec.filter, rec.wrap
		return rec
	}
}

func (rec *routeRec) filter(c *pipe.Conn) pipe.Wrap {
	rec.c = c
	return rec.wrapFn
}

func (rec *routeRec) wrap(next pipe.Writer) pipe.Writer {
	rec.Next = next
	return rec
}

// Close counts the request: the content phase is over, the status final.
func (rec *routeRec) Close() error {
	rec.r.Observe(rec.c.Status(), time.Since(rec.start))
	rec.r, rec.c, rec.Next = nil, nil, nil
	recPool.Put(rec)
	return nil
}
