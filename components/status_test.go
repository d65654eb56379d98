package components

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// statusSite serves [count, text/404/stream by path] counting into stats,
// and returns its server and URL.
func statusSite(t *testing.T, stats *Stats) (func() int, string) {
	t.Helper()
	count, err := NewCount(CountOptions{Stats: stats})
	count = builtinComp(t, count, err)
	ok, _ := NewText(TextOptions{Body: "twelve bytes"})
	missing, _ := NewText(TextOptions{Body: "gone", Status: 404})
	endless := pipe.Source(func(c *pipe.Conn) pipe.Content {
		return func(w pipe.Writer) error {
			chunk := make([]byte, 64<<10)
			for {
				if _, err := w.Write(chunk); err != nil {
					return err
				}
			}
		}
	})
	rt, err := pipe.NewRouter(
		pipe.Route{Match: []string{"/ok"}, Pipeline: ok},
		pipe.Route{Match: []string{"/missing"}, Pipeline: missing},
		pipe.Route{Match: []string{"/endless"}, Pipeline: endless},
	)
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{count, rt}))
	return srv.Engine.OpenConns, srv.URL
}

func TestCountAndStatus(t *testing.T) {
	stats := NewStats()
	conns, site := statusSite(t, stats)
	st, err := NewStatus(StatusOptions{Stats: stats, Conns: conns, PrometheusPath: "/metrics"})
	statusURL := sluicetest.NewServer(t, pipe.Handler(builtinComp(t, st, err))).URL

	for range 3 {
		builtinDo(t, "GET", site+"/ok", nil)
	}
	builtinDo(t, "GET", site+"/missing", nil)
	builtinDo(t, "GET", site+"/no-route", nil) // the router's 404, counted too
	builtinDo(t, "HEAD", site+"/ok", nil)

	// A client that goes away mid-body is a delivery error.
	conn, err := net.Dial("tcp", strings.TrimPrefix(site, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, "GET /endless HTTP/1.1\r\nHost: x\r\n\r\n")
	io.ReadFull(conn, make([]byte, 1000))
	conn.(*net.TCPConn).SetLinger(0) // reset: the server's next write fails
	conn.Close()
	for i := 0; stats.Snapshot().Errors == 0; i++ {
		if i == 500 {
			t.Fatal("the broken response was never counted")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Keep one idle connection open to the site: it is counted as open.
	idle, _ := net.Dial("tcp", strings.TrimPrefix(site, "http://"))
	defer idle.Close()
	io.WriteString(idle, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
	io.ReadFull(idle, make([]byte, 10))

	resp, body := builtinDo(t, "GET", statusURL+"/status", nil, "Accept", "application/json")
	if resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("JSON headers: %v", resp.Header)
	}
	var snap StatsSnapshot
	if err := json.Unmarshal(body, &snap); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if snap.Requests != 8 || snap.Responses["2xx"] != 6 || snap.Responses["4xx"] != 2 || snap.Responses["5xx"] != 0 || snap.Errors != 1 {
		t.Errorf("counts: %+v", snap)
	}
	// Bytes: 5×"twelve bytes" (one of them HEAD: written by the source,
	// not sent), "gone", the router's 404 text, and what /endless wrote.
	if min := uint64(5*12 + 4 + 1000); snap.Bytes < min {
		t.Errorf("bytes %d, want at least %d", snap.Bytes, min)
	}
	if snap.Connections < 1 {
		t.Errorf("connections %d, want at least the idle one", snap.Connections)
	}
	if snap.UptimeSeconds <= 0 {
		t.Errorf("uptime %v", snap.UptimeSeconds)
	}

	// Prometheus: by path, by query parameter, and by a scraper's Accept.
	scraper := "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
	for _, req := range [][]string{{"/metrics"}, {"/status?format=prometheus"}, {"/status", "Accept", scraper}} {
		resp, body := builtinDo(t, "GET", statusURL+req[0], nil, req[1:]...)
		if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
			t.Errorf("%v: Content-Type %q", req, ct)
		}
		statusCheckPrometheus(t, string(body), map[string]string{
			"sluice_requests_total":               "8",
			`sluice_responses_total{class="2xx"}`: "6",
			`sluice_responses_total{class="4xx"}`: "2",
			"sluice_response_errors_total":        "1",
			"sluice_response_body_bytes_total":    fmt.Sprint(snap.Bytes),
			"sluice_connections_open":             "",
			"sluice_uptime_seconds":               "",
			`sluice_responses_total{class="1xx"}`: "0",
		})
	}

	// HTML: a browser's Accept, the default, and ?format=html.
	for _, req := range [][]string{{"/status", "Accept", "text/html,application/xhtml+xml,*/*;q=0.8"}, {"/status"}, {"/metrics?format=html"}} {
		resp, body := builtinDo(t, "GET", statusURL+req[0], nil, req[1:]...)
		if resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(string(body), "<tr><th>Requests</th><td>8</td></tr>") {
			t.Errorf("%v: %q %s", req, resp.Header.Get("Content-Type"), body)
		}
	}
}

// statusCheckPrometheus checks the exposition format line by line and the
// values of the samples in want ("" for any value).
func statusCheckPrometheus(t *testing.T, text string, want map[string]string) {
	t.Helper()
	sample := regexp.MustCompile(`^([a-z_]+)(\{[a-z]+="[^"]*"(?:,[a-z]+="[^"]*")*\})? ([0-9.e+-]+|\+Inf)$`)
	typed := map[string]string{}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "# HELP "):
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(line)
			if len(f) != 4 || (f[3] != "counter" && f[3] != "gauge" && f[3] != "histogram") {
				t.Errorf("bad TYPE line %q", line)
				continue
			}
			typed[f[2]] = f[3]
		default:
			m := sample.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("bad sample line %q", line)
				continue
			}
			name := m[1]
			if typed[name] == "" {
				// A histogram's samples carry a suffix on its name.
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if base, ok := strings.CutSuffix(name, suffix); ok && typed[base] == "histogram" {
						name = base
					}
				}
			}
			if typed[name] == "" {
				t.Errorf("sample %q before its TYPE", line)
			}
			got[m[1]+m[2]] = m[3]
		}
	}
	for name, v := range want {
		if g, ok := got[name]; !ok || (v != "" && g != v) {
			t.Errorf("%s = %q (present %v), want %q", name, g, ok, v)
		}
	}
}

// Under a master, the page shows every worker; the Prometheus series of
// the worker answering are labelled with its id, and each worker has its
// own sluice_worker_* series.
func TestStatusWorkers(t *testing.T) {
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	view := Workers{Self: 2, All: []WorkerStatus{
		{ID: 2, PID: 1002, Started: started, State: "serving", Restarts: 0, Connections: 3, Requests: 40},
		{ID: 3, PID: 1003, Started: started.Add(time.Minute), State: "starting", Restarts: 1, Connections: 0, Requests: 1, Memory: 3 << 20},
	}}
	stats := NewStats()
	stats.requests.Add(7)
	st, err := NewStatus(StatusOptions{Stats: stats, Workers: func() Workers { return view }})
	statusURL := sluicetest.NewServer(t, pipe.Handler(builtinComp(t, st, err))).URL

	_, body := builtinDo(t, "GET", statusURL+"/?format=json", nil)
	var snap StatsSnapshot
	if err := json.Unmarshal(body, &snap); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if snap.Worker != 2 || len(snap.Workers) != 2 || snap.Workers[1] != view.All[1] || !snap.Workers[0].Started.Equal(started) {
		t.Errorf("JSON workers: %s", body)
	}

	_, body = builtinDo(t, "GET", statusURL+"/?format=prometheus", nil)
	statusCheckPrometheus(t, string(body), map[string]string{
		`sluice_requests_total{worker="2"}`:                          "7",
		`sluice_responses_total{worker="2",class="2xx"}`:             "0",
		`sluice_uptime_seconds{worker="2"}`:                          "",
		`sluice_worker_info{worker="2",pid="1002",state="serving"}`:  "1",
		`sluice_worker_info{worker="3",pid="1003",state="starting"}`: "1",
		`sluice_worker_start_time_seconds{worker="3"}`:               fmt.Sprintf("%.3f", float64(started.Unix()+60)),
		`sluice_worker_restarts{worker="3"}`:                         "1",
		`sluice_worker_connections_open{worker="2"}`:                 "3",
		`sluice_worker_requests_total{worker="2"}`:                   "40",
		`sluice_worker_requests_total{worker="3"}`:                   "1",
		`sluice_worker_resident_memory_bytes{worker="3"}`:            "3145728",
	})
	if strings.Contains(string(body), "\nsluice_requests_total ") {
		t.Errorf("an unlabelled series under workers:\n%s", body)
	}

	_, body = builtinDo(t, "GET", statusURL+"/?format=html", nil)
	for _, want := range []string{
		"<tr><th>Answered by worker</th><td>2</td></tr>",
		"<tr><td>3</td><td>1003</td><td>2026-01-02T03:05:05Z</td><td>starting</td><td>1</td><td>0</td><td>1</td><td>3.0 MiB</td></tr>",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("HTML lacks %q:\n%s", want, body)
		}
	}
}

func TestStatusOptionErrors(t *testing.T) {
	if _, err := NewStatus(StatusOptions{Format: "xml"}); err == nil || !strings.HasPrefix(err.Error(), "status: unknown format") {
		t.Errorf("format xml: %v", err)
	}
	if _, err := NewStatus(StatusOptions{PrometheusPath: "metrics"}); err == nil || !strings.HasPrefix(err.Error(), "status: prometheus_path") {
		t.Errorf("relative path: %v", err)
	}
}

// count costs no allocation per request.
func BenchmarkCount(b *testing.B) {
	count, _ := NewCount(CountOptions{Stats: NewStats()})
	text, _ := NewText(TextOptions{Body: "Hello, world!\n"})
	builtinBench(b, pipe.Chain{count, text})
}

func ExampleNewStatus() {
	stats := NewStats()
	count, _ := NewCount(CountOptions{Stats: stats})
	hello, _ := NewText(TextOptions{Body: "hello\n"})
	srv, err := sluicetest.Start(pipe.Handler(pipe.Chain{count, hello}))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	site := srv.URL
	for range 3 {
		resp, _ := http.Get(site + "/")
		resp.Body.Close()
	}

	status, err := NewStatus(StatusOptions{Stats: stats, Format: "prometheus"})
	if err != nil {
		panic(err)
	}
	srv2, err := sluicetest.Start(pipe.Handler(status))
	if err != nil {
		panic(err)
	}
	defer srv2.Close()
	url := srv2.URL
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "sluice_re") { // requests, responses, bytes, errors
			fmt.Println(line)
		}
	}
	// Output:
	// sluice_requests_total 3
	// sluice_responses_total{class="1xx"} 0
	// sluice_responses_total{class="2xx"} 3
	// sluice_responses_total{class="3xx"} 0
	// sluice_responses_total{class="4xx"} 0
	// sluice_responses_total{class="5xx"} 0
	// sluice_response_body_bytes_total 18
	// sluice_response_errors_total 0
}
