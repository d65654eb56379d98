package config

import (
	"net"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sluice-server/sluice/metrics"
	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/upstream"
)

func TestRouteNameErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		want []string
	}{
		{"api", nil},
		{"static/css-v2.1:x_y", nil},
		{"''", []string{`test.yaml:3:11: name: empty; give the route a short name such as "api", or leave name out (its label is then its position, "#3")`}},
		{"'#2'", []string{`test.yaml:3:11: name: "#2" starts with #, which marks a route without a name ("#3" is the third route); write it without the #`}},
		{"other", []string{`test.yaml:3:11: name: "other" is the label the routes past the first 128 share; choose another`}},
		{"'a b'", []string{`test.yaml:3:11: name: "a b" holds " "; a name is letters, digits and _ - . : / (such as "api" or "static/css")`}},
		{"'é'", []string{`test.yaml:3:11: name: "é" holds "\xc3"; a name is letters`}},
		{strings.Repeat("x", 65), []string{`test.yaml:3:11: name: "` + strings.Repeat("x", 65) + `" is longer than 64 bytes; a name is a short label such as "api"`}},
		{"[a]", []string{`test.yaml:3:11: name: want a route name`}},
	} {
		checkErrors(t, t.TempDir(), map[string]string{"test.yaml": "routes:\n  - match: /\n    name: " + tt.name + "\n    pipeline: [echo]\n"}, tt.want...)
	}
}

// routeCounts returns the responses of each route label by class, as a
// scrape of the config's /metrics shows them (parsed as Prometheus
// does), and whether the exposition had the families at all.
func routeCounts(t *testing.T, srv *sluicetest.Server) map[string]float64 {
	t.Helper()
	resp, body := sluicetest.Get(t, srv.URL+"/metrics")
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	got := map[string]float64{}
	for _, m := range mfs["sluice_route_responses_total"].GetMetric() {
		var route, class string
		for _, l := range m.Label {
			switch l.GetName() {
			case "route":
				route = l.GetValue()
			case "class":
				class = l.GetValue()
			}
		}
		got[route+" "+class] = m.GetCounter().GetValue()
	}
	for _, m := range mfs["sluice_route_request_duration_seconds"].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == "route" {
				got[l.GetValue()+" count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return got
}

// A config with a status source counts every route's requests, named
// routes under their name and the others under their position, and the
// status source's Prometheus format shows them; requests a later
// component refuses count under their route with their status.
func TestRouteMetricsServed(t *testing.T) {
	cfg, err := parseString(t, t.TempDir(), `
routes:
  - match: /metrics
    name: cfgtest-metrics
    pipeline: [status: prometheus]
  - match: /api/
    name: cfgtest-api
    pipeline: [{text: api}]
  - match: /private/
    name: cfgtest-private
    pipeline: [{ipfilter: {allow: [10.0.0.0/8]}}, {text: secret}]
  - match: /a/
    name: cfgtest-shared
    pipeline: [{text: a}]
  - match: /b/
    name: cfgtest-shared
    pipeline: [{text: b}]
`)
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, cfg.Handler())
	before := routeCounts(t, srv)
	for _, path := range []string{"/api/x", "/api/y", "/private/z", "/a/", "/b/", "/b/", "/nowhere"} {
		sluicetest.Get(t, srv.URL+path)
	}
	after := routeCounts(t, srv)
	for _, tt := range []struct {
		key  string
		want float64
	}{
		{"cfgtest-api 2xx", 2},
		{"cfgtest-api 4xx", 0},
		{"cfgtest-api count", 2},
		{"cfgtest-private 4xx", 1},
		{"cfgtest-private 2xx", 0},
		{"cfgtest-shared 2xx", 3},
		{"cfgtest-metrics 2xx", 1}, // the first scrape
	} {
		if got := after[tt.key] - before[tt.key]; got != tt.want {
			t.Errorf("%s: %v more, want %v", tt.key, got, tt.want)
		}
	}
}

// Without a status source nothing is counted: the routes get no
// counting pipe and make no label.
func TestRouteMetricsOffWithoutStatus(t *testing.T) {
	if _, err := parseString(t, t.TempDir(), "routes:\n  - match: /\n    name: cfgtest-unseen\n    pipeline: [echo]\n"); err != nil {
		t.Fatal(err)
	}
	for _, r := range metrics.Take(metrics.Default).Routes {
		if r.Route == "cfgtest-unseen" {
			t.Error("a config without a status source made the route label cfgtest-unseen")
		}
	}
}

// An unnamed route is labelled by its position among all the routes,
// the sites' after the top-level ones.
func TestRouteMetricsPositions(t *testing.T) {
	cfg, err := parseString(t, t.TempDir(), `
routes:
  - match: /metrics
    name: cfgtest-pos-metrics
    pipeline: [status: prometheus]
  - match: /x
    pipeline: [{text: x}]
sites:
  - hosts: a.example
    routes:
      - match: /
        pipeline: [{text: a}]
`)
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, cfg.Handler())
	before := routeCounts(t, srv)
	srv.RoundTrip(t, "GET /x HTTP/1.1\r\nHost: z.example\r\n\r\n")
	srv.RoundTrip(t, "GET / HTTP/1.1\r\nHost: a.example\r\n\r\n")
	srv.RoundTrip(t, "GET / HTTP/1.1\r\nHost: a.example\r\n\r\n")
	after := routeCounts(t, srv)
	if got := after["#2 2xx"] - before["#2 2xx"]; got != 1 {
		t.Errorf("#2 (/x): %v more, want 1", got)
	}
	if got := after["#3 2xx"] - before["#3 2xx"]; got != 2 {
		t.Errorf("#3 (the site's /): %v more, want 2", got)
	}
}

// A set changed live (as the admin API changes one) shows at the next
// scrape: a host added, up with its weight, and one draining.
func TestUpstreamSetGaugesFollowChanges(t *testing.T) {
	one, two := "http://"+listenClosed(t), "http://"+listenClosed(t)
	cfg, err := parseString(t, t.TempDir(), `
routes:
  - match: /metrics
    pipeline: [status: prometheus]
  - match: /api/
    pipeline: [{proxy: {name: cfgtest-live, upstreams: [`+one+`]}}]
`)
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, cfg.Handler())
	set, ok := upstream.LookupSet("cfgtest-live")
	if !ok {
		t.Fatal("no set cfgtest-live registered")
	}
	if err := set.Patch([]upstream.HostSpec{{Name: two, Weight: 3}, {Name: one, Drain: true}}, nil, "test"); err != nil {
		t.Fatal(err)
	}
	_, body := sluicetest.Get(t, srv.URL+"/metrics")
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	got := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var set, host string
			for _, l := range m.Label {
				switch l.GetName() {
				case "set":
					set = l.GetValue()
				case "upstream":
					host = l.GetValue()
				}
			}
			if set == "cfgtest-live" {
				got[name+" "+host] = m.GetGauge().GetValue()
			}
		}
	}
	for key, want := range map[string]float64{
		"sluice_upstream_up " + two:                 1,
		"sluice_upstream_weight " + two:             3,
		"sluice_upstream_draining " + two:           0,
		"sluice_upstream_draining " + one:           1,
		"sluice_upstream_requests_in_flight " + two: 0,
		"sluice_upstream_set_queued_requests ":      0,
	} {
		if g, ok := got[key]; !ok || g != want {
			t.Errorf("%s = %v (present %v), want %v\n%v", key, g, ok, want, got)
		}
	}
}

// listenClosed returns a loopback address nothing listens on.
func listenClosed(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
