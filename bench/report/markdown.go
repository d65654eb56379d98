package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Write writes rep into dir: README.md, results.json and the PNG
// figures. It returns the path of README.md.
func Write(dir string, rep *Report) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	raw, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(raw, '\n'), 0o644); err != nil {
		return "", err
	}
	w := &writer{dir: dir, rep: rep, servers: rep.Servers()}
	w.all()
	if w.err != nil {
		return "", w.err
	}
	path := filepath.Join(dir, "README.md")
	return path, os.WriteFile(path, []byte(w.b.String()), 0o644)
}

type writer struct {
	dir     string
	rep     *Report
	servers []string
	b       strings.Builder
	err     error // first figure error
}

func (w *writer) p(format string, args ...any) { fmt.Fprintf(&w.b, format+"\n", args...) }

func (w *writer) ran(sc string) bool { return len(w.rep.Xs(sc)) > 0 }

// figure writes a figure's image link and the command that reproduces it.
func (w *writer) figure(file, alt, scenario string, err error) {
	if err != nil {
		if w.err == nil {
			w.err = fmt.Errorf("figure %s: %w", file, err)
		}
		return
	}
	w.p("![%s](%s)", alt, file)
	w.p("")
	w.reproduce(scenario)
}

// fig is where the figure file name goes, noted with the commit and
// date the report was measured at.
func (w *writer) fig(name string) figFile {
	note := "measured " + w.rep.Started.UTC().Format("2006-01-02")
	if c := w.rep.Commit(); c != "" {
		note = "measured at commit " + c + ", " + w.rep.Started.UTC().Format("2006-01-02")
	}
	return figFile{path: filepath.Join(w.dir, name), note: note}
}

func (w *writer) reproduce(scenario string) {
	w.p("Reproduce: `%s --scenarios=%s`", w.rep.Reproduce, scenario)
	w.p("")
}

// cell formats a median with its range over rounds.
func cell(s Stat, f func(float64) string) string {
	if s.Min == s.Max {
		return f(s.Med)
	}
	return fmt.Sprintf("%s <sub>%s–%s</sub>", f(s.Med), f(s.Min), f(s.Max))
}

func rps(v float64) string { return thousands(v) }
func us(v float64) string  { return fmt.Sprintf("%.1f", v) }
func msf(v float64) string { return fmt.Sprintf("%.2f", v) }

func bytesf(v float64) string {
	switch {
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case v >= 10<<10:
		return fmt.Sprintf("%.1f KiB", v/(1<<10))
	default:
		return fmt.Sprintf("%.0f B", v)
	}
}

func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

func errCell(p Point) string {
	errs, total := p.Errors()
	if errs == 0 {
		return "0"
	}
	return fmt.Sprintf("%s (%.1f %%)", thousands(float64(errs)), 100*float64(errs)/float64(max(total, 1)))
}

func sizeLabel(x float64) string {
	if x >= 1<<20 {
		return fmt.Sprintf("%.0f MB", x/(1<<20))
	}
	return fmt.Sprintf("%.0f KB", x/(1<<10))
}

func get(f string) func(Sample) float64 {
	return map[string]func(Sample) float64{
		"rps":  func(s Sample) float64 { return s.RPS },
		"cpu":  func(s Sample) float64 { return s.CPUus },
		"p50":  func(s Sample) float64 { return s.P50ms },
		"p99":  func(s Sample) float64 { return s.P99ms },
		"mean": func(s Sample) float64 { return s.MeanMs },
		"rss":  func(s Sample) float64 { return float64(s.RSS) },
		"mbps": func(s Sample) float64 { return s.MBps },
		"conn": func(s Sample) float64 { return s.PerConn },
		"att":  func(s Sample) float64 { return s.Attempted },
		// busy: the share of its one core the server used, in percent.
		"busy": func(s Sample) float64 { return s.RPS * s.CPUus / 1e4 },
		"err": func(s Sample) float64 {
			if s.OK+s.Errors == 0 {
				return 0
			}
			return 100 * float64(s.Errors) / float64(s.OK+s.Errors)
		},
	}[f]
}

// point returns the aggregate of server at x in scenario, if measured.
func (w *writer) point(scenario, server string, x float64) (Point, bool) {
	for _, p := range w.rep.Points(scenario, []string{server}) {
		if p.X == x {
			return p, true
		}
	}
	return Point{}, false
}

// seriesOf builds one series per server of f over a scenario's points.
func (w *writer) seriesOf(scenario string, f func(Sample) float64) []series {
	var ss []series
	for i, srv := range w.servers {
		s := series{name: srv, idx: i}
		for _, p := range w.rep.Points(scenario, []string{srv}) {
			s.x = append(s.x, p.X)
			s.y = append(s.y, p.Of(f))
		}
		if len(s.x) > 0 {
			ss = append(ss, s)
		}
	}
	return ss
}

func (w *writer) all() {
	r := w.rep
	w.p("# Sluice benchmarks")
	w.p("")
	commit := ""
	if c := r.Commit(); c != "" {
		commit = " at commit " + c
	}
	w.p("Produced by `go -C bench run ./cmd/%s`%s on %s (took %s); %d round(s), %s per measured run, %s per sweep point%s.",
		r.Command, commit, r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Took, r.Rounds, r.Duration, r.Sweep,
		map[bool]string{true: " (**--quick smoke run: not for quoting**)", false: ""}[r.Quick])
	if slices.ContainsFunc(r.Scenarios, func(s string) bool {
		return s == Workers || s == Mix || s == MixSlowDB || s == Proxy || s == TLS || s == PHP || s == Cache
	}) {
		w.p("Everything here is regenerated by that command from the repository root;")
	} else {
		w.p("Everything here is regenerated by `make bench` or `%s` from the repository root;", r.Reproduce)
	}
	w.p("each figure names the command that reproduces it alone (the harness writes to a scratch directory unless `--out` names this one). Raw samples: [results.json](results.json).")
	w.p("")
	w.headline()
	w.method()
	w.warp()
	w.wrk()
	w.pipelined()
	w.webpipes()
	w.ab()
	w.c10k()
	w.c10kWrk()
	w.mix()
	w.proxy()
	w.tls()
	w.php()
	w.cache()
	w.sizes()
	w.idle()
	w.workers()
	w.pipe()
	w.peers()
	w.machine()
}

func (w *writer) headline() {
	if !w.ran(Warp) && !w.ran(Wrk) && !w.ran(Pipelined) && !w.ran(Idle) && !w.ran(C10KWrk) {
		return
	}
	w.p("## Headline")
	w.p("")
	// Keep-alive at 100 connections: wrk's figures where wrk ran (the
	// engine benchmark's method; its C client loads a server harder than
	// the Go generator can from one core), the generator's otherwise.
	ka, kaX, kaBy := Warp, 100.0, "sluicebench"
	if w.ran(Wrk) {
		ka, kaX, kaBy = Wrk, w.maxX(Wrk), "wrk"
	}
	if w.ran(ka) {
		var labels []string
		var vals []Stat
		for _, srv := range w.servers {
			if p, ok := w.point(ka, srv, kaX); ok {
				labels = append(labels, srv)
				vals = append(vals, p.Of(get("cpu")))
			}
		}
		err := barFigure(w.fig("headline.png"), "Server CPU-µs per request: 151-byte page, keep-alive, 100 connections ("+kaBy+"; lower is better)",
			"CPU-µs per request (server process tree, /proc/PID/stat)", labels, []string{"cpu"}, [][]Stat{vals})
		w.figure("headline.png", "server CPU-µs per request at 100 keep-alive connections", ka, err)
	}
	// Columns: those of the scenarios that ran.
	type column struct {
		head string
		cell func(srv string) string
	}
	var cols []column
	// rateCols are a scenario's requests/s, p50 / p99 and CPU columns
	// at x, headed by head.
	rateCols := func(sc string, x float64, head string) []column {
		pt := func(srv string) (Point, bool) { return w.point(sc, srv, x) }
		return []column{
			{head, func(srv string) string {
				p, ok := pt(srv)
				return measuredOr(ok, func() string { return cell(p.Of(get("rps")), rps) })
			}},
			{"p50 / p99 ms", func(srv string) string { p, ok := pt(srv); return latencyCell(p, ok) }},
			{"CPU-µs/req", func(srv string) string {
				p, ok := pt(srv)
				return measuredOr(ok, func() string { return cell(p.Of(get("cpu")), us) })
			}},
		}
	}
	if w.ran(ka) {
		cols = append(cols, rateCols(ka, kaX, "keep-alive c=100 req/s ("+kaBy+")")...)
	}
	if w.ran(Pipelined) {
		cols = append(cols, rateCols(Pipelined, 16, "pipelined ×16 req/s")...)
	}
	for _, x := range w.rep.Xs(C10KWrk) {
		cols = append(cols, column{fmt.Sprintf("c=%s %s (wrk) req/s · p50 / p99 ms · errors", w.c10kConns(), c10kPage(x)), func(srv string) string {
			p, ok := w.point(C10KWrk, srv, x)
			return measuredOr(ok, func() string {
				return fmt.Sprintf("%s · %s · %s", rps(p.Of(get("rps")).Med), latencyCell(p, ok), errCell(p))
			})
		}})
	}
	if w.ran(Idle) {
		pt := func(srv string) (Point, bool) { return w.point(Idle, srv, w.maxX(Idle)) }
		cols = append(cols,
			column{"idle RSS/conn at " + thousands(w.maxX(Idle)), func(srv string) string {
				p, ok := pt(srv)
				return measuredOr(ok, func() string { return cell(p.Of(get("conn")), bytesf) })
			}},
			column{"idle answered", func(srv string) string {
				p, ok := pt(srv)
				return measuredOr(ok, func() string {
					minOK := int64(-1)
					for _, s := range p.Rounds {
						if minOK < 0 || s.OK < minOK {
							minOK = s.OK
						}
					}
					return fmt.Sprintf("%s / %s", thousands(float64(minOK)), thousands(p.X))
				})
			}})
	}
	head, sep := "| server |", "|---|"
	for _, c := range cols {
		head += " " + c.head + " |"
		sep += "---:|"
	}
	w.p("%s", head)
	w.p("%s", sep)
	for _, srv := range w.servers {
		if !w.measured("", srv) {
			continue
		}
		row := []string{srv}
		for _, c := range cols {
			row = append(row, c.cell(srv))
		}
		w.p("| %s |", strings.Join(row, " | "))
	}
	w.p("")
	w.p("Medians over rounds, <sub>min–max</sub> when rounds differ; p50 / p99: the medians over rounds of each round's latency percentiles. \"idle answered\": the fewest connections, over rounds, that got their 200, stayed open, and got a 200 again when they spoke again after the measurement.")
	w.p("")
	if v := w.c10kVerdict(); v != "" {
		w.p("%s See [C10K with wrk](#c10k-with-wrk-%s-keep-alive-connections-151-b-and-80-kb).", v, strings.ReplaceAll(w.c10kConns(), ",", ""))
		w.p("")
	}
}

// measuredOr returns f() if ok, else "–" (not measured).
func measuredOr(ok bool, f func() string) string {
	if !ok {
		return "–"
	}
	return f()
}

// measured reports whether server has samples of scenario sc (of any
// scenario if sc is empty).
func (w *writer) measured(sc, server string) bool {
	for _, s := range w.rep.Samples {
		if s.Server == server && (sc == "" || s.Scenario == sc) {
			return true
		}
	}
	return false
}

func (w *writer) maxX(sc string) float64 {
	xs := w.rep.Xs(sc)
	if len(xs) == 0 {
		return 0
	}
	return xs[len(xs)-1]
}

func (w *writer) method() {
	w.p("## Method")
	w.p("")
	w.p("- One machine, two cores. The client (this harness's generator, `wrk`, `ab`) is pinned to one core and every server to the other with `taskset`, so a server has exactly one core (Go servers run with GOMAXPROCS 1) and never competes with the client%s.", map[bool]string{true: " (the workers scenario excepted: see its section)", false: ""}[w.ran(Workers) || w.ran(WorkersAB)])
	w.p("- Servers are measured one after another in interleaved rounds (A, B, C, … then B, C, A, …: each round starts one server further along, so that none is always the first of its round, which tends to run fastest); each starts fresh in a temporary directory with the configuration shown under [Peers](#peers), is warmed up for a second, and runs the scenarios in the order below. Idle-memory points each get a fresh server.")
	w.p("- **Server CPU-µs per request**: the growth of utime+stime (and of reaped children) over the server's whole process tree, from `/proc/PID/stat`, during the measured run, divided by the successful responses. **RSS**: VmRSS summed over the tree, from `/proc/PID/status`.")
	w.p("- The generator (`bench/load`) is closed-loop (each connection sends, waits for the answers, sends again; optionally pipelined) or open-loop (requests scheduled at a fixed rate whatever the server does, latency from the intended start, so no coordinated omission). Latency goes into a log-linear (HdrHistogram-style) histogram. Every run is bounded by time or count and every I/O by a timeout.")
	w.p("- Errors are counted: failed connects, reads, writes, timeouts and statuses other than 2xx/3xx. An error column shows the sum over rounds and its share of all requests.")
	w.p("- **Server core busy** = requests/s × CPU-µs per request: below about 90 %% the client, not the server, was the limit. The Go generator, on one core, spends more per request than `wrk` does (a goroutine wake-up per response), so without pipelining it saturates only the heavier servers; that is why the keep-alive headline uses `wrk` where it is installed, and why the CPU-µs per request, not requests/s, is the figure to compare.")
	w.p("")
	if len(w.rep.Notes) > 0 {
		w.p("Notes from this run:")
		w.p("")
		for _, n := range w.rep.Notes {
			w.p("- %s", n)
		}
		w.p("")
	}
}

func (w *writer) warp() {
	if !w.ran(Warp) {
		return
	}
	sc, xs := Warp, w.rep.Xs(Warp)
	w.p("## Warp's 151-byte page, keep-alive, 1–1,000 connections")
	w.p("")
	w.p("Warp's paper measures a 151-byte `index.html` with rising connection counts. Closed loop, keep-alive, `GET /`.")
	w.p("")
	err := lineFigure(w.fig("warp.png"), "151-byte page, keep-alive", "connections", "requests/s", true, false, w.seriesOf(Warp, get("rps")))
	w.figure("warp.png", "requests/s by connections", Warp, err)
	err = lineFigure(w.fig("warp-cpu.png"), "151-byte page, keep-alive: server CPU per request (lower is better)", "connections", "server CPU-µs per request", true, false, w.seriesOf(Warp, get("cpu")))
	w.figure("warp-cpu.png", "server CPU-µs per request by connections", Warp, err)
	w.p("requests/s · server CPU-µs/request · p50 / p99 latency (ms):")
	w.p("")
	head := "| server |"
	sep := "|---|"
	for _, x := range xs {
		head += fmt.Sprintf(" c=%s |", thousands(x))
		sep += "---:|"
	}
	w.p("%s errors |", head)
	w.p("%s---:|", sep)
	for _, srv := range w.servers {
		if !w.measured(sc, srv) {
			continue
		}
		row := "| " + srv + " |"
		var errs, total int64
		for _, x := range xs {
			p, ok := w.point(Warp, srv, x)
			if !ok {
				row += " – |"
				continue
			}
			e, t := p.Errors()
			errs, total = errs+e, total+t
			row += fmt.Sprintf(" %s · %s · %s |", cell(p.Of(get("rps")), rps), us(p.Of(get("cpu")).Med), latencyCell(p, true))
		}
		w.p("%s %s |", row, pct(errs, total))
	}
	w.p("")
}

func pct(errs, total int64) string {
	if errs == 0 {
		return "0"
	}
	return fmt.Sprintf("%s (%.1f %%)", thousands(float64(errs)), 100*float64(errs)/float64(max(total, 1)))
}

// simpleTable writes one row per server for a single-point scenario.
func (w *writer) simpleTable(sc string, x float64) {
	w.p("| server | req/s | server CPU-µs/req | server core busy | p50 ms | p99 ms | RSS | errors |")
	w.p("|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, srv := range w.servers {
		p, ok := w.point(sc, srv, x)
		if !ok {
			continue
		}
		w.p("| %s | %s | %s | %.0f %% | %s | %s | %s | %s |", srv, cell(p.Of(get("rps")), rps), cell(p.Of(get("cpu")), us),
			p.Of(get("busy")).Med, msf(p.Of(get("p50")).Med), msf(p.Of(get("p99")).Med), bytesf(p.Of(get("rss")).Med), errCell(p))
	}
	w.p("")
}

func (w *writer) wrk() {
	if !w.ran(Wrk) {
		return
	}
	w.p("## Cross-check with wrk: 151-byte page, keep-alive, 100 connections")
	w.p("")
	w.p("`wrk -t1 -c100 -d%ds --latency http://127.0.0.1:$PORT/`, pinned like the generator. It should agree with the c=100 column above.", max(int(w.rep.Duration.Seconds()), 1))
	w.p("")
	w.simpleTable(Wrk, w.maxX(Wrk))
	w.reproduce(Wrk)
}

func (w *writer) pipelined() {
	if !w.ran(Pipelined) {
		return
	}
	w.p("## Pipelined 16 deep: 151-byte page, 100 connections")
	w.p("")
	w.p("Each connection writes 16 requests at once and reads 16 responses (Warp's pipelining; wrk's `pipeline.lua`).")
	w.p("")
	var labels []string
	var vals []Stat
	for _, srv := range w.servers {
		if p, ok := w.point(Pipelined, srv, 16); ok {
			labels = append(labels, srv)
			vals = append(vals, p.Of(get("rps")))
		}
	}
	err := barFigure(w.fig("pipelined.png"), "151-byte page, 100 connections, pipelined ×16", "requests/s", labels, []string{"req/s"}, [][]Stat{vals})
	w.figure("pipelined.png", "pipelined requests/s", Pipelined, err)
	w.simpleTable(Pipelined, 16)
}

func (w *writer) webpipes() {
	if !w.ran(Webpipes) {
		return
	}
	sc, xs := Webpipes, w.rep.Xs(Webpipes)
	w.p("## webpipes' 4 KB file at rising request rates")
	w.p("")
	w.p("The webpipes paper (its Figures 4 and 5) offers a 4 KB file at a fixed rate with httperf, a new connection per request, and plots the successful requests/s and the error percentage against the attempted rate. Here: an open loop at each rate for %s, up to %d requests in flight, a connection per request, a 2 s client timeout (a request not answered within 2 s of its scheduled start is an error).", w.rep.Sweep, 1000)
	w.p("")
	ss := w.seriesOf(Webpipes, get("rps"))
	err := lineFigure(w.fig("webpipes-throughput.png"), "4 KB file, a connection per request: throughput", "attempted requests/s", "successful requests/s", false, false, ss, ideal(xs[len(xs)-1]))
	w.figure("webpipes-throughput.png", "achieved vs attempted rate", Webpipes, err)
	err = lineFigure(w.fig("webpipes-errors.png"), "4 KB file, a connection per request: errors", "attempted requests/s", "errors, % of attempted", false, false, w.seriesOf(Webpipes, get("err")))
	w.figure("webpipes-errors.png", "error percentage vs attempted rate", Webpipes, err)
	w.p("successful requests/s · errors %% · p50 / p99 latency from the scheduled start (ms):")
	w.p("")
	head, sep := "| server |", "|---|"
	for _, x := range xs {
		head += fmt.Sprintf(" %s/s |", thousands(x))
		sep += "---:|"
	}
	w.p("%s", head)
	w.p("%s", sep)
	for _, srv := range w.servers {
		if !w.measured(sc, srv) {
			continue
		}
		row := "| " + srv + " |"
		for _, x := range xs {
			p, ok := w.point(Webpipes, srv, x)
			if !ok {
				row += " – |"
				continue
			}
			row += fmt.Sprintf(" %s · %.1f %% · %s |", rps(p.Of(get("rps")).Med), p.Of(get("err")).Med, latencyCell(p, true))
		}
		w.p("%s", row)
	}
	w.p("")
}

func (w *writer) ab() {
	if !w.ran(AB) {
		return
	}
	tool := "ab"
	for _, s := range w.rep.Samples {
		if s.Scenario == AB {
			tool = s.Tool
			break
		}
	}
	w.p("## The master–worker paper's `ab -n 5000 -c 500`")
	w.p("")
	if tool == "ab" {
		w.p("`ab -r -s 30 -n 5000 -c 500 http://127.0.0.1:$PORT/` (the 151-byte page; a connection per request, HTTP/1.0), the paper's Figure 2 rows.")
	} else {
		w.p("ab is not installed; sluicebench made 5,000 requests, 500 at a time, a connection each, the shape of the paper's `ab -n 5000 -c 500`.")
	}
	w.p("")
	w.p("| server | mean time per request (ms) | mean across concurrent requests (ms) | requests/s | transfer rate (MB/s) | failed requests | server CPU-µs/req | p50 / p99 ms |")
	w.p("|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, srv := range w.servers {
		p, ok := w.point(AB, srv, w.maxX(AB))
		if !ok {
			continue
		}
		errs, _ := p.Errors()
		w.p("| %s | %s | %.3f | %s | %s | %s (over %d rounds) | %s | %s |", srv, cell(p.Of(get("mean")), msf), 1000/max(p.Of(get("rps")).Med, 1e-9), cell(p.Of(get("rps")), rps),
			fmt.Sprintf("%.1f", p.Of(get("mbps")).Med), thousands(float64(errs)), len(p.Rounds), us(p.Of(get("cpu")).Med), latencyCell(p, true))
	}
	w.p("")
	w.reproduce(AB)
}

func (w *writer) c10k() {
	if !w.ran(C10K) {
		return
	}
	x := w.maxX(C10K)
	w.p("## The C10K mix at %s connections", thousands(x))
	w.p("")
	w.p("%s keep-alive connections, all opened before the clock starts, each cycling through three pages: the 151-byte `index.html`, `template.html` (2 KB) and `dynamic.html` (1 KB). The C10K seed's mix is static, template and database-backed pages; here these two are static stand-ins, so that every server can be measured: this measures connection scale, not page generation. The real mix is the `mix` scenario (`--scenarios mix,mix-slowdb`). The open-file limit here (20,000, hard) makes 10,000 the practical maximum per process.", thousands(x))
	w.p("")
	var labels []string
	var vals []Stat
	for _, srv := range w.servers {
		if p, ok := w.point(C10K, srv, x); ok {
			labels = append(labels, srv)
			vals = append(vals, p.Of(get("rps")))
		}
	}
	err := barFigure(w.fig("c10k.png"), fmt.Sprintf("C10K mix, %s keep-alive connections", thousands(x)), "successful requests/s", labels, []string{"req/s"}, [][]Stat{vals})
	w.figure("c10k.png", "C10K requests/s", C10K, err)
	w.simpleTable(C10K, x)
	for _, srv := range w.servers {
		if p, ok := w.point(C10K, srv, x); ok {
			for _, s := range p.Rounds {
				if s.ErrorText != "" {
					w.p("- %s, round %d: %s", srv, s.Round, s.ErrorText)
				}
			}
		}
	}
	w.p("")
}

func (w *writer) sizes() {
	if !w.ran(Sizes) {
		return
	}
	sc, xs := Sizes, w.rep.Xs(Sizes)
	w.p("## File sizes 1 KB–1 MB")
	w.p("")
	w.p("The C++ server paper's Figure 3 plots request time against file size (1–300 KB with ab); here 1 KB to 1 MB, 10 keep-alive connections, closed loop.")
	w.p("")
	err := lineFigure(w.fig("sizes.png"), "Mean request time by file size, 10 keep-alive connections", "file size (bytes)", "mean request time (ms)", true, true, w.seriesOf(Sizes, get("mean")))
	w.figure("sizes.png", "mean request time by file size", Sizes, err)
	err = lineFigure(w.fig("sizes-throughput.png"), "Throughput by file size, 10 keep-alive connections", "file size (bytes)", "MB/s received", true, false, w.seriesOf(Sizes, get("mbps")))
	w.figure("sizes-throughput.png", "MB/s by file size", Sizes, err)
	w.p("mean request time (ms) · MB/s · p50 / p99 (ms) · server CPU-µs/request:")
	w.p("")
	head, sep := "| server |", "|---|"
	for _, x := range xs {
		head += " " + sizeLabel(x) + " |"
		sep += "---:|"
	}
	w.p("%s errors |", head)
	w.p("%s---:|", sep)
	for _, srv := range w.servers {
		if !w.measured(sc, srv) {
			continue
		}
		row := "| " + srv + " |"
		var errs, total int64
		for _, x := range xs {
			p, ok := w.point(Sizes, srv, x)
			if !ok {
				row += " – |"
				continue
			}
			e, t := p.Errors()
			errs, total = errs+e, total+t
			row += fmt.Sprintf(" %s · %.0f · %s · %s |", msf(p.Of(get("mean")).Med), p.Of(get("mbps")).Med, latencyCell(p, true), us(p.Of(get("cpu")).Med))
		}
		w.p("%s %s |", row, pct(errs, total))
	}
	w.p("")
}

func (w *writer) idle() {
	if !w.ran(Idle) {
		return
	}
	xs := w.rep.Xs(Idle)
	w.p("## Idle memory per connection")
	w.p("")
	w.p("A fresh server answers 20 requests, rests a second, and its RSS is read; then N keep-alive connections each make one `GET /`, read the answer and stay open; 0.5 s later RSS is read again, and then every connection makes a second `GET /`, which must be answered. Figure: (RSS after − RSS before) / connections answered the first time; \"answered\": connections answered both times.")
	w.p("")
	var groups []string
	var vals [][]Stat
	var labels []string
	for _, srv := range w.servers {
		if _, ok := w.point(Idle, srv, xs[0]); ok {
			labels = append(labels, srv)
		}
	}
	for _, x := range xs {
		groups = append(groups, thousands(x)+" connections")
		var v []Stat
		for _, srv := range labels {
			p, _ := w.point(Idle, srv, x)
			v = append(v, p.Of(get("conn")))
		}
		vals = append(vals, v)
	}
	err := barFigure(w.fig("idle.png"), "Server RSS per idle keep-alive connection (lower is better)", "bytes per connection", labels, groups, vals)
	w.figure("idle.png", "RSS per idle connection", Idle, err)
	head, sep := "| server |", "|---|"
	for _, x := range xs {
		head += fmt.Sprintf(" %s: bytes/conn | answered | RSS |", thousands(x))
		sep += "---:|---:|---:|"
	}
	w.p("%s", head)
	w.p("%s", sep)
	for _, srv := range labels {
		row := "| " + srv + " |"
		for _, x := range xs {
			p, _ := w.point(Idle, srv, x)
			minOK := int64(-1)
			for _, s := range p.Rounds {
				if minOK < 0 || s.OK < minOK {
					minOK = s.OK
				}
			}
			row += fmt.Sprintf(" %s | %s | %s |", cell(p.Of(get("conn")), bytesf), thousands(float64(minOK)), bytesf(p.Of(get("rss")).Med))
		}
		w.p("%s", row)
	}
	w.p("")
}

func (w *writer) pipe() {
	if w.rep.PipeBench == "" {
		return
	}
	w.p("## Chain vs ProcNetwork")
	w.p("")
	w.p("The webpipes paper's question: what does running a pipeline as a process network (a goroutine per component, joined by channels) cost over function calls? Five components (pass, pass, a 4 KB source, an identity filter, pass), no network. Reproduce: `go test -run x -bench Pipeline ./pipe` (run by the harness on the client core).")
	w.p("")
	w.p("```")
	w.p("%s", w.rep.PipeBench)
	w.p("```")
	w.p("")
}

func (w *writer) peers() {
	w.p("## Peers")
	w.p("")
	w.p("| server | version | setup |")
	w.p("|---|---|---|")
	for _, p := range w.rep.Peers {
		// Shown: those measured, those skipped, and those that ran
		// unmeasured (the proxy scenario's upstream).
		if p.Skipped == "" && !w.measured("", p.Name) && p.Command == "" {
			continue
		}
		v := p.Version
		if p.Skipped != "" {
			v = "skipped: " + p.Skipped
		}
		w.p("| %s | %s | %s |", p.Name, strings.ReplaceAll(v, "|", "/"), p.About)
	}
	w.p("")
	for _, p := range w.rep.Peers {
		if p.Command == "" {
			continue
		}
		w.p("<details><summary>%s: command and configuration</summary>", p.Name)
		w.p("")
		w.p("```")
		w.p("%s", p.Command)
		w.p("```")
		if p.Config != "" {
			w.p("")
			w.p("```")
			w.p("%s", strings.TrimSpace(p.Config))
			w.p("```")
		}
		w.p("")
		w.p("</details>")
		w.p("")
	}
}

func (w *writer) machine() {
	w.p("## Machine")
	w.p("")
	for _, m := range w.rep.Machine {
		w.p("- %s", m)
	}
	scs := slices.Clone(w.rep.Scenarios)
	w.p("- scenarios run: %s", strings.Join(scs, ", "))
	w.p("- report written %s", w.rep.Started.Add(w.rep.Took).UTC().Format(time.RFC3339))
	w.p("")
}
