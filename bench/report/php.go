package report

import (
	"fmt"
	"math"
	"strings"
)

// phpPage is one page of the php scenario: its label and the scenario
// its samples carry.
type phpPage struct{ label, sc string }

// phpPages are the php scenario's pages, in the report's order.
var phpPages = []phpPage{
	{"hello.php", PHPHello},
	{"WordPress front page", PHPWordPress},
}

// phpServers returns the servers with samples of the php scenario, in
// the order of the report's peers.
func (w *writer) phpServers() []string {
	var names []string
	for _, p := range w.rep.Peers {
		for _, pg := range phpPages {
			if w.measured(pg.sc, p.Name) {
				names = append(names, p.Name)
				break
			}
		}
	}
	return names
}

func (w *writer) php() {
	var pages []phpPage
	for _, pg := range phpPages {
		if w.ran(pg.sc) {
			pages = append(pages, pg)
		}
	}
	if len(pages) == 0 {
		return
	}
	servers := w.phpServers()
	x := max(w.maxX(PHPHello), w.maxX(PHPWordPress))
	cpu := ""
	if w.rep.ClientCPU != "" {
		cpu = " " + w.rep.ClientCPU
	}
	children := "a fixed number of"
	if w.rep.PHPChildren > 0 {
		children = thousands(float64(w.rep.PHPChildren))
	}
	opcache := "OPcache as the pool reported it: unknown"
	if w.rep.PHPOpcache != "" {
		opcache = "OPcache " + w.rep.PHPOpcache + " (as the pool itself reported it)"
	}
	wpRun := "longer"
	if w.rep.PHPWordPressRun > 0 {
		wpRun = fmt.Sprintf("%ds", int(w.rep.PHPWordPressRun.Seconds()))
	}
	w.p("## PHP: hello.php and WordPress's front page through each server, one php-fpm pool, %s keep-alive connections", thousands(x))
	w.p("")
	w.p("One php-fpm pool serves every server of the run: `pm = static` with %s children on a Unix socket, %s, started once with WordPress's MariaDB and pinned with the client to CPU%s, so that the server core is the web server's alone and every server meets the same PHP capacity. "+
		"The site is a copy of Debian's WordPress with its own `wp-config.php`, installed through the first server by POSTing the installer's form, then given posts, so that the front page lists ten; `hello.php` prints a few bytes and needs no database. "+
		"Each server runs on the server core with one worker or thread: Sluice's `php` source (`sluice-php`), nginx's `fastcgi_pass` to an `upstream` block with `keepalive` and `fastcgi_keep_conn on` behind WordPress's `try_files $uri $uri/ /index.php?$args` (`nginx-php`), and Caddy's `php_fastcgi` (`caddy-php`); none logs requests (configurations under [Peers](#peers)).", children, opcache, cpu)
	w.p("")
	w.p("Every round starts each server afresh, checks `hello.php`'s body byte for byte and the front page's latest post, warms it up for a second on each page, then loads each page with `wrk -t1 -c%s --latency --timeout 10s`: `hello.php` for %ds, the front page for %s (php-fpm spends milliseconds on it, so a run answers few requests). "+
		"**Server CPU-µs per request** is the web server's process tree alone, php-fpm not included, from the threads' run time in `/proc/PID/task/TID/schedstat` (nanoseconds: the front page's runs cost a server too little for `/proc/PID/stat`'s 10 ms ticks); php-fpm's own CPU per request, measured the same way, is shown beside it for scale. "+
		"Errors are wrk's socket errors and non-2xx answers.", thousands(x), max(int(w.rep.Duration.Seconds()), 1), wpRun)
	w.p("")

	var groups []string
	var cpuVals, rpsVals [][]Stat
	for _, pg := range pages {
		groups = append(groups, pg.label)
		var c, r []Stat
		for _, srv := range servers {
			p, ok := w.point(pg.sc, srv, x)
			if !ok {
				c, r = append(c, Stat{math.NaN(), math.NaN(), math.NaN()}), append(r, Stat{math.NaN(), math.NaN(), math.NaN()})
				continue
			}
			c, r = append(c, p.Of(get("cpu"))), append(r, p.Of(get("rps")))
		}
		cpuVals, rpsVals = append(cpuVals, c), append(rpsVals, r)
	}
	err := barFigure(w.fig("php-cpu.png"), fmt.Sprintf("Server CPU-µs per PHP request, php-fpm not counted: %s keep-alive connections (lower is better)", thousands(x)),
		"CPU-µs per request (web server's threads, schedstat)", servers, groups, cpuVals)
	w.figure("php-cpu.png", "web server CPU-µs per PHP request", PHP, err)
	err = barFigure(w.fig("php-rps.png"), fmt.Sprintf("PHP requests/s through each server: %s keep-alive connections", thousands(x)),
		"requests/s", servers, groups, rpsVals)
	w.figure("php-rps.png", "PHP requests/s", PHP, err)

	for _, pg := range pages {
		w.p("%s, wrk, medians over rounds:", pg.label)
		w.p("")
		w.p("| server | req/s | server CPU-µs/req | server core busy | p50 / p99 ms | php-fpm CPU-µs/req | RSS | errors |")
		w.p("|---|---:|---:|---:|---:|---:|---:|---:|")
		for _, srv := range servers {
			p, ok := w.point(pg.sc, srv, x)
			if !ok {
				continue
			}
			w.p("| %s | %s | %s | %.0f %% | %s | %s | %s | %s |", srv, cell(p.Of(get("rps")), rps), cell(p.Of(get("cpu")), us),
				p.Of(get("busy")).Med, latencyCell(p, true), us(p.Of(func(s Sample) float64 { return s.FPMCPUus }).Med),
				bytesf(p.Of(get("rss")).Med), errCell(p))
		}
		w.p("")
		w.mixErrors(pg.sc, servers, x)
	}
	w.phpChecks(pages, x)
}

// phpChecks writes the targets as this run measured them, on each page:
// no error through Sluice, its CPU per request no higher than nginx's
// and its requests/s at least nginx's.
func (w *writer) phpChecks(pages []phpPage, x float64) {
	var rows []string
	for _, pg := range pages {
		sp, okS := w.point(pg.sc, "sluice-php", x)
		if !okS {
			continue
		}
		errs, total := sp.Errors()
		rows = append(rows, fmt.Sprintf("| %s | errors through sluice-php | %s of %s | %s |", pg.label, thousands(float64(errs)), thousands(float64(total)), verdict(errs == 0)))
		if np, ok := w.point(pg.sc, "nginx-php", x); ok {
			s, n := sp.Of(get("cpu")).Med, np.Of(get("cpu")).Med
			rows = append(rows, fmt.Sprintf("| %s | sluice-php's CPU-µs per request ≤ nginx-php's | %s vs %s | %s |", pg.label, us(s), us(n), verdict(s <= n)))
			s, n = sp.Of(get("rps")).Med, np.Of(get("rps")).Med
			rows = append(rows, fmt.Sprintf("| %s | sluice-php's requests/s ≥ nginx-php's | %s vs %s | %s |", pg.label, rps(s), rps(n), verdict(s >= n)))
		}
		if ap, ok := w.point(pg.sc, "sluice-again-php", x); ok {
			// The A/A control: the same server twice, so the gap is
			// noise; shown whether or not nginx ran.
			s, a := sp.Of(get("cpu")).Med, ap.Of(get("cpu")).Med
			rows = append(rows, fmt.Sprintf("| %s | A/A control, not a target: sluice-again-php's CPU-µs per request against sluice-php's (the same binary) | %s vs %s (%.2f×) | – |", pg.label, us(a), us(s), a/s))
		}
	}
	if len(rows) == 0 {
		return
	}
	w.p("The targets, as this run measured them (medians over rounds):")
	w.p("")
	w.p("| page | target | measured | |")
	w.p("|---|---|---:|---|")
	w.p("%s", strings.Join(rows, "\n"))
	w.p("")
}
