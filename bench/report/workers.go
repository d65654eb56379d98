package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// paperAB is the master–worker paper's Figure 2: ab -n 5000 -c 500
// against Apache 2 as Debian configures it and against its Go server
// with 2, 10 and 100 workers.
var paperAB = []struct {
	workers  int // 0: Apache
	meanMs   float64
	mbytes   float64
	failures float64
}{
	{0, 4.206, 34, 28},
	{2, 0.197, 729, 0},
	{10, 0.196, 730, 0},
	{100, 0.191, 751, 0},
}

// workerServers returns the servers with samples of the workers
// scenario: Sluice by worker count, nginx by worker count, then the
// others (Apache).
func (w *writer) workerServers() []string {
	var names []string
	for _, p := range w.rep.Peers {
		if w.measured(Workers, p.Name) || w.measured(WorkersAB, p.Name) || w.measured(WorkersMem, p.Name) {
			names = append(names, p.Name)
		}
	}
	rank := func(name string) (int, int) {
		p := w.peer(name)
		switch p.Base {
		case "sluice":
			return 0, p.Workers
		case "nginx":
			return 1, p.Workers
		}
		return 2, 0
	}
	sort.SliceStable(names, func(i, j int) bool {
		bi, wi := rank(names[i])
		bj, wj := rank(names[j])
		return bi < bj || bi == bj && wi < wj
	})
	return names
}

func (w *writer) peer(name string) PeerInfo {
	for _, p := range w.rep.Peers {
		if p.Name == name {
			return p
		}
	}
	return PeerInfo{Name: name}
}

// workerLabel names a variant for tables and figures: "sluice, 2
// workers", "sluice, one process", "nginx, 1 worker".
func (w *writer) workerLabel(name string) string {
	p := w.peer(name)
	switch {
	case p.Base == "":
		return name
	case p.Base == "sluice" && p.Workers == 0:
		return "sluice, one process"
	case p.Workers == 1:
		return p.Base + ", 1 worker"
	default:
		return fmt.Sprintf("%s, %d workers", p.Base, p.Workers)
	}
}

// workerPoint returns the samples of a variant in one of the workers
// scenarios (each variant has one X, its worker count).
func (w *writer) workerPoint(sc, name string) (Point, bool) {
	pts := w.rep.Points(sc, []string{name})
	if len(pts) == 0 {
		return Point{}, false
	}
	return pts[0], true
}

func (w *writer) workers() {
	if !w.ran(Workers) && !w.ran(WorkersAB) && !w.ran(WorkersMem) {
		return
	}
	names := w.workerServers()
	w.p("## Master and workers")
	w.p("")
	w.p("Sluice single-process (`workers: 0`, the reference) and with a master and 1, 2, 10 and 100 worker processes (`sluice serve --workers N`: the workers share the listening socket, the master is not in the data path), nginx with 1 and 2 worker processes, and Apache with Debian's default configuration (the master–worker paper's opponent). Each variant starts fresh once per round, the variants interleaved (all of them, each round starting one variant further along), and runs, after a 1 s warm-up at 100 keep-alive connections, `wrk`, then `ab`, on the 151-byte `index.html`. A variant of Sluice with workers is measured once every worker has answered the master's health probe.")
	w.p("")
	w.p("**Placement.** The client (this harness, `wrk`, `ab`) is pinned to CPU %s, as in every scenario; the servers run on CPUs %s (`taskset -c %s`), the single-process and one-worker variants included, so that every variant has the same placement and a server with two workers can use two cores. The client therefore shares CPU %s with the server: requests/s is what the machine gives client and server together, and server CPU-µs per request is the figure that does not depend on the client. A Sluice worker runs with GOMAXPROCS the CPUs it may run on divided by the number of workers, at least 1 (docs/workers.md); a single process and the master keep Go's default.",
		orDash(w.rep.ClientCPU), orDash(w.rep.WorkersCPU), orDash(w.rep.WorkersCPU), orDash(w.rep.ClientCPU))
	w.p("")
	w.p("**Server CPU** is the growth, over the measured run, of utime+stime summed over every process of the server (the master, every worker, and children it reaped), read from `/proc/PID/stat` of the process tree, divided by the successful responses. **Memory** is read from `/proc/PID/smaps_rollup` of every process of the tree.")
	w.p("")
	w.workersKeepAlive(names)
	w.workersAB(names)
	w.workersMemory(names)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func (w *writer) workersKeepAlive(names []string) {
	if !w.ran(Workers) {
		return
	}
	tool := "wrk"
	for _, s := range w.rep.Samples {
		if s.Scenario == Workers {
			tool = s.Tool
			break
		}
	}
	w.p("### Keep-alive: requests/s and server CPU per request")
	w.p("")
	if tool == "wrk" {
		w.p("`wrk -t1 -c100 -d%ds --latency http://127.0.0.1:$PORT/`, 100 keep-alive connections.", max(int(w.rep.Duration.Seconds()), 1))
	} else {
		w.p("wrk is not installed: sluicebench's generator, 100 keep-alive connections for %s.", w.rep.Duration)
	}
	w.p("")
	var labels []string
	var rpsV, cpuV []Stat
	for _, name := range names {
		if p, ok := w.workerPoint(Workers, name); ok {
			labels = append(labels, w.workerLabel(name))
			rpsV = append(rpsV, p.Of(get("rps")))
			cpuV = append(cpuV, p.Of(get("cpu")))
		}
	}
	err := barFigure(w.fig("workers-rps.png"), "151-byte page, 100 keep-alive connections: requests/s", "requests/s", labels, []string{"req/s"}, [][]Stat{rpsV})
	w.figure("workers-rps.png", "requests/s by server and workers", Workers, err)
	err = barFigure(w.fig("workers-cpu.png"), "Server CPU per request, every process of the server (lower is better)", "server CPU-µs per request", labels, []string{"CPU-µs"}, [][]Stat{cpuV})
	w.figure("workers-cpu.png", "server CPU-µs per request by server and workers", Workers, err)
	w.p("| server | processes | req/s | server CPU-µs/req | server CPU used (cores) | p50 ms | p99 ms | errors |")
	w.p("|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, name := range names {
		p, ok := w.workerPoint(Workers, name)
		if !ok {
			continue
		}
		busy := p.Of(func(s Sample) float64 { return s.RPS * s.CPUus / 1e6 })
		w.p("| %s | %s | %s | %s | %.2f | %s | %s | %s |", w.workerLabel(name), w.processes(name), cell(p.Of(get("rps")), rps), cell(p.Of(get("cpu")), us),
			busy.Med, msf(p.Of(get("p50")).Med), msf(p.Of(get("p99")).Med), errCell(p))
	}
	w.p("")
	w.p("Medians over rounds, <sub>min–max</sub> when rounds differ. \"server CPU used\": requests/s × CPU-µs per request, in cores (1.00 is one core busy all the time). The client is one `wrk` thread on one core, which it shares with the server: where a server used well under the cores it may use, `wrk`, not the server, set the pace, and a second worker cannot raise requests/s; server CPU-µs per request is then the figure to compare.")
	w.p("")
	for _, name := range names {
		if p, ok := w.workerPoint(Workers, name); ok {
			for _, s := range p.Rounds {
				if s.ErrorText != "" {
					w.p("- %s, round %d: %s", w.workerLabel(name), s.Round, s.ErrorText)
				}
			}
		}
	}
	w.p("")
	var lines []string
	for _, base := range []string{"sluice", "nginx"} {
		one, two := w.variant(base, 1), w.variant(base, 2)
		r, okR := w.roundRatio(Workers, two, one, get("rps"))
		c1, ok1 := w.workerPoint(Workers, one)
		c2, ok2 := w.workerPoint(Workers, two)
		if !okR || !ok1 || !ok2 {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s ×%.2f requests/s (CPU-µs per request %s → %s)", base, r, us(c1.Of(get("cpu")).Med), us(c2.Of(get("cpu")).Med)))
	}
	if len(lines) > 0 {
		w.p("From 1 worker to 2, same run (the median over rounds of each round's ratio): %s.", strings.Join(lines, "; "))
		w.p("")
	}
	if r, ok := w.roundRatio(Workers, w.variant("sluice", 1), w.variant("sluice", 0), get("cpu")); ok {
		w.p("Sluice with a master and 1 worker against one process: ×%.2f the server CPU per request.", r)
		w.p("")
	}
}

// variant returns the name of base's variant with n workers, "" if none.
func (w *writer) variant(base string, n int) string {
	for _, p := range w.rep.Peers {
		if p.Base == base && p.Workers == n {
			return p.Name
		}
	}
	return ""
}

// roundRatio returns the median over rounds of f(a)/f(b) in scenario sc,
// pairing the samples of a round: the two ran within seconds of each
// other, so what else loaded the machine weighs on both.
func (w *writer) roundRatio(sc, a, b string, f func(Sample) float64) (float64, bool) {
	if a == "" || b == "" {
		return 0, false
	}
	pa, okA := w.workerPoint(sc, a)
	pb, okB := w.workerPoint(sc, b)
	if !okA || !okB {
		return 0, false
	}
	var ratios []float64
	for _, sa := range pa.Rounds {
		for _, sb := range pb.Rounds {
			if sa.Round == sb.Round && f(sb) > 0 {
				ratios = append(ratios, f(sa)/f(sb))
			}
		}
	}
	if len(ratios) == 0 {
		return 0, false
	}
	return stat(ratios).Med, true
}

// processes gives a variant's process count, from its memory samples.
func (w *writer) processes(name string) string {
	p, ok := w.workerPoint(WorkersMem, name)
	if !ok {
		return "–"
	}
	n := p.Of(func(s Sample) float64 {
		if s.Fresh == nil {
			return float64(len(s.Loaded.Workers) + 1)
		}
		return float64(len(s.Fresh.Workers) + 1)
	})
	return cell(n, func(v float64) string { return fmt.Sprintf("%.0f", v) })
}

// abMean is ab's "Time per request (mean, across all concurrent
// requests)": elapsed time ÷ requests = 1,000 ÷ requests/s, in ms.
func abMean(s Sample) float64 {
	if s.RPS <= 0 {
		return 0
	}
	return 1000 / s.RPS
}

// abMbytes is ab's transfer rate in its Kbytes/s ÷ 1,024.
func abMbytes(s Sample) float64 { return s.MBps * 1e6 / (1 << 20) }

func (w *writer) workersAB(names []string) {
	if !w.ran(WorkersAB) {
		return
	}
	w.p("### The master–worker paper's table: `ab -n 5000 -c 500`")
	w.p("")
	w.p("The paper's Figure 2 ran `ab -n 5000 -c 500` against Apache 2 with Debian's default configuration and against its Go server with 2, 10 and 100 workers (a master that proxied every request to them). It does not say what page it served, nor on what machine; its own figures imply about 140 KB per response (transfer rate × time per request: 34 MB/s × 4.206 ms ≈ 143 KB for Apache, 729 MB/s × 0.197 ms ≈ 144 KB for 2 workers). Here the page is the harness's default file, the **151-byte `index.html`**, so transfer rates compare between the columns of this run, not with the paper's. The paper's \"mean time per request\" is ab's *Time per request (mean, across all concurrent requests)*, the elapsed time ÷ the requests: the other figure ab prints, the mean per request, is 500 times that (0.197 ms of it would be 2.5 million requests/s). Its \"Mbytes/sec\" is taken as ab's Kbytes/sec ÷ 1,024. Command: `ab -r -s 30 -n 5000 -c 500 http://127.0.0.1:$PORT/` (a connection per request, HTTP/1.0; `-r`: a socket error counts as a failed request instead of ending the run).")
	w.p("")
	cols := []struct {
		paper string
		name  string
		idx   int
	}{{"Apache (paper)", "apache-default", 0}, {"Go, 2 workers (paper)", w.variant("sluice", 2), 1}, {"Go, 10 workers (paper)", w.variant("sluice", 10), 2}, {"Go, 100 workers (paper)", w.variant("sluice", 100), 3}}
	head, sep := "| |", "|---|"
	for _, c := range cols {
		head += fmt.Sprintf(" %s | %s (here) |", c.paper, w.workerLabel(orDash(c.name)))
		sep += "---:|---:|"
	}
	w.p("%s", head)
	w.p("%s", sep)
	row := func(title string, paper func(i int) string, here func(p Point) string) {
		line := "| " + title + " |"
		for _, c := range cols {
			line += " " + paper(c.idx) + " |"
			if p, ok := w.workerPoint(WorkersAB, c.name); ok {
				line += " **" + here(p) + "** |"
			} else {
				line += " – |"
			}
		}
		w.p("%s", line)
	}
	row("Mean time per request (ms)", func(i int) string { return fmt.Sprintf("%.3f", paperAB[i].meanMs) },
		func(p Point) string {
			return cell(p.Of(abMean), func(v float64) string { return fmt.Sprintf("%.3f", v) })
		})
	row("Transfer rate (Mbytes/sec)", func(i int) string { return fmt.Sprintf("%.0f", paperAB[i].mbytes) },
		func(p Point) string {
			return cell(p.Of(abMbytes), func(v float64) string { return fmt.Sprintf("%.1f", v) })
		})
	row("Failed requests", func(i int) string { return fmt.Sprintf("%.0f", paperAB[i].failures) },
		func(p Point) string {
			return cell(p.Of(func(s Sample) float64 { return float64(s.Errors) }), func(v float64) string { return thousands(v) })
		})
	w.p("")
	w.p("This run: medians over %d round(s), <sub>min–max</sub> when rounds differ; failed requests per run of 5,000.", w.rep.Rounds)
	w.p("")
	var labels []string
	var paper, here []Stat
	for _, c := range cols {
		p, ok := w.workerPoint(WorkersAB, c.name)
		if !ok {
			continue
		}
		label := strings.TrimSuffix(c.paper, " (paper)")
		labels = append(labels, label)
		v := paperAB[c.idx].meanMs
		paper = append(paper, Stat{v, v, v})
		here = append(here, p.Of(abMean))
	}
	if len(labels) > 0 {
		err := barFigure(w.fig("workers-ab.png"), "ab -n 5000 -c 500: mean time per request (lower is better)", "mean time per request, across concurrent requests (ms)",
			labels, []string{"the paper", "this run"}, [][]Stat{paper, here})
		w.figure("workers-ab.png", "ab mean time per request: the paper and this run", Workers, err)
	}
	w.p("Every variant of this run:")
	w.p("")
	w.p("| server | time per request, across concurrent (ms) | time per request (ms) | req/s | transfer rate (Mbytes/sec) | failed requests (all rounds) | server CPU-µs/req | p50 / p99 ms |")
	w.p("|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, name := range names {
		p, ok := w.workerPoint(WorkersAB, name)
		if !ok {
			continue
		}
		w.p("| %s | %s | %s | %s | %.1f | %s | %s | %s |", w.workerLabel(name), cell(p.Of(abMean), func(v float64) string { return fmt.Sprintf("%.3f", v) }),
			cell(p.Of(get("mean")), msf), cell(p.Of(get("rps")), rps), p.Of(abMbytes).Med, errCell(p), us(p.Of(get("cpu")).Med), latencyCell(p, true))
	}
	w.p("")
	for _, name := range names {
		if p, ok := w.workerPoint(WorkersAB, name); ok {
			for _, s := range p.Rounds {
				if s.ErrorText != "" {
					w.p("- %s, round %d: %s", w.workerLabel(name), s.Round, s.ErrorText)
				}
			}
		}
	}
	w.p("")
}

// memOf returns f of a memory sample, fresh or after load; NaN if that
// snapshot is missing.
func memOf(loaded bool, f func(TreeMemory) float64) func(Sample) float64 {
	return func(s Sample) float64 {
		t := s.Fresh
		if loaded {
			t = s.Loaded
		}
		if t == nil {
			return math.NaN()
		}
		return f(*t)
	}
}

// perWorker returns the median over a tree's workers of f, NaN without
// workers.
func perWorker(f func(ProcMem) int64) func(TreeMemory) float64 {
	return func(t TreeMemory) float64 {
		if len(t.Workers) == 0 {
			return math.NaN()
		}
		var v []float64
		for _, m := range t.Workers {
			v = append(v, float64(f(m)))
		}
		return stat(v).Med
	}
}

func rssOf(m ProcMem) int64 { return m.RSS }
func pssOf(m ProcMem) int64 { return m.PSS }

func mib(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.1f", v/(1<<20))
}

func (w *writer) workersMemory(names []string) {
	if !w.ran(WorkersMem) {
		return
	}
	w.p("### Memory: the master and each worker")
	w.p("")
	w.p("`/proc/PID/smaps_rollup` of every process of the server, *fresh* (once every worker is up, before any load) and *after load* (after the warm-up, `wrk` and `ab`). RSS counts in full, in every process, the pages it shares with the others (the binary's text, pages inherited from the master); PSS divides each shared page among the processes sharing it, so the PSS of the processes adds up to the memory the server holds, and a worker's PSS is its share. The process the harness started is the master (for a single process, the server itself; for Apache, its parent process); the workers are its descendants (Apache's children, which run its threads). Worker columns: the median over the workers of a run; every figure: the median over rounds. MiB.")
	w.p("")
	for _, loaded := range []bool{false, true} {
		when := "Fresh"
		if loaded {
			when = "After load"
		}
		w.p("%s:", when)
		w.p("")
		w.p("| server | processes | master RSS | master PSS | worker RSS | worker PSS | total RSS | total PSS |")
		w.p("|---|---:|---:|---:|---:|---:|---:|---:|")
		for _, name := range names {
			p, ok := w.workerPoint(WorkersMem, name)
			if !ok {
				continue
			}
			med := func(f func(TreeMemory) float64) string { return mib(p.Of(memOf(loaded, f)).Med) }
			w.p("| %s | %s | %s | %s | %s | %s | %s | %s |", w.workerLabel(name), w.processes(name),
				med(func(t TreeMemory) float64 { return float64(t.Master.RSS) }), med(func(t TreeMemory) float64 { return float64(t.Master.PSS) }),
				med(perWorker(rssOf)), med(perWorker(pssOf)),
				med(func(t TreeMemory) float64 { return float64(t.Total().RSS) }), med(func(t TreeMemory) float64 { return float64(t.Total().PSS) }))
		}
		w.p("")
	}
	// What one more worker costs: the slope of the total PSS.
	totalPSS := func(t TreeMemory) float64 { return float64(t.Total().PSS) }
	var lines []string
	for _, base := range []string{"sluice", "nginx"} {
		var counts []int
		for _, p := range w.rep.Peers {
			if p.Base == base && p.Workers > 0 && w.measured(WorkersMem, p.Name) {
				counts = append(counts, p.Workers)
			}
		}
		if len(counts) < 2 {
			continue
		}
		lo, hi := slices.Min(counts), slices.Max(counts)
		pl, _ := w.workerPoint(WorkersMem, w.variant(base, lo))
		ph, _ := w.workerPoint(WorkersMem, w.variant(base, hi))
		slope := func(loaded bool) string {
			return mib((ph.Of(memOf(loaded, totalPSS)).Med - pl.Of(memOf(loaded, totalPSS)).Med) / float64(hi-lo))
		}
		lines = append(lines, fmt.Sprintf("%s %s MiB fresh, %s MiB after load (total PSS from %d to %d workers, ÷ %d)", base, slope(false), slope(true), lo, hi, hi-lo))
	}
	if len(lines) > 0 {
		w.p("What one more worker costs, the growth of the server's total PSS per worker added: %s.", strings.Join(lines, "; "))
		w.p("")
	}
	if w.variant("nginx", 1) != "" {
		w.p("Each nginx worker allocates its connection table for `worker_connections` when it starts; the nginx peer sets that to the descriptor limit (RLIMIT_NOFILE, under [Machine](#machine)) so that it can hold the C10K scenario's connections, and the table is most of an nginx worker's PSS.")
		w.p("")
	}
	var ss []series
	idx := 0
	for _, base := range []string{"sluice", "nginx"} {
		for _, loaded := range []bool{false, true} {
			name := base + ", fresh"
			if loaded {
				name = base + ", after load"
			}
			s := series{name: name, idx: idx}
			idx++
			for _, p := range w.rep.Peers {
				if p.Base != base || p.Workers == 0 {
					continue
				}
				if pt, ok := w.workerPoint(WorkersMem, p.Name); ok {
					st := pt.Of(memOf(loaded, totalPSS))
					s.x = append(s.x, float64(p.Workers))
					s.y = append(s.y, Stat{st.Med / (1 << 20), st.Min / (1 << 20), st.Max / (1 << 20)})
				}
			}
			if len(s.x) > 0 {
				ss = append(ss, s)
			}
		}
	}
	if len(ss) > 0 {
		err := lineFigure(w.fig("workers-memory.png"), "Server memory by worker processes: total PSS of the master and its workers", "worker processes", "total PSS (MiB)", true, true, ss)
		w.figure("workers-memory.png", "total PSS by workers", Workers, err)
	}
}
