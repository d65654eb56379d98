package report

import (
	"fmt"
	"math"
	"strings"
)

// mixClasses are the route classes of the mix scenarios, in table order.
var mixClasses = []string{"static", "template", "dynamic"}

// mixServers returns the servers with samples of scenario sc, in the
// order of the report's peers.
func (w *writer) mixServers(sc string) []string {
	var names []string
	for _, p := range w.rep.Peers {
		if w.measured(sc, p.Name) {
			names = append(names, p.Name)
		}
	}
	return names
}

// classPoint returns the aggregate of server at x for a class ("" for
// all requests) of scenario sc, if measured.
func (w *writer) classPoint(sc, class, server string, x float64) (Point, bool) {
	for _, p := range w.rep.ClassPoints(sc, class, []string{server}) {
		if p.X == x {
			return p, true
		}
	}
	return Point{}, false
}

// answered reports whether a point has successful responses, whose
// latency it knows.
func answered(p Point) bool {
	for _, s := range p.Rounds {
		if s.OK > 0 {
			return true
		}
	}
	return false
}

// latencyCell is "p50 / p99" of a point, "–" if not measured or never
// answered 2xx or 3xx.
func latencyCell(p Point, ok bool) string {
	if !ok || !answered(p) {
		return "–"
	}
	return msf(p.Of(get("p50")).Med) + " / " + msf(p.Of(get("p99")).Med)
}

// p99Of is the median p99 of a point, NaN if not measured or never
// answered.
func p99Of(p Point, ok bool) Stat {
	if !ok || !answered(p) {
		return Stat{math.NaN(), math.NaN(), math.NaN()}
	}
	return p.Of(get("p99"))
}

func (w *writer) mix() {
	if !w.ran(Mix) && !w.ran(MixSlowDB) {
		return
	}
	x := max(w.maxX(Mix), w.maxX(MixSlowDB))
	w.p("## The C10K seed's mix at %s connections", thousands(x))
	w.p("")
	w.p("The C10K seed's site (`bench/mixsite`): three flat pages of 80 KB under `/static/`, three `html/template` pages that print the request under `/template/`, and `/dynamic/article/ID`, a template filled from the seed's `articles` table (10,000 rows, SQLite). %s keep-alive connections, opened before the clock starts, each drawing its requests at random (fixed seed): a third static pages, a third templates, a third articles with a random ID. The `-static` servers are nginx and Sluice serving the static pages alone (the same files, the same load restricted to them); `sluice-mix` serves the whole mix from the configuration shown under [Peers](#peers), `nethttp-mix` is the same site written with `net/http`, `html/template` and `database/sql` (`bench/peers/gomix`). sluicebench's generator gives the latency of each class of route; wrk (`-t1`, a Lua script drawing the same mix) the total. Every status other than 2xx and 3xx is an error.", thousands(x))
	w.p("")
	if w.ran(Mix) {
		w.mixTables(x)
	}
	if w.ran(MixSlowDB) {
		w.mixSlowDB(x)
	}
}

// mixTables writes the mix scenario's figure, tables and checks.
func (w *writer) mixTables(x float64) {
	servers := w.mixServers(Mix)
	var groups []string
	var vals [][]Stat
	for _, class := range append(mixClasses, "") {
		name := class
		if class == "" {
			name = "all requests"
		}
		var v []Stat
		for _, srv := range servers {
			p, ok := w.classPoint(Mix, class, srv, x)
			v = append(v, p99Of(p, ok))
		}
		groups = append(groups, name)
		vals = append(vals, v)
	}
	err := barFigure(w.fig("mix-p99.png"), fmt.Sprintf("C10K mix, %s connections: p99 latency by route (lower is better)", thousands(x)),
		"p99 latency (ms)", servers, groups, vals)
	w.figure("mix-p99.png", "p99 latency by route class", Mix, err)

	w.p("sluicebench's generator: p50 / p99 latency (ms) by class of route, medians over rounds:")
	w.p("")
	w.p("| server | req/s | server CPU-µs/req | static | template | dynamic | all | errors | RSS |")
	w.p("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, srv := range servers {
		all, ok := w.classPoint(Mix, "", srv, x)
		if !ok {
			continue
		}
		row := []string{srv, cell(all.Of(get("rps")), rps), cell(all.Of(get("cpu")), us)}
		for _, class := range mixClasses {
			row = append(row, latencyCell(w.classPoint(Mix, class, srv, x)))
		}
		row = append(row, latencyCell(all, true), errCell(all), bytesf(all.Of(get("rss")).Med))
		w.p("| %s |", strings.Join(row, " | "))
	}
	w.p("")
	w.mixErrors(Mix, servers, x)
	if w.ran(MixWrk) {
		w.p("wrk, all requests:")
		w.p("")
		w.simpleTable(MixWrk, x)
	}
	w.mixChecks(x)
}

// mixErrors lists the error breakdown of every sample that had errors.
func (w *writer) mixErrors(sc string, servers []string, x float64) {
	any := false
	for _, srv := range servers {
		p, ok := w.classPoint(sc, "", srv, x)
		if !ok {
			continue
		}
		for _, s := range p.Rounds {
			if s.ErrorText != "" {
				w.p("- %s, round %d: %s", srv, s.Round, s.ErrorText)
				any = true
			}
		}
	}
	if any {
		w.p("")
	}
}

// mixChecks writes the seed's targets as this run measured them: at x
// connections the mix has no error and a p99 at most twice nginx's on
// the static pages alone, and Sluice's static p99 is no higher than
// nginx's.
func (w *writer) mixChecks(x float64) {
	type tool struct{ name, sc string }
	tools := []tool{{"sluicebench", Mix}}
	if w.ran(MixWrk) {
		tools = append(tools, tool{"wrk", MixWrk})
	}
	p99 := func(sc, srv string) (float64, bool) {
		p, ok := w.classPoint(sc, "", srv, x)
		if !ok {
			return 0, false
		}
		return p.Of(get("p99")).Med, true
	}
	var rows []string
	for _, t := range tools {
		nginx, okN := p99(t.sc, "nginx-static")
		mix, okM := p99(t.sc, "sluice-mix")
		static, okS := p99(t.sc, "sluice-static")
		if !okM {
			continue
		}
		mp, _ := w.classPoint(t.sc, "", "sluice-mix", x)
		errs, total := mp.Errors()
		rows = append(rows, fmt.Sprintf("| %s | errors in the mix (sluice-mix) | %s of %s | %s |", t.name, thousands(float64(errs)), thousands(float64(total)), verdict(errs == 0)))
		if okN {
			rows = append(rows, fmt.Sprintf("| %s | mix p99 ≤ 2 × nginx's static p99 | %s ms vs 2 × %s ms | %s |", t.name, msf(mix), msf(nginx), verdict(mix <= 2*nginx)))
		}
		if okN && okS {
			rows = append(rows, fmt.Sprintf("| %s | Sluice's static p99 ≤ nginx's | %s ms vs %s ms | %s |", t.name, msf(static), msf(nginx), verdict(static <= nginx)))
		}
	}
	if len(rows) == 0 {
		return
	}
	w.p("The seed's targets, as this run measured them (medians over rounds):")
	w.p("")
	w.p("| tool | target | measured | |")
	w.p("|---|---|---:|---|")
	for _, r := range rows {
		w.p("%s", r)
	}
	w.p("")
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

// mixSlowDB writes the slow-database scenario: every query takes its
// delay in the database; what happens to each class of route, and the
// 503s of a server shedding load.
func (w *writer) mixSlowDB(x float64) {
	servers := w.mixServers(MixSlowDB)
	w.p("### With a slow database")
	w.p("")
	w.p("The same mix, the articles now read from a private PostgreSQL whose `articles` is a view that sleeps %.0f ms in every query (`CROSS JOIN pg_sleep(%g)`): the servers run the same query, and the database is slow.", w.rep.SlowQuery.Seconds()*1000, w.rep.SlowQuery.Seconds())
	w.p(" A 503 here is load shed (Sluice answers it with `Retry-After` once its data source's queue is full), counted apart from errors. Beside each server, its figures with the fast database (SQLite, the mix above) where they ran.")
	w.p("")
	var labels []string
	var vals [][]Stat
	for range mixClasses {
		vals = append(vals, nil)
	}
	for _, srv := range servers {
		for _, sc := range []string{Mix, MixSlowDB} {
			if _, ok := w.classPoint(sc, "", srv, x); !ok {
				continue
			}
			label := srv
			if sc == MixSlowDB {
				label += ", slow db"
			}
			labels = append(labels, label)
			for i, class := range mixClasses {
				p, ok := w.classPoint(sc, class, srv, x)
				vals[i] = append(vals[i], p99Of(p, ok))
			}
		}
	}
	err := barFigure(w.fig("mix-slowdb.png"), fmt.Sprintf("C10K mix, %s connections, fast and slow database: p99 of 2xx answers", thousands(x)),
		"p99 latency (ms)", labels, mixClasses, vals)
	w.figure("mix-slowdb.png", "p99 latency by route class with a slow database", MixSlowDB, err)
	w.p("p50 / p99 latency (ms) of the 2xx answers, by class of route; dynamic requests answered 503 (shed) and errors:")
	w.p("")
	w.p("| server | database | req/s (2xx) | static | template | dynamic | dynamic shed (503) | errors | RSS |")
	w.p("|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, srv := range servers {
		for _, sc := range []string{Mix, MixSlowDB} {
			all, ok := w.classPoint(sc, "", srv, x)
			if !ok {
				continue
			}
			db := "SQLite"
			if sc == MixSlowDB {
				db = "PostgreSQL, slow"
			}
			row := []string{srv, db, cell(all.Of(get("rps")), rps)}
			for _, class := range mixClasses {
				row = append(row, latencyCell(w.classPoint(sc, class, srv, x)))
			}
			shed := "–"
			if d, ok := w.classPoint(sc, "dynamic", srv, x); ok && sc == MixSlowDB {
				var n, total int64
				for _, s := range d.Rounds {
					n += s.Shed
					total += s.OK + s.Errors + s.Shed
				}
				shed = fmt.Sprintf("%s (%.0f %%)", thousands(float64(n)), 100*float64(n)/float64(max(total, 1)))
			}
			row = append(row, shed, errCell(all), bytesf(all.Of(get("rss")).Med))
			w.p("| %s |", strings.Join(row, " | "))
		}
	}
	w.p("")
	w.mixErrors(MixSlowDB, servers, x)
}
