package report

import (
	"fmt"
	"math"
	"strings"
)

// tlsRun is one measurement of the tls scenario: its label in the
// report's tables and in its plots' legends, the scenario its samples
// carry, and what one unit is.
type tlsRun struct{ label, short, sc, unit string }

// tlsRuns are the tls scenario's measurements, in the report's order.
var tlsRuns = []tlsRun{
	{"TLS HTTP/1.1 keep-alive (wrk)", "TLS HTTP/1.1 (wrk)", TLSH1, "request"},
	{"HTTP/2 (h2load -m10)", "HTTP/2 (h2load)", TLSH2, "request"},
	{"full handshakes (sluicebench, no resumption)", "full", TLSFull, "handshake"},
	{"resumed handshakes (sluicebench, each client's last session offered)", "resumed", TLSResumed, "handshake"},
}

// tlsServers returns the servers with samples of the tls scenario, in
// the order of the report's peers.
func (w *writer) tlsServers() []string {
	var names []string
	for _, p := range w.rep.Peers {
		for _, r := range tlsRuns {
			if w.measured(r.sc, p.Name) {
				names = append(names, p.Name)
				break
			}
		}
	}
	return names
}

// tlsLatency is the latency cell of a tls run: p50 / p99 when the tool
// gave them (wrk, sluicebench), else h2load's mean / max.
func tlsLatency(p Point) string {
	if !answered(p) {
		return "–"
	}
	if p.Of(get("p99")).Med > 0 {
		return latencyCell(p, true)
	}
	return "mean " + msf(p.Of(func(s Sample) float64 { return s.MeanMs }).Med) + " / max " + msf(p.Of(func(s Sample) float64 { return s.MaxMs }).Med)
}

// resumedCell is the share of a point's handshakes, over its rounds,
// that resumed a session.
func resumedCell(p Point) string {
	var n, ok int64
	for _, s := range p.Rounds {
		n, ok = n+s.Resumed, ok+s.OK
	}
	if ok == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f %%", 100*float64(n)/float64(ok))
}

func (w *writer) tls() {
	var runs []tlsRun
	for _, r := range tlsRuns {
		if w.ran(r.sc) {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return
	}
	servers := w.tlsServers()
	w.p("## TLS and HTTP/2: the 151-byte page over TLS, one ECDSA P-256 certificate")
	w.p("")
	w.p("Every server serves the same page with the same certificate, generated for the run (self-signed ECDSA P-256), HTTP/2 and HTTP/1.1 by ALPN on one port, one worker or thread on the server core, keep-alive connections and HTTP/2 sessions kept for the whole run, no access log (configurations under [Peers](#peers)). "+
		"Every round starts each server afresh, checks one HTTPS GET over HTTP/1.1 and one over HTTP/2, warms it up with h2load, then measures it four times: "+
		"`wrk -t1 -c100 -d%[1]ds --latency` over TLS HTTP/1.1 keep-alive; `h2load -c100 -m10 -t1 -D %[1]d` over HTTP/2; "+
		"**full handshakes**, sluicebench's client opening 50 connections at a time, each a new handshake with no session cache (so no resumption; X25519, the key share every server's TLS library takes) and one GET with `Connection: close`; "+
		"and **resumed handshakes**, the same client keeping each connection's session and offering it on its next (the table counts those the server resumed). "+
		"**Server CPU-µs** per request or per handshake is the growth of utime+stime of the server's process tree (`/proc/PID/stat`) over the run, divided by the requests answered. h2load gives no percentiles: its rows show the mean and maximum time per request.", max(int(w.rep.Duration.Seconds()), 1))
	w.p("")

	// Bars per run of one unit, one per server: metric's medians.
	bars := func(unit, metric string) (groups []string, vals [][]Stat) {
		for _, r := range runs {
			if r.unit != unit {
				continue
			}
			groups = append(groups, r.short)
			var c []Stat
			for _, srv := range servers {
				if p, ok := w.point(r.sc, srv, w.maxX(r.sc)); ok {
					c = append(c, p.Of(get(metric)))
				} else {
					c = append(c, Stat{math.NaN(), math.NaN(), math.NaN()})
				}
			}
			vals = append(vals, c)
		}
		return groups, vals
	}
	if groups, vals := bars("request", "cpu"); len(groups) > 0 {
		err := barFigure(w.fig("tls-cpu.png"), "Server CPU-µs per request over TLS (lower is better)",
			"CPU-µs per request (server process tree, /proc/PID/stat)", servers, groups, vals)
		w.figure("tls-cpu.png", "server CPU-µs per request over TLS HTTP/1.1 and HTTP/2", TLS, err)
	}
	if groups, vals := bars("handshake", "rps"); len(groups) > 0 {
		err := barFigure(w.fig("tls-handshakes.png"), "New TLS connections/s (handshakes)",
			"connections/s", servers, groups, vals)
		w.figure("tls-handshakes.png", "new TLS connections per second", TLS, err)
	}

	for _, r := range runs {
		w.p("%s, medians over rounds:", r.label)
		w.p("")
		per := "req/s"
		if r.unit == "handshake" {
			per = "connections/s"
		}
		resumed, resumedHead := "", ""
		if r.unit == "handshake" {
			resumedHead = " resumed |"
		}
		w.p("| server | %s | server CPU-µs/%s | server core busy | latency ms |%s RSS | errors |", per, r.unit, resumedHead)
		w.p("|---|---:|---:|---:|---:|%s---:|---:|", strings.Repeat("---:|", len(resumedHead)/len(" resumed |")))
		x := w.maxX(r.sc)
		for _, srv := range servers {
			p, ok := w.point(r.sc, srv, x)
			if !ok {
				continue
			}
			if r.unit == "handshake" {
				resumed = " " + resumedCell(p) + " |"
			}
			w.p("| %s | %s | %s | %.0f %% | %s |%s %s | %s |", srv, cell(p.Of(get("rps")), rps), cell(p.Of(get("cpu")), us),
				p.Of(get("busy")).Med, tlsLatency(p), resumed, bytesf(p.Of(get("rss")).Med), errCell(p))
		}
		w.p("")
		w.mixErrors(r.sc, servers, x)
	}
	w.tlsChecks()
}

// tlsChecks writes issue 20's targets as this run measured them: no
// error through Sluice, its HTTP/2 CPU per request at most 1.5× nginx's
// and its TLS HTTP/1.1 keep-alive at most 1.25× nginx's.
func (w *writer) tlsChecks() {
	var rows []string
	for _, t := range []struct {
		sc    string
		label string
		bound float64
	}{{TLSH1, "TLS HTTP/1.1 keep-alive", 1.25}, {TLSH2, "HTTP/2", 1.5}} {
		x := w.maxX(t.sc)
		sp, okS := w.point(t.sc, "sluice-tls", x)
		if !okS {
			continue
		}
		errs, total := sp.Errors()
		rows = append(rows, fmt.Sprintf("| %s | errors through sluice-tls | %s of %s | %s |", t.label, thousands(float64(errs)), thousands(float64(total)), verdict(errs == 0)))
		if np, okN := w.point(t.sc, "nginx-tls", x); okN {
			s, n := sp.Of(get("cpu")).Med, np.Of(get("cpu")).Med
			rows = append(rows, fmt.Sprintf("| %s | sluice-tls's CPU-µs per request ≤ %.2f× nginx-tls's | %s vs %s (%.2f×) | %s |", t.label, t.bound, us(s), us(n), s/n, verdict(s <= t.bound*n)))
		}
	}
	if len(rows) == 0 {
		return
	}
	w.p("The targets, as this run measured them (medians over rounds):")
	w.p("")
	w.p("| run | target | measured | |")
	w.p("|---|---|---:|---|")
	w.p("%s", strings.Join(rows, "\n"))
	w.p("")
}
