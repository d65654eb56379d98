// Package report turns the benchmark harness's measurements into a
// Markdown report with PNG plots (gonum.org/v1/plot) and a JSON file of
// the raw samples.
package report

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Scenario identifiers, as used by the harness's --scenarios flag.
const (
	Warp      = "warp"      // 151-byte page, keep-alive, 1–1,000 connections
	Wrk       = "wrk"       // the same at 100 connections, measured by wrk
	Pipelined = "pipelined" // 151-byte page, 100 connections, 16 requests per write
	Webpipes  = "webpipes"  // 4 KB file, connection per request, rising open-loop rate
	AB        = "ab"        // ab -n 5000 -c 500
	C10K      = "c10k"      // 10,000 keep-alive connections, a mix of pages
	C10KWrk   = "c10k-wrk"  // wrk at 10,000 keep-alive connections, 151 B and 80 KB (X: page bytes)
	Sizes     = "sizes"     // file sizes 1 KB–1 MB
	Idle      = "idle"      // RSS per idle keep-alive connection
	Pipe      = "pipe"      // Chain vs ProcNetwork (go test -bench)

	// Mix is the C10K seed's mix: static, template and database pages
	// (package mixsite) at 10,000 keep-alive connections, the whole mix
	// served by Sluice and by a net/http program, its static part alone
	// by Sluice and nginx. MixSlowDB is the same with every query
	// delayed in the database. Their samples are by sluicebench's
	// generator, one per class of route (Sample.Class) and one for all
	// requests (Class ""); wrk's, for all requests, are of scenario
	// MixWrk. X is the number of connections.
	Mix       = "mix"
	MixSlowDB = "mix-slowdb"
	MixWrk    = "mix-wrk"

	// Proxy is the reverse-proxy scenario: the 151-byte page from one
	// upstream (an nginx on the client's core) through each proxy
	// (sluice-proxy, nginx-proxy, caddy-proxy, haproxy) at 100 keep-alive
	// connections. Its samples are sluicebench's generator's in a closed
	// loop; wrk's are of scenario ProxyWrk (X for both: the number of
	// connections), and the generator's at one fixed rate offered to
	// every proxy, in an open loop, of ProxyRate (X: that rate).
	Proxy     = "proxy"
	ProxyWrk  = "proxy-wrk"
	ProxyRate = "proxy-rate"

	// TLS is the TLS scenario: the 151-byte page from each server over
	// TLS with one ECDSA P-256 certificate (sluice-tls, nginx-tls,
	// h2o-tls, caddy-tls). It names the scenario on the command line; its
	// samples are of TLSH1 (wrk over TLS HTTP/1.1 keep-alive, X the
	// connections), TLSH2 (h2load over HTTP/2, X the connections), TLSFull
	// (full handshakes, one request each, no resumption; X the
	// connections opened at once) and TLSResumed (the same, each client
	// offering its last connection's session).
	TLS        = "tls"
	TLSH1      = "tls-h1"
	TLSH2      = "tls-h2"
	TLSFull    = "tls-handshake"
	TLSResumed = "tls-resumed"

	// PHP is the php scenario: Sluice, nginx and Caddy in turn in front
	// of one php-fpm pool (sluice-php, nginx-php, caddy-php). It names the
	// scenario on the command line; its samples are wrk's at 50
	// keep-alive connections (X: the connections) of PHPHello, a
	// few-byte hello.php, and PHPWordPress, WordPress's front page.
	PHP          = "php"
	PHPHello     = "php-hello"
	PHPWordPress = "php-wordpress"

	// Cache is the cache scenario: Sluice's cache component before its
	// proxy (sluice-cache), nginx's proxy_cache (nginx-cache) and Varnish
	// (varnish) in turn in front of one origin, with Sluice's proxy
	// alone (sluice-proxy) beside them on misses. It names the scenario
	// on the command line; its samples are wrk's at 100 keep-alive
	// connections of CacheHit (one URL, stored) and CacheMiss (every
	// request a distinct query, so a distinct key), X the object's size
	// in bytes.
	Cache     = "cache"
	CacheHit  = "cache-hit"
	CacheMiss = "cache-miss"

	// Workers is the master–worker scenario: Sluice at 0, 1, 2, 10 and
	// 100 workers, nginx at 1 and 2, Apache as Debian ships it. Its
	// samples are of three kinds, each its own Sample.Scenario, with X
	// the number of workers:
	Workers    = "workers"     // wrk -t1 -c100: requests/s and server CPU per request
	WorkersAB  = "workers-ab"  // ab -n 5000 -c 500, the master–worker paper's table
	WorkersMem = "workers-mem" // RSS and PSS of the master and of each worker
)

// Sample is one measurement: one server, one scenario point, one round.
type Sample struct {
	Scenario string  `json:"scenario"`
	Server   string  `json:"server"`
	Round    int     `json:"round"`
	X        float64 `json:"x"` // connections, attempted rate, file size or depth

	Attempted float64 `json:"attempted,omitempty"` // open loop: requests/s scheduled
	RPS       float64 `json:"rps"`                 // successful responses per second
	OK        int64   `json:"ok"`
	Errors    int64   `json:"errors"`
	ErrorText string  `json:"error_text,omitempty"` // breakdown and first error
	CPUus     float64 `json:"cpu_us_per_req"`       // server CPU-µs per successful request
	RSS       int64   `json:"rss"`                  // server RSS at the end, bytes
	MBps      float64 `json:"mb_per_s,omitempty"`   // response bytes per second / 1e6
	P50ms     float64 `json:"p50_ms"`
	P99ms     float64 `json:"p99_ms"`
	MeanMs    float64 `json:"mean_ms"`
	MaxMs     float64 `json:"max_ms"`
	PerConn   float64 `json:"rss_per_conn,omitempty"` // idle: bytes of RSS per connection
	Tool      string  `json:"tool"`                   // sluicebench, wrk or ab

	// Mix scenarios: the class of route the sample covers ("static",
	// "template", "dynamic"; "" for all requests), and the 503 responses
	// of a server shedding load in the slow-database run (not counted
	// in Errors there; counted as errors elsewhere).
	Class string `json:"class,omitempty"`
	Shed  int64  `json:"shed,omitempty"`

	// Proxy scenarios: the connections the upstream accepted during the
	// run (none when the proxy kept its keep-alive pool; -1 if not
	// known), the upstream's CPU-µs per successful request, and how busy
	// the client's core was, in percent: the load generator's and the
	// upstream's CPU time (they share it) over the run's time.
	UpstreamConns int64   `json:"upstream_conns,omitempty"`
	UpstreamCPUus float64 `json:"upstream_cpu_us_per_req,omitempty"`
	ClientBusy    float64 `json:"client_busy,omitempty"`

	// wrk runs: how busy the client's and the server's pinned cores were
	// over the run, in percent of the time they ran (from /proc/stat: any
	// process's work and the kernel's, softirq included; time stolen by a
	// hypervisor left out); 0 if not measured. Unlike the server's CPU
	// time, these count the network stack's work wherever it ran: a
	// client core near 100 % set the pace of the run.
	ClientCore float64 `json:"client_core,omitempty"`
	ServerCore float64 `json:"server_core,omitempty"`

	// PHP scenarios: the php-fpm pool's CPU-µs per successful request
	// over the run (its master and children), beside the server's.
	FPMCPUus float64 `json:"fpm_cpu_us_per_req,omitempty"`

	// Cache scenarios: the CPU-µs per successful request of every
	// process of the server's tree (CPUus counts the processes that
	// serve: nginx's workers without its master and cache manager), and
	// the requests the origin answered during the run (-1 if not known).
	TreeCPUus      float64 `json:"tree_cpu_us_per_req,omitempty"`
	OriginRequests int64   `json:"origin_requests,omitempty"`

	// TLS handshake scenarios (TLSFull, TLSResumed): the connections
	// whose handshake resumed a session (none for TLSFull; for
	// TLSResumed, all but each client's first if the server resumes).
	Resumed int64 `json:"resumed,omitempty"`

	// Workers scenario (WorkersMem): the server's processes right after
	// every worker is up, and after the load runs.
	Fresh  *TreeMemory `json:"fresh,omitempty"`
	Loaded *TreeMemory `json:"loaded,omitempty"`
}

// ProcMem is one process's resident memory, in bytes: RSS, and PSS (each
// shared page divided by the processes sharing it, so that the PSS of
// every process adds up to what they hold together).
type ProcMem struct {
	RSS int64 `json:"rss"`
	PSS int64 `json:"pss"`
}

// TreeMemory is the memory of a server's processes at one moment: the
// process the harness started (the master; the only process without
// workers) and each of its descendants.
type TreeMemory struct {
	Master  ProcMem   `json:"master"`
	Workers []ProcMem `json:"workers,omitempty"`
}

// Total sums the master and the workers.
func (t TreeMemory) Total() ProcMem {
	sum := t.Master
	for _, w := range t.Workers {
		sum.RSS += w.RSS
		sum.PSS += w.PSS
	}
	return sum
}

// PeerInfo describes one server of the run.
type PeerInfo struct {
	Name    string `json:"name"`
	About   string `json:"about"`
	Version string `json:"version,omitempty"`
	Skipped string `json:"skipped,omitempty"` // why it did not run
	Command string `json:"command,omitempty"`
	Config  string `json:"config,omitempty"`

	// Base and Workers describe a variant of the workers scenario: the
	// peer it runs (sluice, nginx, apache-default) with Workers worker
	// processes (for sluice 0 is one process; Apache manages its own).
	Base    string `json:"base,omitempty"`
	Workers int    `json:"workers,omitempty"`
}

// Report is everything a run produced.
type Report struct {
	Command   string        `json:"command"`   // the command line that produced it
	Reproduce string        `json:"reproduce"` // the command prefix for one figure, e.g. "go -C bench run ./cmd/sluicebench"
	Started   time.Time     `json:"started"`
	Took      time.Duration `json:"took"`
	Rounds    int           `json:"rounds"`
	Duration  time.Duration `json:"duration"` // per measured run
	Sweep     time.Duration `json:"sweep"`    // per point of a sweep
	Quick     bool          `json:"quick"`
	Machine   []string      `json:"machine"` // "key: value" lines
	Peers     []PeerInfo    `json:"peers"`
	Samples   []Sample      `json:"samples"`
	Notes     []string      `json:"notes"`
	PipeBench string        `json:"pipe_bench,omitempty"` // go test -bench Pipeline output
	Scenarios []string      `json:"scenarios"`            // the scenarios that ran

	SlowQuery time.Duration `json:"slow_query,omitempty"` // mix-slowdb: the database's delay per query

	ProxyIdleConns int `json:"proxy_idle_conns,omitempty"` // proxy: the idle keep-alive connections each proxy may keep to the upstream

	C10KWrkConns int `json:"c10k_wrk_conns,omitempty"` // c10k-wrk: wrk's connections

	PHPChildren int    `json:"php_children,omitempty"` // php: the php-fpm pool's static children
	PHPOpcache  string `json:"php_opcache,omitempty"`  // php: "on" or "off", as the pool reported OPcache

	PHPWordPressRun time.Duration `json:"php_wordpress_run,omitempty"` // php: the length of a run on WordPress's front page (longer than Duration)

	ClientCPU  string `json:"client_cpu,omitempty"`  // CPU list of the client (taskset)
	WorkersCPU string `json:"workers_cpu,omitempty"` // CPU list of the servers in the workers scenario
}

// Stat is the median of a figure over rounds, with its range.
type Stat struct{ Med, Min, Max float64 }

func stat(v []float64) Stat {
	if len(v) == 0 {
		return Stat{}
	}
	v = slices.Clone(v)
	sort.Float64s(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Stat{Med: m, Min: v[0], Max: v[len(v)-1]}
}

// Point aggregates the rounds of one server at one scenario point.
type Point struct {
	Server string
	X      float64
	Rounds []Sample
}

// Of returns the median, minimum and maximum of f over the rounds,
// leaving out rounds where f is NaN (not measured); NaN if all are.
func (p Point) Of(f func(Sample) float64) Stat {
	var v []float64
	for _, s := range p.Rounds {
		if x := f(s); !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 && len(p.Rounds) > 0 {
		return Stat{math.NaN(), math.NaN(), math.NaN()}
	}
	return stat(v)
}

// Errors sums the errors over the rounds.
func (p Point) Errors() (errs, total int64) {
	for _, s := range p.Rounds {
		errs += s.Errors
		total += s.OK + s.Errors
	}
	return errs, total
}

// Points groups the samples of a scenario by server (in the order of
// servers) and X (ascending); of a mix scenario, those for all requests
// (Sample.Class "").
func (r *Report) Points(scenario string, servers []string) []Point {
	return r.ClassPoints(scenario, "", servers)
}

// ClassPoints is Points for the samples of one class of route.
func (r *Report) ClassPoints(scenario, class string, servers []string) []Point {
	var pts []Point
	for _, srv := range servers {
		byX := map[float64][]Sample{}
		for _, s := range r.Samples {
			if s.Scenario == scenario && s.Server == srv && s.Class == class {
				byX[s.X] = append(byX[s.X], s)
			}
		}
		var xs []float64
		for x := range byX {
			xs = append(xs, x)
		}
		sort.Float64s(xs)
		for _, x := range xs {
			pts = append(pts, Point{Server: srv, X: x, Rounds: byX[x]})
		}
	}
	return pts
}

// Servers returns the names of the peers that ran, in report order.
func (r *Report) Servers() []string {
	var names []string
	for _, p := range r.Peers {
		if p.Skipped == "" {
			names = append(names, p.Name)
		}
	}
	return names
}

// Commit returns the commit of the checkout the report was measured
// from, as its Machine lines give it ("sluice commit: 45cd051-dirty"), or
// "" if they do not.
func (r *Report) Commit() string {
	for _, m := range r.Machine {
		if c, ok := strings.CutPrefix(m, "sluice commit: "); ok {
			return c
		}
	}
	return ""
}

// Xs returns the distinct X values of a scenario, ascending.
func (r *Report) Xs(scenario string) []float64 {
	seen := map[float64]bool{}
	var xs []float64
	for _, s := range r.Samples {
		if s.Scenario == scenario && !seen[s.X] {
			seen[s.X] = true
			xs = append(xs, s.X)
		}
	}
	sort.Float64s(xs)
	return xs
}
