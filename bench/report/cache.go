package report

import (
	"fmt"
	"math"
	"strings"
)

// Names of the cache scenario's servers, as the harness calls them.
const (
	cacheSluice  = "sluice-cache"
	cacheProxy   = "sluice-proxy"
	cacheNginx   = "nginx-cache"
	cacheVarnish = "varnish"
)

// cacheServers returns the servers with samples of scenario sc, in the
// order of the report's peers.
func (w *writer) cacheServers(sc string) []string {
	var names []string
	for _, p := range w.rep.Peers {
		if w.measured(sc, p.Name) {
			names = append(names, p.Name)
		}
	}
	return names
}

// originCell is the origin's requests per request the client got
// answered over a point's rounds; "?" if a round could not read them.
func originCell(p Point) string {
	var origin, ok int64
	for _, s := range p.Rounds {
		if s.OriginRequests < 0 {
			return "?"
		}
		origin += s.OriginRequests
		ok += s.OK
	}
	if ok == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3f", float64(origin)/float64(ok))
}

func (w *writer) cache() {
	if !w.ran(CacheHit) && !w.ran(CacheMiss) {
		return
	}
	cpu := ""
	if w.rep.ClientCPU != "" {
		cpu = " " + w.rep.ClientCPU
	}
	w.p("## Cache: hits and misses through Sluice, nginx and Varnish, one origin, 100 keep-alive connections")
	w.p("")
	w.p("One origin serves every cache of the run: an nginx on the client's CPU%s (so that the server core is the cache's alone) answering the docroot's 4 KB page and 100 KB file with `Cache-Control: max-age=3600`, `ETag` and `Last-Modified`, whatever the query string. "+
		"In front of it, one at a time on the server core, each with one worker or thread pool and a 256 MB store, none logging requests: Sluice's `cache` component before its `proxy` source (`sluice-cache`), nginx's `proxy_cache` (`nginx-cache`, its cache in a `proxy_cache_path` of the run's scratch directory) and Varnish (`varnish`, a `varnishd -F` of the harness's own, `-s malloc`, `-p thread_pools=1`); "+
		"on misses, Sluice's `proxy` source alone (`sluice-proxy`) is measured on the same requests, so that a miss's cost can be read against the proxy's (configurations under [Peers](#peers)).", cpu)
	w.p("")
	w.p("Every round starts each server afresh, checks that it answers each object byte for byte and that its second answer is a hit (its own cache-status field), warms it up for a second, then runs `wrk -t1 -c100 --latency` for %ds on each object: **hit**, one URL over and over; **miss**, every request a distinct query string (a wrk Lua script numbering them), so that every request is a new key that the cache fetches from the origin and stores. "+
		"Before each miss run a cache is first sent misses of that object until the origin has answered enough to fill its 256 MB store and a tenth more (at most 30 s): misses are measured with the store full, evicting as they store, as in a cache that has run a while, not while it first fills (which, for Sluice's memory store, is when a fresh process first touches its store's pages: a cost of its first 256 MB, not of each miss). "+
		"**Server CPU-µs per request** is, from the threads' run time in `/proc/PID/task/TID/schedstat`: Sluice's process; nginx's worker alone (its master and cache manager are under \"all processes\"); every process of Varnish (the manager and the child). "+
		"\"origin req/req\" is the requests the origin answered (its `stub_status`) per request the client got answered: near 0 on hits, 1 on misses. Errors are wrk's socket errors and non-2xx answers.", max(int(w.rep.Duration.Seconds()), 1))
	w.p("")

	for _, k := range []struct{ sc, label, file string }{
		{CacheHit, "hit", "cache-hit-cpu.png"},
		{CacheMiss, "miss", "cache-miss-cpu.png"},
	} {
		if !w.ran(k.sc) {
			continue
		}
		servers := w.cacheServers(k.sc)
		xs := w.rep.Xs(k.sc)
		var groups []string
		var vals [][]Stat
		for _, x := range xs {
			groups = append(groups, sizeLabel(x)+" "+k.label)
			var v []Stat
			for _, srv := range servers {
				p, ok := w.point(k.sc, srv, x)
				if !ok {
					v = append(v, Stat{math.NaN(), math.NaN(), math.NaN()})
					continue
				}
				v = append(v, p.Of(get("cpu")))
			}
			vals = append(vals, v)
		}
		err := barFigure(w.fig(k.file), fmt.Sprintf("Server CPU-µs per cache %s: 100 keep-alive connections (wrk; lower is better)", k.label),
			"CPU-µs per request (schedstat)", servers, groups, vals)
		w.figure(k.file, "server CPU-µs per cache "+k.label, Cache, err)
		for _, x := range xs {
			w.p("%s, %s, wrk, medians over rounds:", sizeLabel(x), k.label)
			w.p("")
			w.p("| server | req/s | server CPU-µs/req | all processes CPU-µs/req | server core busy | p50 / p99 ms | origin req/req | RSS | errors |")
			w.p("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
			for _, srv := range servers {
				p, ok := w.point(k.sc, srv, x)
				if !ok {
					continue
				}
				w.p("| %s | %s | %s | %s | %.0f %% | %s | %s | %s | %s |", srv, cell(p.Of(get("rps")), rps), cell(p.Of(get("cpu")), us),
					cell(p.Of(func(s Sample) float64 { return s.TreeCPUus }), us), p.Of(get("busy")).Med, latencyCell(p, true),
					originCell(p), bytesf(p.Of(get("rss")).Med), errCell(p))
			}
			w.p("")
			w.mixErrors(k.sc, servers, x)
		}
	}
	w.cacheChecks()
}

// cacheChecks writes the targets as this run measured them, per object:
// a Sluice hit at most 0.8× nginx's CPU per request and no more than
// Varnish's, a Sluice miss at most 1.10× its proxy alone, and no error
// through sluice-cache.
func (w *writer) cacheChecks() {
	var rows []string
	for _, x := range w.rep.Xs(CacheHit) {
		sp, ok := w.point(CacheHit, cacheSluice, x)
		if !ok {
			continue
		}
		s := sp.Of(get("cpu")).Med
		if np, ok := w.point(CacheHit, cacheNginx, x); ok {
			n := np.Of(get("cpu")).Med
			rows = append(rows, fmt.Sprintf("| %s hit | sluice-cache's CPU-µs per request ≤ 0.8 × nginx-cache's | %s vs %s (%.2f×) | %s |", sizeLabel(x), us(s), us(n), s/n, verdict(s <= 0.8*n)))
		}
		if vp, ok := w.point(CacheHit, cacheVarnish, x); ok {
			v := vp.Of(get("cpu")).Med
			rows = append(rows, fmt.Sprintf("| %s hit | sluice-cache's CPU-µs per request ≤ varnish's | %s vs %s (%.2f×) | %s |", sizeLabel(x), us(s), us(v), s/v, verdict(s <= v)))
		}
		errs, total := sp.Errors()
		rows = append(rows, fmt.Sprintf("| %s hit | errors through sluice-cache | %s of %s | %s |", sizeLabel(x), thousands(float64(errs)), thousands(float64(total)), verdict(errs == 0)))
	}
	for _, x := range w.rep.Xs(CacheMiss) {
		sp, ok := w.point(CacheMiss, cacheSluice, x)
		if !ok {
			continue
		}
		if pp, ok := w.point(CacheMiss, cacheProxy, x); ok {
			s, p := sp.Of(get("cpu")).Med, pp.Of(get("cpu")).Med
			rows = append(rows, fmt.Sprintf("| %s miss | sluice-cache's CPU-µs per request ≤ 1.10 × sluice-proxy's on the same requests | %s vs %s (%.2f×) | %s |", sizeLabel(x), us(s), us(p), s/p, verdict(s <= 1.10*p)))
		}
		errs, total := sp.Errors()
		rows = append(rows, fmt.Sprintf("| %s miss | errors through sluice-cache | %s of %s | %s |", sizeLabel(x), thousands(float64(errs)), thousands(float64(total)), verdict(errs == 0)))
	}
	if len(rows) == 0 {
		return
	}
	w.p("The targets, as this run measured them (medians over rounds):")
	w.p("")
	w.p("| object | target | measured | |")
	w.p("|---|---|---:|---|")
	w.p("%s", strings.Join(rows, "\n"))
	w.p("")
}
