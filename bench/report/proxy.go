package report

import (
	"fmt"
	"math"
	"strings"
)

// proxyTool is one load tool of the proxy scenario and the scenario its
// samples carry.
type proxyTool struct{ name, sc string }

// proxyTools returns the tools that ran in the proxy scenario: wrk first
// (the reference, as in the other reports' keep-alive figures), then
// sluicebench's generator.
func (w *writer) proxyTools() []proxyTool {
	var ts []proxyTool
	for _, t := range []proxyTool{{"wrk", ProxyWrk}, {"sluicebench", Proxy}} {
		if w.ran(t.sc) {
			ts = append(ts, t)
		}
	}
	return ts
}

// proxyRateLabel names the fixed-rate run of the proxy scenario, at
// rate requests/s.
func proxyRateLabel(rate float64) string {
	return "sluicebench at " + valueLabel(rate, false) + " req/s"
}

// proxyServers returns the proxies with samples of the proxy scenario,
// in the order of the report's peers.
func (w *writer) proxyServers() []string {
	var names []string
	for _, p := range w.rep.Peers {
		if w.measured(Proxy, p.Name) || w.measured(ProxyWrk, p.Name) || w.measured(ProxyRate, p.Name) {
			names = append(names, p.Name)
		}
	}
	return names
}

// upstreamConnsCell sums the upstream connections a point's rounds
// opened; "?" if a round could not read them.
func upstreamConnsCell(p Point) string {
	var n int64
	for _, s := range p.Rounds {
		if s.UpstreamConns < 0 {
			return "?"
		}
		n += s.UpstreamConns
	}
	return thousands(float64(n))
}

func (w *writer) proxy() {
	tools := w.proxyTools()
	if len(tools) == 0 && !w.ran(ProxyRate) {
		return
	}
	servers := w.proxyServers()
	x := max(w.maxX(Proxy), w.maxX(ProxyWrk))
	pool := "an idle pool larger than the client's connections"
	if w.rep.ProxyIdleConns > 0 {
		pool = fmt.Sprintf("up to %s idle keep-alive connections (more than the client's %s)", thousands(float64(w.rep.ProxyIdleConns)), thousands(x))
	}
	cpu := ""
	if w.rep.ClientCPU != "" {
		cpu = " " + w.rep.ClientCPU
	}
	w.p("## The reverse proxy: the 151-byte page through each proxy, %s keep-alive connections", thousands(x))
	w.p("")
	w.p("One upstream serves every proxy of the run: nginx answering every request with the 151-byte page by `return 200` (no file to open: the cheapest answer it makes), started once and pinned with the client to CPU%s, so that the server core is the proxy's alone. "+
		"Each proxy runs on the server core with one worker or thread: Sluice's `proxy` source (`sluice-proxy`), nginx's `proxy_pass` to an `upstream` block with `keepalive` (`nginx-proxy`), Caddy's `reverse_proxy` (`caddy-proxy`) and HAProxy in `mode http` with `http-reuse always`. "+
		"Each keeps %s to the upstream, so that once warmed up none dials it during a run; each passes the client's Host on and names the client in X-Forwarded-For, -Proto and -Host; none logs requests (configurations under [Peers](#peers)).", cpu, pool)
	w.p("")
	w.p("Every round starts each proxy afresh, checks that `GET /` through it returns the upstream's page byte for byte, warms it up for a second at %s connections, then loads it with sluicebench's generator and with `wrk -t1 -c%s -d%ds --latency`, each as fast as the proxy answers, and with the generator at one fixed rate (below). "+
		"**Server CPU-µs per proxied request** is the proxy's process tree alone (`/proc/PID/stat`). The upstream's own CPU per request, and the connections it accepted during each run (from nginx's `stub_status`; 0 when the proxy kept its pool), are shown apart. "+
		"**Client core busy** is the load tool's and the upstream's CPU time over the run, on the core they share: near 100 %%, the client side limited the rate, and the proxy was measured below its full load (where a server spends more per request). wrk is the reference, as in the other reports' keep-alive figures; the generator is a second client.", thousands(x), thousands(x), max(int(w.rep.Duration.Seconds()), 1))
	w.p("")
	var groups []string
	var cpuVals, rpsVals [][]Stat
	for _, t := range tools {
		groups = append(groups, t.name)
		var c, r []Stat
		for _, srv := range servers {
			p, ok := w.point(t.sc, srv, x)
			if !ok {
				c, r = append(c, Stat{math.NaN(), math.NaN(), math.NaN()}), append(r, Stat{math.NaN(), math.NaN(), math.NaN()})
				continue
			}
			c, r = append(c, p.Of(get("cpu"))), append(r, p.Of(get("rps")))
		}
		cpuVals, rpsVals = append(cpuVals, c), append(rpsVals, r)
	}
	cpuGroups := groups
	if rate := w.maxX(ProxyRate); rate > 0 {
		cpuGroups = append(groups[:len(groups):len(groups)], proxyRateLabel(rate))
		var c []Stat
		for _, srv := range servers {
			if p, ok := w.point(ProxyRate, srv, rate); ok {
				c = append(c, p.Of(get("cpu")))
			} else {
				c = append(c, Stat{math.NaN(), math.NaN(), math.NaN()})
			}
		}
		cpuVals = append(cpuVals, c)
	}
	err := barFigure(w.fig("proxy-cpu.png"), fmt.Sprintf("Server CPU-µs per proxied request: 151-byte page, %s keep-alive connections (lower is better)", thousands(x)),
		"CPU-µs per request (proxy process tree, /proc/PID/stat)", servers, cpuGroups, cpuVals)
	w.figure("proxy-cpu.png", "proxy CPU-µs per proxied request", Proxy, err)
	err = barFigure(w.fig("proxy-rps.png"), fmt.Sprintf("Proxied requests/s: 151-byte page, %s keep-alive connections", thousands(x)),
		"requests/s", servers, groups, rpsVals)
	w.figure("proxy-rps.png", "proxied requests/s", Proxy, err)

	for _, t := range tools {
		w.p("%s, medians over rounds (upstream connections opened: the sum over rounds):", t.name)
		w.p("")
		w.p("| proxy | req/s | server CPU-µs/req | server core busy | p50 / p99 ms | upstream conns opened | upstream CPU-µs/req | client core busy | RSS | errors |")
		w.p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, srv := range servers {
			p, ok := w.point(t.sc, srv, x)
			if !ok {
				continue
			}
			w.p("| %s | %s | %s | %.0f %% | %s | %s | %s | %.0f %% | %s | %s |", srv, cell(p.Of(get("rps")), rps), cell(p.Of(get("cpu")), us),
				p.Of(get("busy")).Med, latencyCell(p, true), upstreamConnsCell(p), us(p.Of(func(s Sample) float64 { return s.UpstreamCPUus }).Med),
				p.Of(func(s Sample) float64 { return s.ClientBusy }).Med, bytesf(p.Of(get("rss")).Med), errCell(p))
		}
		w.p("")
		w.mixErrors(t.sc, servers, x)
	}
	w.proxyRate(servers)
	w.proxyDisturbed(tools, servers, x)
	w.proxyChecks(tools, x)
}

// proxyRate writes the fixed-rate run's table.
func (w *writer) proxyRate(servers []string) {
	rate := w.maxX(ProxyRate)
	if rate == 0 {
		return
	}
	w.p("%s: the generator offers every proxy the same %s requests/s (an open loop over the same connections; latency from each request's scheduled start; a request not answered within 2 s is an error), so that CPU per request is compared at equal load, below the saturation of either core, rather than each proxy at its own rate:", proxyRateLabel(rate), thousands(rate))
	w.p("")
	w.p("| proxy | answered req/s | server CPU-µs/req | server core busy | p50 / p99 ms | upstream conns opened | upstream CPU-µs/req | client core busy | RSS | errors |")
	w.p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, srv := range servers {
		p, ok := w.point(ProxyRate, srv, rate)
		if !ok {
			continue
		}
		w.p("| %s | %s | %s | %.0f %% | %s | %s | %s | %.0f %% | %s | %s |", srv, cell(p.Of(get("rps")), rps), cell(p.Of(get("cpu")), us),
			p.Of(get("busy")).Med, latencyCell(p, true), upstreamConnsCell(p), us(p.Of(func(s Sample) float64 { return s.UpstreamCPUus }).Med),
			p.Of(func(s Sample) float64 { return s.ClientBusy }).Med, bytesf(p.Of(get("rss")).Med), errCell(p))
	}
	w.p("")
	w.mixErrors(ProxyRate, servers, rate)
}

// busyEnough is the share of a core, in percent, above which a run is
// taken to have been limited by that core.
const busyEnough = 80

// proxyDisturbed lists the runs in which neither the proxy's core nor
// the client's was busy: something else limited them (other processes
// on the machine, or a proxy that waits), and their CPU per request,
// measured below full load, does not compare with the rest.
func (w *writer) proxyDisturbed(tools []proxyTool, servers []string, x float64) {
	var lines []string
	for _, t := range tools {
		for _, srv := range servers {
			p, ok := w.point(t.sc, srv, x)
			if !ok {
				continue
			}
			for _, s := range p.Rounds {
				if busy := get("busy")(s); busy < busyEnough && s.ClientBusy < busyEnough {
					lines = append(lines, fmt.Sprintf("- %s, %s, round %d: proxy core %.0f %% busy, client core %.0f %%", srv, t.name, s.Round, busy, s.ClientBusy))
				}
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	w.p("In these runs neither core was busy above %d %%, so neither the proxy's CPU nor the client's limited the rate: other work on the machine took the cores, or the proxy waited on something else. Their CPU per request was measured below full load and does not compare with the others'; a rerun on an idle machine tells which.", busyEnough)
	w.p("")
	w.p("%s", strings.Join(lines, "\n"))
	w.p("")
}

// proxyChecks writes the target as this run measured it: no
// error through Sluice, and Sluice's CPU per proxied request no higher
// than nginx's.
func (w *writer) proxyChecks(tools []proxyTool, x float64) {
	type run struct {
		name, sc string
		x        float64
	}
	var runs []run
	for _, t := range tools {
		runs = append(runs, run{t.name, t.sc, x})
	}
	if rate := w.maxX(ProxyRate); rate > 0 {
		runs = append(runs, run{proxyRateLabel(rate), ProxyRate, rate})
	}
	var rows []string
	for _, t := range runs {
		sp, okS := w.point(t.sc, "sluice-proxy", t.x)
		if !okS {
			continue
		}
		errs, total := sp.Errors()
		rows = append(rows, fmt.Sprintf("| %s | errors through sluice-proxy | %s of %s | %s |", t.name, thousands(float64(errs)), thousands(float64(total)), verdict(errs == 0)))
		if np, okN := w.point(t.sc, "nginx-proxy", t.x); okN {
			s, n := sp.Of(get("cpu")).Med, np.Of(get("cpu")).Med
			rows = append(rows, fmt.Sprintf("| %s | sluice-proxy's CPU-µs per proxied request ≤ nginx-proxy's | %s vs %s | %s |", t.name, us(s), us(n), verdict(s <= n)))
		}
	}
	if len(rows) == 0 {
		return
	}
	w.p("The target, as this run measured it (medians over rounds):")
	w.p("")
	w.p("| tool | target | measured | |")
	w.p("|---|---|---:|---|")
	w.p("%s", strings.Join(rows, "\n"))
	w.p("")
}
