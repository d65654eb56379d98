package report

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot/vg"
)

// c10kPage names a page of the c10k-wrk scenario by its size in bytes
// (Sample.X): "151 B", "80 KB".
func c10kPage(x float64) string {
	if x < 1<<10 {
		return fmt.Sprintf("%.0f B", x)
	}
	return sizeLabel(x)
}

// c10kConns is the connections of the c10k-wrk scenario's runs.
func (w *writer) c10kConns() string {
	if w.rep.C10KWrkConns > 0 {
		return thousands(float64(w.rep.C10KWrkConns))
	}
	return "10,000"
}

func (w *writer) c10kWrk() {
	if !w.ran(C10KWrk) {
		return
	}
	xs := w.rep.Xs(C10KWrk)
	conns := w.c10kConns()
	w.p("## C10K with wrk: %s keep-alive connections, 151 B and 80 KB", conns)
	w.p("")
	w.p("`wrk -t1 -c%s -d%ds --latency --timeout 10s http://127.0.0.1:$PORT/PAGE`, pinned like the generator, once on the 151-byte `index.html` and once on an 80 KB (81,920-byte) file, against the same server process as the scenarios before it (started fresh for the round and warmed up). wrk opens its %s connections when it starts and keeps them open; latency is wrk's (from each request's write), a request not answered within 10 s is a timeout. **Errors**: wrk's socket errors (connect, read, write, timeout) and responses other than 2xx or 3xx. **Cores busy, all work**: the share of the server's and of the client's pinned core's time that was not idle during the run, from `/proc/stat`; unlike the server's CPU time it counts the network stack's work wherever it ran (on loopback much of one end's receiving runs on the other end's core).",
		strings.ReplaceAll(conns, ",", ""), max(int(w.rep.Duration.Seconds()), 1), conns)
	w.p("")
	if v := w.c10kVerdict(); v != "" {
		w.p("%s", v)
		w.p("")
	}
	var labels []string
	for _, srv := range w.servers {
		if w.measured(C10KWrk, srv) {
			labels = append(labels, srv)
		}
	}
	var groups []string
	var rpsV, p99V [][]Stat
	nan := Stat{math.NaN(), math.NaN(), math.NaN()}
	for _, x := range xs {
		groups = append(groups, c10kPage(x))
		var r, l []Stat
		for _, srv := range labels {
			if p, ok := w.point(C10KWrk, srv, x); ok {
				r, l = append(r, p.Of(get("rps"))), append(l, p99Of(p, true))
			} else {
				r, l = append(r, nan), append(l, nan)
			}
		}
		rpsV, p99V = append(rpsV, r), append(p99V, l)
	}
	err := barPanels(w.fig("c10k-wrk.png"), 11*vg.Inch,
		barPanel{fmt.Sprintf("wrk, %s connections: requests/s", conns), "requests/s", labels, groups, rpsV},
		barPanel{"p99 latency (lower is better)", "p99 (ms)", labels, groups, p99V})
	w.figure("c10k-wrk.png", "requests/s and p99 latency at "+conns+" connections", C10KWrk, err)
	for _, x := range xs {
		w.p("%s page, medians over rounds:", c10kPage(x))
		w.p("")
		w.p("| server | req/s | p50 / p99 ms | server CPU-µs/req | server core busy | cores busy, all work: server / client | RSS | errors |")
		w.p("|---|---:|---:|---:|---:|---:|---:|---:|")
		for _, srv := range labels {
			p, ok := w.point(C10KWrk, srv, x)
			if !ok {
				continue
			}
			w.p("| %s | %s | %s | %s | %.0f %% | %s | %s | %s |", srv, cell(p.Of(get("rps")), rps), latencyCell(p, true), cell(p.Of(get("cpu")), us),
				p.Of(get("busy")).Med, coresCell(p), bytesf(p.Of(get("rss")).Med), errCell(p))
		}
		w.p("")
		if s := w.c10kPace(x); s != "" {
			w.p("%s", s)
			w.p("")
		}
	}
	for _, srv := range labels {
		for _, p := range w.rep.Points(C10KWrk, []string{srv}) {
			for _, s := range p.Rounds {
				if s.ErrorText != "" {
					w.p("- %s, %s, round %d: %s", srv, c10kPage(p.X), s.Round, s.ErrorText)
				}
			}
		}
	}
	w.p("")
}

// coresCell is the medians of a point's ServerCore and ClientCore, as
// "97 / 100 %"; "–" if they were not measured.
func coresCell(p Point) string {
	sc := p.Of(func(s Sample) float64 { return s.ServerCore }).Med
	cc := p.Of(func(s Sample) float64 { return s.ClientCore }).Med
	if sc == 0 && cc == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f / %.0f %%", sc, cc)
}

// paceBusy is how busy, in percent, a core must have been to count as
// having had no time to spare.
const paceBusy = 98

// c10kPace is the sentence that says, for the page of size x, that the
// client's core had no time to spare in Sluice's and nginx's runs (its
// median at least paceBusy in both), so that requests/s there measure
// the client's pace with each server more than the server; "" otherwise,
// or unless both were measured.
func (w *writer) c10kPace(x float64) string {
	var lo, hi, slo, shi float64 = 101, -1, 101, -1
	for _, srv := range []string{"sluice", "nginx"} {
		p, ok := w.point(C10KWrk, srv, x)
		if !ok {
			return ""
		}
		cc := p.Of(func(s Sample) float64 { return s.ClientCore }).Med
		sc := p.Of(func(s Sample) float64 { return s.ServerCore }).Med
		lo, hi, slo, shi = min(lo, cc), max(hi, cc), min(slo, sc), max(shi, sc)
	}
	if lo < paceBusy {
		return ""
	}
	return fmt.Sprintf("On the %s page the client's core had no time to spare in Sluice's and nginx's runs (%s busy, medians; the servers' cores %s): "+
		"wrk set the pace, so requests/s here compare how much work each server's way of answering leaves the client's core "+
		"(its reads, and the acknowledgements and timers of both ends that land there) as much as the servers' own costs.",
		c10kPage(x), pctRange(lo, hi), pctRange(slo, shi))
}

// pctRange is "100 %" or "93–98 %".
func pctRange(lo, hi float64) string {
	if fmt.Sprintf("%.0f", lo) == fmt.Sprintf("%.0f", hi) {
		return fmt.Sprintf("%.0f %%", lo)
	}
	return fmt.Sprintf("%.0f–%.0f %%", lo, hi)
}

// c10kVerdict is the sentence that says, from the medians of this run,
// whether Sluice served at least nginx's requests/s with a p99 no higher
// than nginx's on each page of the c10k-wrk scenario (issue 18's target),
// and with how many errors; "" unless both were measured.
func (w *writer) c10kVerdict() string {
	var parts []string
	for _, x := range w.rep.Xs(C10KWrk) {
		s, ok1 := w.point(C10KWrk, "sluice", x)
		n, ok2 := w.point(C10KWrk, "nginx", x)
		if !ok1 || !ok2 {
			continue
		}
		sr, nr := s.Of(get("rps")).Med, n.Of(get("rps")).Med
		sp, np := s.Of(get("p99")).Med, n.Of(get("p99")).Med
		se, _ := s.Errors()
		verdict := "meets the target"
		switch {
		case sr >= nr && sp <= np:
		case sr >= nr:
			verdict = "has the throughput but not the tail"
		case sp <= np:
			verdict = "has the tail but not the throughput"
		default:
			verdict = "misses both"
		}
		parts = append(parts, fmt.Sprintf("on the %s page Sluice %s: %s req/s %s nginx's %s, p99 %s ms %s nginx's %s ms, %s errors",
			c10kPage(x), verdict, rps(sr), rel(sr >= nr, "≥", "<"), rps(nr), msf(sp), rel(sp <= np, "≤", ">"), msf(np), thousands(float64(se))))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("**Against nginx in this run** (target: requests/s ≥ nginx's and p99 ≤ nginx's at %s connections, medians): %s.", w.c10kConns(), strings.Join(parts, "; "))
}

// rel returns yes if ok, else no.
func rel(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}
