package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-server/sluice/bench/load"
	"github.com/sluice-server/sluice/bench/peers"
	"github.com/sluice-server/sluice/bench/report"
)

// Scenario parameters.
var (
	warpConns     = []int{1, 10, 100, 1000}
	webpipesRates = []float64{2000, 5000, 10000, 15000, 20000, 30000}
)

// c10kPages are the pages of the c10k-wrk scenario.
var c10kPages = []struct {
	name string
	path string
	size int
}{
	{"151 B", pathIndex, 151},
	{"80 KB", sizePath(c10kFile), c10kFile},
}

const (
	kaConns      = 100 // keep-alive, pipelined and wrk runs
	pipeDepth    = 16
	abRequests   = 5000
	abConcurrent = 500
	sizeConns    = 10
	webpipesPool = 1000 // open-loop workers (connections in flight at most)
)

func (h *harness) has(sc string) bool { return slices.Contains(h.o.scenarios, sc) }

// idlePoints are the idle-memory connection counts.
func (h *harness) idlePoints() []int {
	pts := []int{1000, h.o.maxConns}
	if h.o.maxConns <= 1000 {
		pts = []int{h.o.maxConns}
	}
	return pts
}

// run measures every server in every round and writes the report; it
// returns the report's path.
func (h *harness) run() (string, error) {
	if h.o.quick {
		warpConns = []int{1, 100, 1000}
		webpipesRates = []float64{2000, 10000, 30000}
		sizes = []int{1 << 10, 100 << 10, 1 << 20}
	}
	// Steps: one per measured run, for the progress bar.
	per := 0
	for _, sc := range h.o.scenarios {
		switch sc {
		case report.Warp:
			per += len(warpConns)
		case report.Webpipes:
			per += len(webpipesRates)
		case report.Sizes:
			per += len(sizes)
		case report.Idle:
			per += len(h.idlePoints())
		case report.C10KWrk:
			per += len(c10kPages)
		case report.Pipe, report.Workers, report.Mix, report.MixSlowDB, report.Proxy, report.TLS, report.PHP, report.Cache:
		default:
			per++
		}
	}
	h.prog.total = per*len(h.peers)*h.o.rounds + h.workersSteps() + h.mixSteps() + h.proxySteps() + h.tlsSteps() + h.phpSteps() + h.cacheSteps() + 1
	h.prog.logf("%d server(s) × %d round(s), client on CPU %s, servers on CPU %s; scratch %s",
		len(h.peers), h.o.rounds, h.o.clientCPU, h.o.serverCPU, h.tmp)
	if h.has(report.Workers) {
		h.prog.logf("workers scenario: %d variant(s) × %d round(s), servers on CPUs %s", len(h.workerVariants()), h.o.rounds, h.o.workersCPU)
	}
	if !h.hasWrk() && h.has(report.Proxy) {
		h.note("wrk is not installed: the proxy scenario is measured by sluicebench's generator alone.")
	}
	if !h.hasWrk() && h.has(report.Mix) {
		h.note("wrk is not installed: the mix scenario is measured by sluicebench's generator alone.")
	}
	if !h.hasWrk() && h.has(report.Wrk) {
		h.note("wrk is not installed: no wrk cross-check.")
	}
	if h.has(report.C10KWrk) {
		if h.hasWrk() {
			h.rep.C10KWrkConns = h.o.maxConns
		} else {
			h.note("wrk is not installed: the c10k-wrk scenario is skipped.")
		}
	}
	if !h.hasWrk() && h.has(report.Workers) {
		h.note("wrk is not installed: the workers scenario's keep-alive runs use sluicebench's generator (100 connections) instead.")
	}
	if _, err := exec.LookPath("ab"); err != nil && (h.has(report.AB) || h.has(report.Workers)) {
		h.note("ab (apache2-utils) is not installed: the ab -n 5000 -c 500 table is measured with sluicebench's generator in the same shape (5,000 requests, 500 at a time, a connection each).")
	}

	watch, stopWatch := context.WithCancel(h.ctx)
	defer stopWatch()
	done := make(chan struct{})
	go func() { h.watchLoad(watch); close(done) }()
	for round := 1; round <= h.o.rounds; round++ {
		for _, p := range inTurn(h.peers, round) {
			if err := h.serverRound(p, round); err != nil {
				return "", err
			}
		}
	}
	if h.has(report.Workers) {
		if err := h.workers(); err != nil {
			return "", err
		}
	}
	if h.has(report.Mix) || h.has(report.MixSlowDB) {
		if err := h.mixScenarios(); err != nil {
			return "", err
		}
	}
	if h.has(report.Proxy) {
		if err := h.proxyScenario(); err != nil {
			return "", err
		}
	}
	if h.has(report.TLS) {
		if err := h.tlsScenario(); err != nil {
			return "", err
		}
	}
	if h.has(report.PHP) {
		if err := h.phpScenario(); err != nil {
			return "", err
		}
	}
	if h.has(report.Cache) {
		if err := h.cacheScenario(); err != nil {
			return "", err
		}
	}
	stopWatch()
	<-done
	if h.has(report.Pipe) {
		h.pipeBench()
	}
	h.machine()
	// Other work competed for the CPUs if processes outside this run
	// used a noticeable share of a core; where that is unknown, a load
	// average well above the two busy cores' (client and server) says so.
	switch {
	case h.others > quietOthers:
		h.note("The machine was not quiet: processes outside this run used %.0f %% of a core on average during it (the 1-minute load average ranged %.1f–%.1f), so they competed with the client and the servers and the figures are noisier than the method intends; rerun on an idle machine before quoting them.", 100*h.others, h.loadMin, h.loadMax)
	case h.others < 0 && h.loadMax > 3:
		h.note("The machine was not quiet: the 1-minute load average ranged %.1f–%.1f during the run (a quiet run stays near 2), so other processes competed for both cores and the figures are noisier than the method intends; rerun on an idle machine before quoting them.", h.loadMin, h.loadMax)
	}
	h.rep.Took = time.Since(h.rep.Started).Round(time.Second)
	h.prog.step("writing the report")
	path, err := report.Write(h.o.out, &h.rep)
	if err != nil {
		return "", err
	}
	return path, nil
}

// serverRound runs every scenario once against peer p.
func (h *harness) serverRound(p peers.Peer, round int) error {
	tag := fmt.Sprintf("round %d/%d %s", round, h.o.rounds, p.Name)
	loaded := slices.ContainsFunc(h.o.scenarios, func(s string) bool {
		return s != report.Idle && s != report.Pipe && s != report.Workers && s != report.Mix && s != report.MixSlowDB && s != report.Proxy && s != report.TLS && s != report.PHP && s != report.Cache
	})
	if loaded {
		srv, err := h.startWarm(p, fmt.Sprint(round))
		if err != nil {
			h.note("%s: %v", tag, err)
			return h.ctx.Err()
		}
		steps := []struct {
			sc  string
			run func(srv *peers.Server)
		}{
			{report.Warp, func(srv *peers.Server) {
				for _, c := range warpConns {
					h.step(tag, fmt.Sprintf("warp c=%d", c))
					h.measure(srv, report.Warp, round, float64(c), load.Config{Paths: []string{pathIndex}, Conns: c, Duration: h.o.sweep})
				}
			}},
			{report.Wrk, func(srv *peers.Server) { h.step(tag, "wrk c=100"); h.wrk(srv, report.Wrk, round, kaConns) }},
			{report.Pipelined, func(srv *peers.Server) {
				h.step(tag, "pipelined ×16")
				h.measure(srv, report.Pipelined, round, pipeDepth, load.Config{Paths: []string{pathIndex}, Conns: kaConns, Pipeline: pipeDepth, Duration: h.o.duration})
			}},
			{report.Webpipes, func(srv *peers.Server) {
				for _, rate := range webpipesRates {
					h.step(tag, fmt.Sprintf("webpipes %.0f/s", rate))
					h.measure(srv, report.Webpipes, round, rate, load.Config{Paths: []string{pathWebpipes}, Conns: webpipesPool,
						Close: true, Rate: rate, Duration: h.o.sweep, Timeout: 2 * time.Second})
					// Let an overloaded server drain abandoned connections
					// before the next rate.
					time.Sleep(time.Second)
				}
			}},
			{report.AB, func(srv *peers.Server) { h.step(tag, "ab -n 5000 -c 500"); h.ab(srv, report.AB, round, abConcurrent) }},
			{report.C10K, func(srv *peers.Server) {
				h.step(tag, fmt.Sprintf("c10k %d conns", h.o.maxConns))
				h.measure(srv, report.C10K, round, float64(h.o.maxConns), load.Config{
					Paths: []string{pathIndex, pathTemplate, pathDynamic}, Conns: h.o.maxConns,
					Duration: h.o.duration, Timeout: 10 * time.Second, DialConcurrency: 500})
			}},
			{report.C10KWrk, func(srv *peers.Server) {
				for _, pg := range c10kPages {
					h.step(tag, fmt.Sprintf("c10k-wrk %s c=%d", pg.name, h.o.maxConns))
					if !h.hasWrk() || !srv.Alive() {
						continue
					}
					// The last run's connections (the c10k
					// scenario's, the 151 B page's) closed, so
					// that a server at its connection limit does
					// not refuse the next run's for them.
					h.settle(srv, fmt.Sprintf("c10k-wrk %s", pg.name))
					if s, _, ok := h.wrkRun(srv, report.C10KWrk, round, float64(pg.size), h.o.maxConns,
						"http://"+srv.Env.Addr()+pg.path, "--timeout", "10s"); ok {
						h.add(s)
					}
				}
			}},
			{report.Sizes, func(srv *peers.Server) {
				for _, n := range sizes {
					h.step(tag, fmt.Sprintf("size %d B", n))
					h.measure(srv, report.Sizes, round, float64(n), load.Config{Paths: []string{sizePath(n)}, Conns: sizeConns, Duration: h.o.sweep})
				}
			}},
		}
		for _, s := range steps {
			if !h.has(s.sc) {
				continue
			}
			if h.ctx.Err() != nil {
				break
			}
			if !srv.Alive() {
				h.note("%s: the server died before %s; restarted", tag, s.sc)
				h.stop()
				if srv, err = h.startWarm(p, fmt.Sprint(round)+"-"+s.sc); err != nil {
					h.note("%s: %v", tag, err)
					break
				}
			}
			s.run(srv)
		}
		h.stop()
	}
	if h.has(report.Idle) {
		for _, n := range h.idlePoints() {
			if h.ctx.Err() != nil {
				break
			}
			h.step(tag, fmt.Sprintf("idle %d conns", n))
			h.idle(p, round, n)
		}
	}
	return h.ctx.Err()
}

func (h *harness) step(tag, what string) { h.prog.step(tag + ": " + what) }

// hasWrk reports whether wrk is installed.
func (h *harness) hasWrk() bool {
	_, err := exec.LookPath("wrk")
	return err == nil
}

// startWarm starts p and warms it up for a second at 100 connections.
func (h *harness) startWarm(p peers.Peer, label string) (*peers.Server, error) {
	srv, err := h.start(p, label)
	if err != nil {
		return nil, err
	}
	warm := time.Second
	if h.o.quick {
		warm = 300 * time.Millisecond
	}
	load.Run(h.ctx, load.Config{Addr: srv.Env.Addr(), Paths: []string{pathIndex}, Conns: kaConns, Duration: warm})
	return srv, nil
}

// measure runs the generator against srv and records a sample, with the
// server's CPU time over the clock's run.
func (h *harness) measure(srv *peers.Server, sc string, round int, x float64, cfg load.Config) {
	if s, ok := h.measureSample(srv, sc, round, x, cfg); ok {
		h.add(s)
	}
}

// measureSample is measure without recording: it returns the sample, or
// false if the run failed (noted).
func (h *harness) measureSample(srv *peers.Server, sc string, round int, x float64, cfg load.Config) (report.Sample, bool) {
	cfg.Addr = srv.Env.Addr()
	var u0 peers.Usage
	cfg.Started = func() { u0, _ = srv.Usage() }
	res, err := load.Run(h.ctx, cfg)
	if err != nil {
		h.note("%s %s: %v", srv.Peer.Name, sc, err)
		return report.Sample{}, false
	}
	u1, _ := srv.Usage()
	s := report.Sample{
		Scenario: sc, Server: srv.Peer.Name, Round: round, X: x, Tool: "sluicebench",
		RPS: res.RPS(), OK: res.OK, Errors: res.Errors.Total(), RSS: u1.RSS,
		MBps:  float64(res.Bytes) / res.Elapsed.Seconds() / 1e6,
		P50ms: ms(res.Latency.Quantile(0.5)), P99ms: ms(res.Latency.Quantile(0.99)),
		MeanMs: ms(res.Latency.Mean()), MaxMs: ms(res.Latency.Max()),
	}
	if cfg.Rate > 0 {
		s.Attempted = float64(res.Attempted) / cfg.Duration.Seconds()
	}
	if res.OK > 0 {
		s.CPUus = float64((u1.CPU - u0.CPU).Microseconds()) / float64(res.OK)
	}
	if s.Errors > 0 {
		s.ErrorText = fmt.Sprintf("%v; first: %v", res.Errors, res.FirstError)
		if res.Conns < cfg.Conns && !cfg.Close {
			s.ErrorText = fmt.Sprintf("%d of %d connections opened; %s", res.Conns, cfg.Conns, s.ErrorText)
		}
	}
	return s, true
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// memLine summarises a TreeMemory for the log: total PSS, the master's,
// and the workers' mean.
func memLine(t *report.TreeMemory) string {
	if t == nil {
		return "?"
	}
	line := fmt.Sprintf("PSS %.1f MB (master %.1f MB", float64(t.Total().PSS)/1e6, float64(t.Master.PSS)/1e6)
	if n := len(t.Workers); n > 0 {
		line += fmt.Sprintf(", %d workers %.1f MB each", n, float64(t.Total().PSS-t.Master.PSS)/float64(n)/1e6)
	}
	return line + ")"
}

// add records a sample and logs it.
func (h *harness) add(s report.Sample) {
	h.rep.Samples = append(h.rep.Samples, s)
	line := fmt.Sprintf("r%d %-14s %-9s x=%-8g %9.0f req/s %6.1f CPU-µs/req p99 %7.2f ms rss %6.1f MB errors %d",
		s.Round, s.Server, s.Scenario, s.X, s.RPS, s.CPUus, s.P99ms, float64(s.RSS)/1e6, s.Errors)
	if s.Scenario == report.Idle {
		line = fmt.Sprintf("r%d %-14s idle      n=%-8g %6.0f B/conn, %d answered", s.Round, s.Server, s.X, s.PerConn, s.OK)
	}
	if s.Scenario == report.WorkersMem {
		line = fmt.Sprintf("r%d %-14s memory: after load %s", s.Round, s.Server, memLine(s.Loaded))
		if s.Fresh != nil {
			line += "; fresh " + memLine(s.Fresh)
		}
	}
	if s.ErrorText != "" {
		line += " (" + s.ErrorText + ")"
	}
	h.prog.logf("%s", line)
}

// idle measures the RSS a fresh server spends per idle keep-alive
// connection, with n connections each having made one request; then each
// speaks again and must be answered.
func (h *harness) idle(p peers.Peer, round, n int) {
	srv, err := h.start(p, fmt.Sprintf("%d-idle%d", round, n))
	if err != nil {
		h.note("%s idle: %v", p.Name, err)
		return
	}
	defer h.stop()
	// A few requests first, so lazily allocated state exists.
	warm := load.Hold(h.ctx, srv.Env.Addr(), pathIndex, 20, 20, 5*time.Second)
	warm.Close()
	time.Sleep(time.Second)
	u0, err := srv.Usage()
	if err != nil {
		h.note("%s idle: %v", p.Name, err)
		return
	}
	held := load.Hold(h.ctx, srv.Env.Addr(), pathIndex, n, 500, 10*time.Second)
	defer held.Close()
	// Measure soon: servers (Sluice included) tighten idle timeouts when
	// crowded, and this is a figure of memory, not of patience.
	time.Sleep(500 * time.Millisecond)
	u1, _ := srv.Usage()
	idle := held.OK
	held.Again(h.ctx, 500, 10*time.Second)
	s := report.Sample{Scenario: report.Idle, Server: p.Name, Round: round, X: float64(n), Tool: "sluicebench",
		OK: int64(held.OK), Errors: int64(held.Failed), RSS: u1.RSS}
	if idle > 0 {
		s.PerConn = float64(u1.RSS-u0.RSS) / float64(idle)
	}
	if held.Failed > 0 {
		s.ErrorText = fmt.Sprintf("%d failed; first: %v", held.Failed, held.Err)
	}
	h.add(s)
}

// wrk runs wrk -t1 -c100 against srv's 151-byte page and records it as
// a sample of scenario sc at x.
func (h *harness) wrk(srv *peers.Server, sc string, round int, x float64) {
	if s, _, ok := h.wrkSample(srv, sc, round, x); ok {
		h.add(s)
	}
}

// wrkSample is wrk without recording: it returns the sample and what wrk
// itself used, or false if wrk is not installed or failed (noted).
func (h *harness) wrkSample(srv *peers.Server, sc string, round int, x float64) (report.Sample, clientRun, bool) {
	return h.wrkRun(srv, sc, round, x, kaConns, "http://"+srv.Env.Addr()+pathIndex)
}

// wrkRun runs "wrk -t1 -c<conns> -d<duration> --latency args... url" on
// the client CPU and returns its sample of scenario sc at x, with the
// server's CPU per successful response over wrk's run, and what wrk
// itself used; false if wrk is not installed or failed (noted). wrk
// inherits the harness's descriptor limit (raiseNofile), so conns may be
// up to that limit less a few.
func (h *harness) wrkRun(srv *peers.Server, sc string, round int, x float64, conns int, url string, args ...string) (report.Sample, clientRun, bool) {
	if _, err := exec.LookPath("wrk"); err != nil {
		return report.Sample{}, clientRun{}, false
	}
	secs := max(int(h.o.duration.Seconds()), 1)
	argv := append([]string{"-t1", fmt.Sprintf("-c%d", conns), fmt.Sprintf("-d%ds", secs), "--latency"}, args...)
	clientCPUs, serverCPUs := cpuList(h.o.clientCPU), cpuList(h.o.serverCPU)
	c0, okc := readCoreTimes(clientCPUs)
	s0, oks := readCoreTimes(serverCPUs)
	u0, _ := srv.Usage()
	run, err := h.clientRun(time.Duration(secs+60)*time.Second, "wrk", append(argv, url)...)
	u1, _ := srv.Usage()
	c1, okc1 := readCoreTimes(clientCPUs)
	s1, oks1 := readCoreTimes(serverCPUs)
	if err != nil {
		h.note("%s %s: wrk: %v: %s", srv.Peer.Name, sc, err, lastLines(run.out, 3))
		return report.Sample{}, clientRun{}, false
	}
	res := parseWrk(run.out)
	s := report.Sample{Scenario: sc, Server: srv.Peer.Name, Round: round, X: x, Tool: "wrk", RSS: u1.RSS,
		RPS: res.rps, OK: res.requests - res.non2xx, Errors: res.socketErrors + res.non2xx,
		P50ms: res.p50ms, P99ms: res.p99ms, MeanMs: res.meanMs, MaxMs: res.maxMs}
	if s.OK > 0 {
		s.CPUus = float64((u1.CPU - u0.CPU).Microseconds()) / float64(s.OK)
	}
	if s.Errors > 0 {
		s.ErrorText = res.errText
	}
	// The cores' share of busy time means something only while client
	// and server each have their own.
	if h.pinned && okc && okc1 {
		s.ClientCore = max(busyPercent(c0, c1), 0)
	}
	if h.pinned && oks && oks1 {
		s.ServerCore = max(busyPercent(s0, s1), 0)
	}
	return s, run, true
}

// settle waits, at most 15 s, until srv holds no connection, for a run
// (what) that opens as many as the server may hold; it notes if some
// remain.
func (h *harness) settle(srv *peers.Server, what string) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		n, err := serverConns(srv.Env.Port)
		if err != nil || n == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.note("%s %s: %d connections of the run before were still open on the server after 15 s", srv.Peer.Name, what, n)
			return
		}
		if h.ctx.Err() != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serverConns counts the TCP connections on 127.0.0.1 whose local port
// is port (a server's side of them), from /proc/net/tcp, in every state
// but LISTEN and TIME_WAIT: those the server still holds a socket for.
func serverConns(port int) (int, error) {
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return 0, err
	}
	return countConns(string(data), port), nil
}

// countConns is serverConns on the text of /proc/net/tcp.
func countConns(table string, port int) int {
	local := fmt.Sprintf("0100007F:%04X", port)
	n := 0
	for line := range strings.SplitSeq(table, "\n") {
		f := strings.Fields(line)
		// sl local_address rem_address st ...; st 0A is LISTEN, 06 TIME_WAIT.
		if len(f) > 3 && f[1] == local && f[3] != "0A" && f[3] != "06" {
			n++
		}
	}
	return n
}

// wrkResult is what parseWrk reads from wrk's report.
type wrkResult struct {
	requests     int64 // responses read, whatever their status
	socketErrors int64 // connect, read, write and timeout errors
	non2xx       int64 // responses other than 2xx or 3xx
	rps          float64
	p50ms, p99ms float64 // from --latency's distribution
	meanMs       float64
	maxMs        float64
	errText      string // wrk's lines about errors, if any
}

// parseWrk parses the report of wrk --latency.
func parseWrk(out string) wrkResult {
	r := wrkResult{
		requests: int64(num(out, `(\d+) requests in`)),
		non2xx:   int64(num(out, `Non-2xx or 3xx responses:\s+(\d+)`)),
		rps:      num(out, `Requests/sec:\s+([\d.]+)`),
		// Anchored: the "+/- Stdev" column ends in "%" too (98.99%).
		p50ms:  wrkDur(out, `(?m)^\s+50%\s+(\S+)`),
		p99ms:  wrkDur(out, `(?m)^\s+99%\s+(\S+)`),
		meanMs: wrkDur(out, `Latency\s+(\S+)`),
		maxMs:  wrkDur(out, `Latency\s+\S+\s+\S+\s+(\S+)`),
	}
	var errText []string
	if m := regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`).FindStringSubmatch(out); m != nil {
		for _, v := range m[1:] {
			n, _ := strconv.ParseInt(v, 10, 64)
			r.socketErrors += n
		}
		errText = append(errText, m[0])
	}
	if r.non2xx > 0 {
		errText = append(errText, fmt.Sprintf("%d non-2xx or 3xx responses", r.non2xx))
	}
	r.errText = strings.Join(errText, "; ")
	return r
}

// ab runs ab -n 5000 -c 500 (the master–worker paper's test) and records
// it as a sample of scenario sc at x; or, if ab is not installed, the
// generator in the same shape.
func (h *harness) ab(srv *peers.Server, sc string, round int, x float64) {
	if _, err := exec.LookPath("ab"); err != nil {
		h.measure(srv, sc, round, x, load.Config{Paths: []string{pathIndex}, Conns: abConcurrent,
			Requests: abRequests, Close: true, Timeout: 30 * time.Second, Duration: 2 * time.Minute})
		return
	}
	u0, _ := srv.Usage()
	// -r: carry on after socket errors (counted as failed), as the paper's
	// table, which lists failed requests, implies.
	out, err := h.client(3*time.Minute, "ab", "-r", "-s", "30", "-n", strconv.Itoa(abRequests), "-c", strconv.Itoa(abConcurrent),
		"http://"+srv.Env.Addr()+pathIndex)
	u1, _ := srv.Usage()
	res, perr := parseAB(out)
	if perr != nil {
		if err == nil {
			err = perr
		}
		h.note("%s ab: %v: %s", srv.Peer.Name, err, lastLines(out, 3))
		return
	}
	s := report.Sample{Scenario: sc, Server: srv.Peer.Name, Round: round, X: x, Tool: "ab", RSS: u1.RSS,
		RPS: res.rps, MeanMs: res.meanMs, MBps: res.kbps * 1024 / 1e6, P50ms: res.p50ms, P99ms: res.p99ms, MaxMs: res.maxMs}
	s.OK = res.complete - res.failed - res.non2xx
	s.Errors = res.failed + res.non2xx + (abRequests - res.complete)
	if s.OK > 0 {
		s.CPUus = float64((u1.CPU - u0.CPU).Microseconds()) / float64(s.OK)
	}
	if s.Errors > 0 {
		s.ErrorText = res.failedText
		if res.non2xx > 0 {
			s.ErrorText += fmt.Sprintf("; %d non-2xx responses", res.non2xx)
		}
		if res.complete < abRequests {
			s.ErrorText += fmt.Sprintf("; %d of %d requests completed", res.complete, abRequests)
		}
	}
	h.add(s)
}

// abResult is what parseAB reads from ab's report.
type abResult struct {
	complete, failed, non2xx int64
	rps                      float64 // Requests per second
	meanMs                   float64 // Time per request (mean): concurrency × elapsed / requests
	acrossMs                 float64 // Time per request (mean, across all concurrent requests): elapsed / requests
	kbps                     float64 // Transfer rate, in ab's Kbytes (1,024 bytes) per second
	p50ms, p99ms, maxMs      float64
	failedText               string // "Failed requests: N" and ab's breakdown of them, if any failed
}

// parseAB parses the report ab prints; it fails if ab printed none (it
// gave up before the end).
func parseAB(out string) (abResult, error) {
	if !strings.Contains(out, "Requests per second:") {
		return abResult{}, errors.New("ab printed no report")
	}
	r := abResult{
		complete: int64(num(out, `Complete requests:\s+(\d+)`)),
		failed:   int64(num(out, `Failed requests:\s+(\d+)`)),
		non2xx:   int64(num(out, `Non-2xx responses:\s+(\d+)`)),
		rps:      num(out, `Requests per second:\s+([\d.]+)`),
		meanMs:   num(out, `Time per request:\s+([\d.]+) \[ms\] \(mean\)`),
		acrossMs: num(out, `Time per request:\s+([\d.]+) \[ms\] \(mean, across all concurrent requests\)`),
		kbps:     num(out, `Transfer rate:\s+([\d.]+)`),
		p50ms:    num(out, `\n\s+50%\s+(\d+)`),
		p99ms:    num(out, `\n\s+99%\s+(\d+)`),
		maxMs:    num(out, `\n\s+100%\s+(\d+)`),
	}
	if r.failed > 0 {
		r.failedText = strings.Join(strings.Fields(regexp.MustCompile(`Failed requests:.*\n(?:\s+\(.*\n)?`).FindString(out)), " ")
	}
	return r, nil
}

// client runs a client program on the client CPU, bounded by limit, and
// returns its output (stdout and stderr).
func (h *harness) client(limit time.Duration, name string, args ...string) (string, error) {
	run, err := h.clientRun(limit, name, args...)
	return run.out, err
}

// clientRun is one run of a client program.
type clientRun struct {
	out  string        // stdout and stderr
	cpu  time.Duration // user+system time of the program (taskset execs it: the same process)
	wall time.Duration // from start to exit
}

// clientRun is client, with the program's CPU and wall-clock time.
func (h *harness) clientRun(limit time.Duration, name string, args ...string) (clientRun, error) {
	ctx, cancel := context.WithTimeout(h.ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "taskset", append([]string{"-c", h.o.clientCPU, name}, args...)...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	run := clientRun{out: string(out), wall: time.Since(start)}
	if cmd.ProcessState != nil {
		run.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	return run, err
}

func num(out, re string) float64 {
	m := regexp.MustCompile(re).FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// wrkDur parses a wrk duration ("812.00us", "1.20ms", "2.01s") into ms.
func wrkDur(out, re string) float64 {
	m := regexp.MustCompile(re).FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	for _, u := range []struct {
		suffix string
		ms     float64
	}{{"us", 1e-3}, {"ms", 1}, {"m", 60e3}, {"s", 1e3}} {
		if v, ok := strings.CutSuffix(m[1], u.suffix); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f * u.ms
		}
	}
	return 0
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], " / ")
}

// pipeBench runs the pipe package's Chain vs ProcNetwork benchmark.
func (h *harness) pipeBench() {
	h.prog.step("go test -bench Pipeline ./pipe")
	if h.repo == "" {
		h.note("Chain vs ProcNetwork: not in the Sluice repository, so `go test -bench Pipeline ./pipe` did not run.")
		return
	}
	ctx, cancel := context.WithTimeout(h.ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "x", "-bench", "Pipeline", "./pipe")
	cmd.Dir = h.repo
	out, err := cmd.CombinedOutput()
	h.rep.PipeBench = strings.TrimSpace(string(out))
	if err != nil {
		h.note("go test -bench Pipeline ./pipe: %v", err)
	}
}

// machine records the machine and the versions of the tools.
func (h *harness) machine() {
	add := func(k, v string) { h.rep.Machine = append(h.rep.Machine, k+": "+v) }
	cpu := "unknown"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m := regexp.MustCompile(`(?m)^model name\s*:\s*(.*)$`).FindStringSubmatch(string(data)); m != nil {
			cpu = m[1]
		}
	}
	add("CPU", fmt.Sprintf("%s, %d logical CPUs", cpu, runtimeNumCPU()))
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		add("memory", fmt.Sprintf("%.1f GiB", num(string(data), `MemTotal:\s+(\d+)`)/(1<<20)))
	}
	if out, err := exec.Command("uname", "-sr").Output(); err == nil {
		add("kernel", strings.TrimSpace(string(out)))
	}
	add("RLIMIT_NOFILE", strconv.Itoa(h.nofile))
	add("load average (1 min) during the run", fmt.Sprintf("%.1f–%.1f", h.loadMin, h.loadMax))
	if h.others >= 0 {
		add("CPU of other processes during the run", fmt.Sprintf("%.0f %% of a core on average", 100*h.others))
	}
	if h.pinned {
		if slices.ContainsFunc(h.o.scenarios, func(s string) bool { return s != report.Workers && s != report.Pipe }) {
			add("pinning", fmt.Sprintf("client (this harness, wrk, ab) on CPU %s, servers on CPU %s (taskset)", h.o.clientCPU, h.o.serverCPU))
		}
		if h.has(report.Workers) {
			add("pinning, workers scenario", fmt.Sprintf("client on CPU %s, servers on CPUs %s (taskset)", h.o.clientCPU, h.o.workersCPU))
		}
	}
	if out, err := exec.Command("go", "version").Output(); err == nil {
		add("Go", strings.TrimSpace(string(out)))
	}
	if out, err := exec.Command("wrk", "-v").CombinedOutput(); err == nil || len(out) > 0 {
		if l, _, _ := strings.Cut(string(out), "\n"); strings.HasPrefix(l, "wrk") {
			add("wrk", l)
		}
	}
	if out, err := exec.Command("ab", "-V").Output(); err == nil {
		l, _, _ := strings.Cut(string(out), "\n")
		add("ab", strings.TrimSpace(l))
	}
	if h.repo != "" {
		if out, err := exec.Command("git", "-C", h.repo, "describe", "--always", "--dirty").Output(); err == nil {
			add("sluice commit", strings.TrimSpace(string(out)))
		}
	}
}
