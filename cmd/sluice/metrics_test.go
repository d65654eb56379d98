package main_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape gets /metrics from addr on a connection of its own (so that,
// with workers, any worker may answer) and parses it as Prometheus does.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := getOnce(t, addr, "GET", "/metrics")
	if code != 200 {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	return mfs
}

// label returns the value of m's label name, or "".
func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// routeSums sums sluice_route_responses_total over the workers, by
// route and class ("api 2xx"), and returns the workers seen.
func routeSums(mfs map[string]*dto.MetricFamily) (map[string]float64, map[string]bool) {
	sums, workers := map[string]float64{}, map[string]bool{}
	for _, m := range mfs["sluice_route_responses_total"].GetMetric() {
		sums[label(m, "route")+" "+label(m, "class")] += m.GetCounter().GetValue()
		workers[label(m, "worker")] = true
	}
	for _, m := range mfs["sluice_route_request_duration_seconds"].GetMetric() {
		sums[label(m, "route")+" count"] += float64(m.GetHistogram().GetSampleCount())
	}
	return sums, workers
}

// upstreamSums sums the sluice_upstream_* series over the workers, by
// upstream and class ("127.0.0.1:80 2xx"), failures ("… failed") and
// histogram counts ("… head", "… total").
func upstreamSums(mfs map[string]*dto.MetricFamily) map[string]float64 {
	sums := map[string]float64{}
	for _, m := range mfs["sluice_upstream_responses_total"].GetMetric() {
		sums[label(m, "upstream")+" "+label(m, "class")] += m.GetCounter().GetValue()
	}
	for _, m := range mfs["sluice_upstream_failures_total"].GetMetric() {
		sums[label(m, "upstream")+" failed"] += m.GetCounter().GetValue()
	}
	for _, m := range mfs["sluice_upstream_header_duration_seconds"].GetMetric() {
		sums[label(m, "upstream")+" head"] += float64(m.GetHistogram().GetSampleCount())
	}
	for _, m := range mfs["sluice_upstream_response_duration_seconds"].GetMetric() {
		sums[label(m, "upstream")+" total"] += float64(m.GetHistogram().GetSampleCount())
	}
	return sums
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// metricsUpstream starts an HTTP server on a loopback socket that answers
// /fail with 502 and anything else with 200 "up".
func metricsUpstream(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/fail") {
			w.WriteHeader(502)
		}
		io.WriteString(w, "up")
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// metricsConfig routes /metrics to a Prometheus status source, /api/ to
// a proxy, /down/ to a proxy to a port nothing listens on, and /x to a
// text, with workers unless 0.
func metricsConfig(workers int, upstream, down string) string {
	w := ""
	if workers > 0 {
		w = fmt.Sprintf("workers: %d\nhealth: {interval: 100ms, timeout: 1s}\n", workers)
	}
	return "listen: 127.0.0.1:0\n" + w + `routes:
  - match: /metrics
    name: metrics
    pipeline: [status: prometheus]
  - match: /api/
    name: api
    pipeline: [{proxy: {name: api-set, upstreams: [http://` + upstream + `]}}]
  - match: /x
    pipeline: [{text: x}]
  - match: /down/
    pipeline: [{proxy: {upstreams: [http://` + down + `], retries: 0}}]
`
}

// Every route's requests are counted once, by status class, whichever
// worker served them: a scrape, whichever worker answers it, has every
// worker's series (labelled worker="ID"), and their sums are the
// requests sent. Without workers the series have no worker label.
func TestMetricsRoutes(t *testing.T) {
	for _, workers := range []int{0, 2} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) {
			if workers > 0 {
				needWorkers(t)
			}
			file := filepath.Join(t.TempDir(), "m.yaml")
			up := metricsUpstream(t)
			down := closedPort(t)
			writeConfig(t, file, metricsConfig(workers, up, down))
			s := start(t, "serve", "-c", file)
			if workers > 0 {
				s.waitLog(t, "workers ready", 1)
			}
			const ok, failed, x, refused = 20, 3, 7, 2
			for i := range ok + failed + x + refused {
				path := "/x"
				switch {
				case i < ok:
					path = "/api/a"
				case i < ok+failed:
					path = "/api/fail"
				case i < ok+failed+refused:
					path = "/down/"
				}
				getOnce(t, s.addr, "GET", path)
			}
			mfs := scrape(t, s.addr)
			sums, seen := routeSums(mfs)
			for _, tt := range []struct {
				key  string
				want float64
			}{
				{"api 2xx", ok}, {"api 5xx", failed}, {"api 4xx", 0}, {"api count", ok + failed},
				{"#3 2xx", x}, {"#3 count", x},
				{"#4 5xx", refused},
			} {
				if sums[tt.key] != tt.want {
					t.Errorf("%s: %v, want %v (summed over workers %v)", tt.key, sums[tt.key], tt.want, seen)
				}
			}
			ups := upstreamSums(mfs)
			up, down = "http://"+up, "http://"+down // the hosts as the proxy names them
			for _, tt := range []struct {
				key  string
				want float64
			}{
				{up + " 2xx", ok}, {up + " 5xx", failed}, {up + " failed", 0},
				{up + " head", ok + failed}, {up + " total", ok + failed},
				{down + " failed", refused}, {down + " 5xx", 0}, {down + " head", 0},
			} {
				if ups[tt.key] != tt.want {
					t.Errorf("upstream %s: %v, want %v\n%v", tt.key, ups[tt.key], tt.want, ups)
				}
			}
			wantWorkers := map[string]bool{"": true}
			if workers > 0 {
				wantWorkers = map[string]bool{"1": true, "2": true}
			}
			if fmt.Sprint(seen) != fmt.Sprint(wantWorkers) {
				t.Errorf("route series of workers %v, want %v", seen, wantWorkers)
			}
			// Each worker's view of the set: the host up, its pool.
			gauges := map[string]float64{}
			for _, name := range []string{"sluice_upstream_up", "sluice_upstream_connections_open", "sluice_upstream_weight", "sluice_upstream_set_queued_requests"} {
				for _, m := range mfs[name].GetMetric() {
					if label(m, "set") == "api-set" && (label(m, "upstream") == up || label(m, "upstream") == "") {
						gauges[name+" "+label(m, "worker")] = m.GetGauge().GetValue()
					}
				}
			}
			for w := range wantWorkers {
				if gauges["sluice_upstream_up "+w] != 1 || gauges["sluice_upstream_weight "+w] != 1 {
					t.Errorf("worker %q: the api-set host not up with weight 1: %v", w, gauges)
				}
				if _, ok := gauges["sluice_upstream_set_queued_requests "+w]; !ok {
					t.Errorf("worker %q: no queue gauge for api-set: %v", w, gauges)
				}
			}
			for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "process_open_fds"} {
				got := map[string]bool{}
				for _, m := range mfs[name].GetMetric() {
					got[label(m, "worker")] = true
				}
				if fmt.Sprint(got) != fmt.Sprint(wantWorkers) {
					t.Errorf("%s of workers %v, want %v", name, got, wantWorkers)
				}
			}
			if code := s.stop(t, syscall.SIGTERM); code != 0 {
				t.Errorf("exit status %d", code)
			}
		})
	}
}
