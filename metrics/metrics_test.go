package metrics

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

// discard is an engine.ResponseWriter that keeps nothing.
type discard struct{ h engine.Header }

func (d *discard) Header() *engine.Header            { return &d.h }
func (d *discard) WriteHeader(int)                   {}
func (d *discard) Write(p []byte) (int, error)       { return len(p), nil }
func (d *discard) WriteString(s string) (int, error) { return len(s), nil }
func (d *discard) Flush() error                      { return nil }

func TestHistogramBuckets(t *testing.T) {
	tests := []struct {
		d      time.Duration
		bucket int
	}{
		{-time.Second, 0},
		{0, 0},
		{500 * time.Microsecond, 0}, // le is inclusive
		{501 * time.Microsecond, 1},
		{3 * time.Millisecond, 3},
		{10 * time.Second, len(Buckets) - 1},
		{11 * time.Second, len(Buckets)},
		{time.Hour, len(Buckets)},
	}
	for _, tt := range tests {
		var h Histogram
		h.Observe(tt.d)
		s := h.Snapshot()
		for i, n := range s.Counts {
			if want := uint64(0); i == tt.bucket {
				want = 1
				if n != want {
					t.Errorf("Observe(%v): bucket %d has %d, want 1", tt.d, i, n)
				}
			} else if n != 0 {
				t.Errorf("Observe(%v): bucket %d has %d, want 0 (want bucket %d)", tt.d, i, n, tt.bucket)
			}
		}
		if s.Count() != 1 {
			t.Errorf("Observe(%v): count %d, want 1", tt.d, s.Count())
		}
		if want := max(tt.d, 0).Seconds(); s.Sum != want {
			t.Errorf("Observe(%v): sum %v, want %v", tt.d, s.Sum, want)
		}
	}
}

func TestClasses(t *testing.T) {
	var c Classes
	for _, code := range []int{0, 99, 100, 101, 200, 204, 304, 404, 503, 599, 600, 999, -200} {
		c.Add(code)
	}
	if got, want := c.Snapshot(), [5]uint64{2, 2, 1, 1, 2}; got != want {
		t.Errorf("classes = %v, want %v", got, want)
	}
	for i, want := range []string{"1xx", "2xx", "3xx", "4xx", "5xx"} {
		if ClassName(i) != want {
			t.Errorf("ClassName(%d) = %q, want %q", i, ClassName(i), want)
		}
	}
}

// The labels are capped: past MaxRoutes, new names share OtherRoute,
// and a name asked for again gets its own counters back.
func TestRegistryCap(t *testing.T) {
	var g Registry
	first := g.Route("r0")
	for i := 1; i < MaxRoutes; i++ {
		g.Route(fmt.Sprint("r", i))
	}
	if g.Route("r0") != first {
		t.Error("Route(r0) a second time returned other counters")
	}
	a, b := g.Route("one too many"), g.Route("two too many")
	if a != b || a.Name() != OtherRoute {
		t.Errorf("routes past the cap: %q and %q, want both the shared %q", a.Name(), b.Name(), OtherRoute)
	}
	if rs := g.routes(); len(rs) != MaxRoutes+1 || rs[MaxRoutes].Name() != OtherRoute {
		t.Errorf("%d routes listed, want %d with %q last", len(rs), MaxRoutes+1, OtherRoute)
	}
}

// parse parses an exposition as Prometheus does, failing the test if it
// is not valid text format.
func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, text)
	}
	return mfs
}

func TestWriteTextParses(t *testing.T) {
	var g Registry
	r := g.Route(`a "quoted\" name` + "\nwith a line feed")
	r.Observe(200, 3*time.Millisecond)
	r.Observe(404, time.Millisecond)
	r.Observe(101, time.Hour) // a tunnel: counted, not timed
	g.Route("idle")
	one, two := Take(&g), Take(&g)
	one.Worker, two.Worker = 1, 2
	for _, snaps := range [][]Snapshot{{Take(&g)}, {one, two}} {
		var b bytes.Buffer
		WriteText(&b, snaps)
		mfs := parse(t, b.String())
		resp := mfs["sluice_route_responses_total"]
		if resp == nil {
			t.Fatalf("no sluice_route_responses_total in\n%s", b.String())
		}
		if got, want := len(resp.Metric), 2*5*len(snaps); got != want {
			t.Errorf("%d sluice_route_responses_total series, want %d", got, want)
		}
		got := map[string]float64{}
		for _, m := range resp.Metric {
			var route, class, worker string
			for _, l := range m.Label {
				switch l.GetName() {
				case "route":
					route = l.GetValue()
				case "class":
					class = l.GetValue()
				case "worker":
					worker = l.GetValue()
				}
			}
			got[worker+"|"+route+"|"+class] = m.GetCounter().GetValue()
		}
		for _, snap := range snaps {
			w := ""
			if snap.Worker != 0 {
				w = fmt.Sprint(snap.Worker)
			}
			for _, c := range []struct {
				class string
				want  float64
			}{{"1xx", 1}, {"2xx", 1}, {"4xx", 1}, {"5xx", 0}} {
				if v := got[w+"|"+r.Name()+"|"+c.class]; v != c.want {
					t.Errorf("worker %q class %s: %v, want %v", w, c.class, v, c.want)
				}
			}
		}
		dur := mfs["sluice_route_request_duration_seconds"]
		if dur == nil || dur.GetType().String() != "HISTOGRAM" {
			t.Fatalf("sluice_route_request_duration_seconds is not a histogram:\n%s", b.String())
		}
		for _, m := range dur.Metric {
			h := m.GetHistogram()
			if len(m.Label) > 0 && m.Label[len(m.Label)-1].GetValue() == "idle" {
				continue
			}
			if h.GetSampleCount() != 2 {
				t.Errorf("histogram count %d, want 2 (the 101 left out)", h.GetSampleCount())
			}
			if s := h.GetSampleSum(); s < 0.0039 || s > 0.0041 {
				t.Errorf("histogram sum %v, want 0.004", s)
			}
			if n := h.Bucket[0].GetCumulativeCount(); n != 0 {
				t.Errorf("bucket le=%v: %d, want 0", h.Bucket[0].GetUpperBound(), n)
			}
			if n := h.Bucket[1].GetCumulativeCount(); n != 1 {
				t.Errorf("bucket le=%v: %d, want 1", h.Bucket[1].GetUpperBound(), n)
			}
		}
		for _, name := range []string{"go_info", "go_goroutines", "go_memory_classes_heap_objects_bytes", "go_gc_cycles_total_gc_cycles_total",
			"process_start_time_seconds", "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_max_fds"} {
			mf := mfs[name]
			if mf == nil || len(mf.Metric) != len(snaps) {
				t.Errorf("%s: want %d series in\n%s", name, len(snaps), b.String())
			}
		}
	}
}

// A route's pipe counts the response's final status, whichever
// component set it, when the content ends.
func TestComponentCounts(t *testing.T) {
	var g Registry
	r := g.Route("r")
	req := &engine.Request{Method: []byte("GET"), Path: []byte("/"), Host: []byte("a"), Body: io.LimitReader(nil, 0)}
	for _, tt := range []struct {
		comp  pipe.Component
		class int
	}{
		{pipe.Source(func(c *pipe.Conn) pipe.Content {
			return func(w pipe.Writer) error { _, err := w.Write([]byte("hello")); return err }
		}), 1},
		{pipe.Pipe(func(c *pipe.Conn) bool { return c.Error(403, "no") }), 3},
		{pipe.Source(func(c *pipe.Conn) pipe.Content { c.SetStatus(304); return nil }), 2},
		{pipe.Source(func(c *pipe.Conn) pipe.Content {
			return func(w pipe.Writer) error { return io.ErrUnexpectedEOF } // nothing out yet: 500
		}), 4},
	} {
		before := r.Snapshot()
		pipe.Handler(pipe.Chain{r.Component(), tt.comp}).Serve(&discard{}, req)
		after := r.Snapshot()
		for i := range after.Classes {
			want := before.Classes[i]
			if i == tt.class {
				want++
			}
			if after.Classes[i] != want {
				t.Errorf("class %s: %d, want %d", ClassName(i), after.Classes[i], want)
			}
		}
		if after.Duration.Count() != before.Duration.Count()+1 {
			t.Errorf("durations: %d, want %d", after.Duration.Count(), before.Duration.Count()+1)
		}
	}
}

// A transport finds a host's counters by name through Upstreams: the
// same counters every time, from the Registry, capped as routes are.
func TestUpstreams(t *testing.T) {
	var g Registry
	us := &Upstreams{Registry: &g}
	a := us.Get("127.0.0.1:1")
	if us.Get("127.0.0.1:1") != a || g.Upstream("127.0.0.1:1") != a {
		t.Fatal("the same name gave other counters")
	}
	other := &Upstreams{Registry: &g}
	if other.Get("127.0.0.1:1") != a {
		t.Error("two transports' views of one host gave different counters")
	}
	for i := 1; i < MaxUpstreams; i++ {
		us.Get(fmt.Sprint("h", i))
	}
	if u := us.Get("one too many"); u.Name() != OtherUpstream {
		t.Errorf("past the cap: %q, want %q", u.Name(), OtherUpstream)
	}
	a.Head(200, 2*time.Millisecond)
	a.Done(20 * time.Millisecond)
	a.Head(503, time.Millisecond)
	a.Failed()
	a.Response(404, 7*time.Second)
	var nilU *Upstream
	nilU.Head(200, 0) // counts nothing, and does not panic
	nilU.Done(0)
	nilU.Failed()
	nilU.Response(200, 0)
	s := a.Snapshot()
	if s.Classes != [5]uint64{0, 1, 0, 1, 1} || s.Failed != 1 || s.Head.Count() != 2 || s.Total.Count() != 2 {
		t.Errorf("snapshot %+v", s)
	}
	var b bytes.Buffer
	snap := Take(&g)
	WriteText(&b, []Snapshot{snap})
	mfs := parse(t, b.String())
	for name, want := range map[string]int{
		"sluice_upstream_responses_total":           5 * (MaxUpstreams + 1),
		"sluice_upstream_failures_total":            MaxUpstreams + 1,
		"sluice_upstream_header_duration_seconds":   MaxUpstreams + 1,
		"sluice_upstream_response_duration_seconds": MaxUpstreams + 1,
	} {
		if got := len(mfs[name].GetMetric()); got != want {
			t.Errorf("%s: %d series, want %d", name, got, want)
		}
	}
}

// The sets' gauges: one series per host of each set, for each worker.
func TestWriteSets(t *testing.T) {
	sets := []SetSnapshot{
		{Set: "app", Transport: "proxy", Queued: 4, Hosts: []HostSnapshot{
			{Host: "http://10.0.0.1:80", Up: true, Weight: 1, InFlight: 3, Open: 5, Idle: 2},
			{Host: "http://10.0.0.2:80", Up: false, Draining: true, Weight: 2},
		}},
		{Set: "php", Transport: "fastcgi", Hosts: []HostSnapshot{{Host: "unix:/run/php.sock", Up: true, Weight: 1}}},
	}
	snaps := []Snapshot{{Worker: 1, Sets: sets}, {Worker: 2, Sets: sets}}
	var b bytes.Buffer
	WriteText(&b, snaps)
	mfs := parse(t, b.String())
	values := map[string]float64{}
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "sluice_upstream_") {
			continue
		}
		want := 6 // 3 hosts, 2 workers
		if name == "sluice_upstream_set_queued_requests" {
			want = 4 // 2 sets, 2 workers
		}
		if got := len(mf.GetMetric()); got != want {
			t.Errorf("%s: %d series, want %d", name, got, want)
		}
		for _, m := range mf.GetMetric() {
			key := name
			for _, l := range m.Label {
				key += " " + l.GetValue()
			}
			values[key] = m.GetGauge().GetValue()
		}
	}
	for key, want := range map[string]float64{
		"sluice_upstream_up 1 app http://10.0.0.1:80":                 1,
		"sluice_upstream_up 2 app http://10.0.0.2:80":                 0,
		"sluice_upstream_draining 1 app http://10.0.0.2:80":           1,
		"sluice_upstream_weight 2 app http://10.0.0.2:80":             2,
		"sluice_upstream_requests_in_flight 1 app http://10.0.0.1:80": 3,
		"sluice_upstream_connections_open 2 app http://10.0.0.1:80":   5,
		"sluice_upstream_connections_idle 1 app http://10.0.0.1:80":   2,
		"sluice_upstream_up 2 php unix:/run/php.sock":                 1,
		"sluice_upstream_set_queued_requests 1 app proxy":             4,
		"sluice_upstream_set_queued_requests 2 php fastcgi":           0,
	} {
		if got, ok := values[key]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", key, got, ok, want)
		}
	}
}
