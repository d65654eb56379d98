package components

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/metrics"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sqldata"
)

func init() {
	Register(Registration{
		Name: "status", Kind: KindSource, Scalar: "format",
		Example: `status: {format: json}`,
	}, func(o StatusOptions, x Context) (pipe.Component, error) {
		o.Conns, o.Workers, o.Databases, o.Metrics = x.Conns, x.Workers, x.Databases, x.Metrics
		if o.Caches == nil {
			o.Caches = x.Caches
		}
		return NewStatus(o)
	})
}

// Stats holds server counters: requests, responses by status class, body
// bytes and delivery errors, recorded by the count pipe and shown by the
// status source. Its methods are safe for concurrent use (the counters are
// atomic); the zero value is ready, though only NewStats records a start
// time for the uptime.
type Stats struct {
	start    time.Time
	requests atomic.Uint64
	classes  [5]atomic.Uint64 // 1xx … 5xx
	bytes    atomic.Uint64
	errors   atomic.Uint64
}

// NewStats returns Stats that start now.
func NewStats() *Stats { return &Stats{start: time.Now()} }

// DefaultStats is the Stats that count and status use unless given
// others: one per process (each worker process counts its own).
var DefaultStats = NewStats()

func (s *Stats) addStatus(code int) {
	if i := code/100 - 1; i >= 0 && i < len(s.classes) {
		s.classes[i].Add(1)
	}
}

// StatsSnapshot is a copy of the counters at one moment.
type StatsSnapshot struct {
	// Connections is the number of open client connections, or -1 when
	// unknown (the status source was given no connection counter).
	Connections int `json:"connections"`
	// Requests counts the requests that reached a count pipe.
	Requests uint64 `json:"requests"`
	// Responses counts responses by status class: "1xx" … "5xx".
	Responses map[string]uint64 `json:"responses"`
	// Bytes counts response body bytes that passed a count pipe.
	Bytes uint64 `json:"bytes"`
	// Errors counts responses whose body could not be delivered (the
	// client went away or stopped reading).
	Errors uint64 `json:"errors"`
	// UptimeSeconds is the time since the Stats were created.
	UptimeSeconds float64 `json:"uptime_seconds"`
	// Worker is the id of the worker process that answered, and Workers
	// every worker of its master; both are left out when the server
	// runs no workers (StatusOptions.Workers is nil).
	Worker  int            `json:"worker,omitempty"`
	Workers []WorkerStatus `json:"workers,omitempty"`
	// Databases is the load of the config's data sources, by name; left
	// out when it has none (StatusOptions.Databases is empty).
	Databases []DatabaseStatus `json:"databases,omitempty"`
	// Caches are the counters of the config's caches; left out when it
	// has none (StatusOptions.Caches is empty).
	Caches []CacheStatus `json:"caches,omitempty"`
}

// Snapshot returns the counters now. Each counter is read atomically; the
// set is not a single atomic view.
func (s *Stats) Snapshot() StatsSnapshot {
	snap := StatsSnapshot{
		Connections: -1,
		Requests:    s.requests.Load(),
		Responses:   make(map[string]uint64, len(s.classes)),
		Bytes:       s.bytes.Load(),
		Errors:      s.errors.Load(),
	}
	for i := range s.classes {
		snap.Responses[statusClassName(i)] = s.classes[i].Load()
	}
	if !s.start.IsZero() {
		snap.UptimeSeconds = time.Since(s.start).Seconds()
	}
	return snap
}

func statusClassName(i int) string { return strconv.Itoa(i+1) + "xx" }

// StatusOptions configures the status source. A config scalar
// (`status: prometheus`) sets Format.
type StatusOptions struct {
	// Format fixes the format: "html", "json" or "prometheus". Empty
	// chooses per request: the query parameter format=html|json|prometheus
	// first, then PrometheusPath, then the Accept field (application/json
	// → JSON; text/plain, as Prometheus scrapers ask → Prometheus); HTML
	// otherwise.
	Format string `yaml:"format"`

	// PrometheusPath is a request path answered in the Prometheus text
	// format (for instance "/metrics", routed to this source too).
	PrometheusPath string `yaml:"prometheus_path"`

	// Stats are the counters shown. Nil means DefaultStats. (Not settable
	// from a config file.)
	Stats *Stats `yaml:"-"`

	// Conns reports the open connections, typically the serving
	// engine.Server's OpenConns. Nil leaves the connection count out.
	// (Not settable from a config file.)
	Conns func() int `yaml:"-"`

	// Workers reports the worker processes, when the server runs some
	// (components.Context.Workers); nil leaves them out. (Not settable
	// from a config file.)
	Workers func() Workers `yaml:"-"`

	// Databases are the data sources whose load the page shows
	// (components.Context.Databases). (Not settable from a config file.)
	Databases map[string]*sqldata.DB `yaml:"-"`

	// Metrics returns the metrics the Prometheus format adds (per route,
	// runtime, process) of every process serving the config
	// (components.Context.Metrics); nil means this process's alone,
	// metrics.Take(metrics.Default). (Not settable from a config file.)
	Metrics func() []metrics.Snapshot `yaml:"-"`

	// Caches are the caches whose counters the page shows
	// (components.Context.Caches), read at each request. (Not settable
	// from a config file.)
	Caches *Caches `yaml:"-"`
}

// NewStatus returns the status Source: a page of the server counters (see
// Stats) as HTML, JSON (a StatsSnapshot) or the Prometheus text exposition
// format 0.0.4. Responses are marked Cache-Control: no-store. It is safe
// for concurrent use. With databases in the config it adds each one's
// load: queries running and waiting, and those shed (503) or timed out
// (504); with caches, each one's counters (see CacheStatus).
//
// Under a master with worker processes, the counters are those of the
// worker that answers, and the page adds every worker as the master last
// heard from it (see Workers): in Prometheus, the worker's own series are
// labelled worker="ID" and each worker has sluice_worker_* series.
//
// The Prometheus format adds the series of package metrics: each route's
// responses by status class and their latency (counted when the config
// has a status source), and the Go runtime's and the process's; under a
// master, every worker's, gathered through the master at the scrape and
// labelled worker="ID" (Context.Metrics).
func NewStatus(opts StatusOptions) (pipe.Component, error) {
	st := &status{opts: opts}
	if st.opts.Stats == nil {
		st.opts.Stats = DefaultStats
	}
	switch opts.Format {
	case "", "html", "json", "prometheus":
	default:
		return nil, fmt.Errorf("status: unknown format %q (want html, json or prometheus)", opts.Format)
	}
	if p := opts.PrometheusPath; p != "" && p[0] != '/' {
		return nil, fmt.Errorf("status: prometheus_path %q must start with /", p)
	}
	return pipe.Source(st.source), nil
}

type status struct{ opts StatusOptions }

func (st *status) source(c *pipe.Conn) pipe.Content {
	format := st.format(c)
	snap := st.opts.Stats.Snapshot()
	if st.opts.Conns != nil {
		snap.Connections = st.opts.Conns()
	}
	if st.opts.Workers != nil {
		ws := st.opts.Workers()
		snap.Worker, snap.Workers = ws.Self, ws.All
	}
	snap.Databases = databaseStatus(st.opts.Databases)
	snap.Caches = cacheStatus(st.opts.Caches)
	var b bytes.Buffer
	h := c.Header()
	switch format {
	case "json":
		h.Set("Content-Type", "application/json")
		json.NewEncoder(&b).Encode(snap)
	case "prometheus":
		h.Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		statusPrometheus(&b, &snap, st.opts.Stats)
		metrics.WriteText(&b, st.metrics(snap.Worker))
	default:
		h.Set("Content-Type", "text/html; charset=utf-8")
		statusHTML(&b, &snap)
	}
	if st.opts.Format == "" {
		h.Add("Vary", "Accept")
	}
	h.Set("Cache-Control", "no-store")
	h.SetContentLength(int64(b.Len()))
	return func(w pipe.Writer) error {
		_, err := w.Write(b.Bytes())
		return err
	}
}

// metrics returns the snapshots for the Prometheus format: every
// worker's, or this process's, labelled with worker when it is one.
func (st *status) metrics(worker int) []metrics.Snapshot {
	if st.opts.Metrics != nil {
		if snaps := st.opts.Metrics(); len(snaps) > 0 {
			return snaps
		}
	}
	s := metrics.Take(metrics.Default)
	s.Worker = worker
	return []metrics.Snapshot{s}
}

// format picks the format of one response.
func (st *status) format(c *pipe.Conn) string {
	if st.opts.Format != "" {
		return st.opts.Format
	}
	r := c.Request
	if len(r.Query) > 0 {
		if q, err := url.ParseQuery(string(r.Query)); err == nil {
			switch f := q.Get("format"); f {
			case "html", "json", "prometheus":
				return f
			}
		}
	}
	if p := st.opts.PrometheusPath; p != "" && string(r.Path) == p {
		return "prometheus"
	}
	accept := r.Header("Accept")
	switch {
	case bytes.Contains(accept, []byte("application/json")):
		return "json"
	case bytes.Contains(accept, []byte("text/html")):
		return "html"
	case bytes.Contains(accept, []byte("text/plain")), bytes.Contains(accept, []byte("application/openmetrics-text")):
		return "prometheus"
	}
	return "html"
}

// statusPrometheus writes the text exposition format by hand: a handful
// of counters in a small, stable format do not need client_golang and its
// dependencies.
func statusPrometheus(b *bytes.Buffer, s *StatsSnapshot, st *Stats) {
	// A worker's own series are labelled with its id: scrapes reach any
	// worker, and each worker's counters are a series of their own.
	var self, selfAnd string
	if s.Worker != 0 {
		self = fmt.Sprintf("{worker=\"%d\"}", s.Worker)
		selfAnd = fmt.Sprintf("worker=\"%d\",", s.Worker)
	}
	if s.Connections >= 0 {
		promMetric(b, "sluice_connections_open", "gauge", "Open client connections.")
		fmt.Fprintf(b, "sluice_connections_open%s %d\n", self, s.Connections)
	}
	promMetric(b, "sluice_requests_total", "counter", "Requests counted.")
	fmt.Fprintf(b, "sluice_requests_total%s %d\n", self, s.Requests)
	promMetric(b, "sluice_responses_total", "counter", "Responses by status class.")
	for i := range len(st.classes) {
		name := statusClassName(i)
		fmt.Fprintf(b, "sluice_responses_total{%sclass=%q} %d\n", selfAnd, name, s.Responses[name])
	}
	promMetric(b, "sluice_response_body_bytes_total", "counter", "Response body bytes counted.")
	fmt.Fprintf(b, "sluice_response_body_bytes_total%s %d\n", self, s.Bytes)
	promMetric(b, "sluice_response_errors_total", "counter", "Responses whose body could not be delivered.")
	fmt.Fprintf(b, "sluice_response_errors_total%s %d\n", self, s.Errors)
	promMetric(b, "sluice_uptime_seconds", "gauge", "Seconds since the counters started.")
	fmt.Fprintf(b, "sluice_uptime_seconds%s %.3f\n", self, s.UptimeSeconds)
	workersPrometheus(b, s.Workers)
	databasesPrometheus(b, selfAnd, s.Databases)
	cachesPrometheus(b, selfAnd, s.Caches)
}

func promMetric(b *bytes.Buffer, name, typ, help string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func statusHTML(b *bytes.Buffer, s *StatsSnapshot) {
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Sluice status</title>\n" +
		"<style>body{font-family:sans-serif;margin:2em}td,th{padding:.2em 1em;text-align:right}th{text-align:left}</style>\n" +
		"</head><body>\n<h1>Sluice status</h1>\n<table>\n")
	row := func(name string, v any) { fmt.Fprintf(b, "<tr><th>%s</th><td>%v</td></tr>\n", name, v) }
	if s.Connections >= 0 {
		row("Open connections", s.Connections)
	}
	row("Requests", s.Requests)
	for i := range 5 {
		name := statusClassName(i)
		row("Responses "+name, s.Responses[name])
	}
	row("Body bytes", s.Bytes)
	row("Delivery errors", s.Errors)
	row("Uptime", time.Duration(s.UptimeSeconds*float64(time.Second)).Truncate(time.Second))
	if s.Worker != 0 {
		row("Answered by worker", s.Worker)
	}
	b.WriteString("</table>\n")
	workersHTML(b, s.Workers)
	databasesHTML(b, s.Databases)
	cachesHTML(b, s.Caches)
	b.WriteString("</body></html>\n")
}
