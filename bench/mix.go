package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluice-server/sluice/bench/load"
	"github.com/sluice-server/sluice/bench/mixsite"
	"github.com/sluice-server/sluice/bench/peers"
	"github.com/sluice-server/sluice/bench/report"
)

// The mix scenarios' parameters.
const (
	mixSeed = 1 // of the generator's and wrk's draws: every run makes the same requests

	// slowQuery is how long the slow database takes over each query
	// (pg_sleep in the view the query reads).
	slowQuery = 50 * time.Millisecond
)

// Route classes of the mix.
const (
	classStatic   = "static"
	classTemplate = "template"
	classDynamic  = "dynamic"
)

// mixClasses are the classes, in report order.
var mixClasses = []string{classStatic, classTemplate, classDynamic}

// mixTargets returns the requests of the mix: a third to the static
// pages, a third to the template pages, a third to random articles; or,
// with staticOnly, the static pages alone.
func mixTargets(staticOnly bool) []load.Target {
	var ts []load.Target
	for _, p := range mixsite.Pages {
		ts = append(ts, load.Target{Class: classStatic, Path: "/static/" + p + ".html", Weight: 1})
	}
	if staticOnly {
		return ts
	}
	for _, p := range mixsite.Pages {
		ts = append(ts, load.Target{Class: classTemplate, Path: "/template/" + p, Weight: 1})
	}
	return append(ts, load.Target{Class: classDynamic, Path: "/dynamic/article/", IDs: mixsite.Articles, Weight: len(mixsite.Pages)})
}

// mixVariant is one server of the mix scenarios: a peer serving the
// mix's site, loaded with the whole mix or its static pages alone.
type mixVariant struct {
	peer       peers.Peer // Name is the variant's, e.g. sluice-static
	base       string     // the --servers name it stands for
	staticOnly bool
}

// mixVariants returns the variants whose base server is selected:
// nginx and Sluice on the static pages, Sluice and the net/http program
// on the whole mix; with slow, those on the whole mix only.
func (h *harness) mixVariants(slow bool) []mixVariant {
	ran := map[string]peers.Peer{}
	for _, p := range h.peers {
		ran[p.Name] = p
	}
	mix := map[string]peers.Peer{}
	for _, p := range peers.Mix() {
		if _, err := p.Version(h.env); err == nil {
			mix[p.Name] = p
		}
	}
	var vs []mixVariant
	static := func(base string) {
		if p, ok := ran[base]; ok && !slow {
			p.Name = base + "-static"
			p.About = strings.TrimSuffix(p.About, ".") + "; the site's directory as its root, loaded with the static pages alone"
			vs = append(vs, mixVariant{peer: p, base: base, staticOnly: true})
		}
	}
	whole := func(base, name string) {
		if _, ok := ran[base]; !ok {
			return
		}
		if p, ok := mix[name]; ok {
			vs = append(vs, mixVariant{peer: p, base: base})
		}
	}
	static("nginx")
	static("sluice")
	whole("sluice", "sluice-mix")
	whole("nethttp", "nethttp-mix")
	return vs
}

// mixSteps is the number of progress steps of the mix scenarios.
func (h *harness) mixSteps() int {
	n := 0
	if h.has(report.Mix) {
		n += 2 * len(h.mixVariants(false)) * h.o.rounds
	}
	if h.has(report.MixSlowDB) {
		n += len(h.mixVariants(true)) * h.o.rounds
	}
	return n
}

// mixDB is a database the mix's peers read: Env.DB and Env.DSN.
type mixDB struct{ kind, dsn string }

// mixScenarios runs the mix scenarios: every variant once per round,
// interleaved; the slow-database run on a private PostgreSQL whose
// queries each take slowQuery.
func (h *harness) mixScenarios() error {
	site := filepath.Join(h.tmp, "mix")
	h.prog.logf("writing the mix's site (%d articles) in %s", mixsite.Articles, site)
	if err := mixsite.Write(site); err != nil {
		return fmt.Errorf("mix: %w", err)
	}
	h.listMixPeers()
	if h.has(report.Mix) {
		vs := h.mixVariants(false)
		if len(vs) == 0 {
			h.note("mix scenario: none of sluice, nginx and nethttp is selected (--servers), so it did not run.")
		}
		db := mixDB{"sqlite", filepath.Join(site, mixsite.DBFile)}
		for round := 1; round <= h.o.rounds; round++ {
			for _, v := range inTurn(vs, round) {
				if h.ctx.Err() != nil {
					return h.ctx.Err()
				}
				h.mixRound(v, report.Mix, site, db, round)
			}
		}
	}
	if h.has(report.MixSlowDB) {
		vs := h.mixVariants(true)
		if len(vs) == 0 {
			h.note("mix-slowdb scenario: neither sluice nor nethttp is selected (--servers), so it did not run.")
			return nil
		}
		pg, err := startPostgres(h.ctx, filepath.Join(h.tmp, "postgres"), h.o.serverCPU)
		if err != nil {
			h.note("mix-slowdb scenario: PostgreSQL: %v; it did not run.", err)
			return nil
		}
		defer pg.stop()
		if err := pg.fillSlow(slowQuery); err != nil {
			h.note("mix-slowdb scenario: filling PostgreSQL: %v; it did not run.", err)
			return nil
		}
		h.rep.Machine = append(h.rep.Machine, "PostgreSQL (mix-slowdb): "+pg.version)
		h.rep.SlowQuery = slowQuery
		db := mixDB{"postgres", pg.dsn}
		for round := 1; round <= h.o.rounds; round++ {
			for _, v := range inTurn(vs, round) {
				if h.ctx.Err() != nil {
					return h.ctx.Err()
				}
				h.mixRound(v, report.MixSlowDB, site, db, round)
			}
		}
	}
	return h.ctx.Err()
}

// listMixPeers adds the mix's variants to the report's peers.
func (h *harness) listMixPeers() {
	seen := map[string]bool{}
	for _, pi := range h.rep.Peers {
		seen[pi.Name] = true
	}
	for _, v := range append(h.mixVariants(false), h.mixVariants(true)...) {
		if seen[v.peer.Name] {
			continue
		}
		seen[v.peer.Name] = true
		info := report.PeerInfo{Name: v.peer.Name, About: v.peer.About, Base: v.base}
		if ver, err := v.peer.Version(h.env); err == nil {
			info.Version = ver
		}
		h.rep.Peers = append(h.rep.Peers, info)
	}
}

// mixRound starts one variant on the site with database db, warms it
// up, and measures it at --conns connections: sluicebench's generator
// (by class of route), then, in the mix scenario, wrk.
func (h *harness) mixRound(v mixVariant, sc, site string, db mixDB, round int) {
	tag := fmt.Sprintf("round %d/%d %s", round, h.o.rounds, v.peer.Name)
	saved := h.env
	h.env.Root, h.env.DB, h.env.DSN = site, db.kind, db.dsn
	srv, err := h.start(v.peer, sc+"-"+fmt.Sprint(round))
	h.env = saved
	if err != nil {
		h.note("%s %s: %v", tag, sc, err)
		return
	}
	defer h.stop()
	targets := mixTargets(v.staticOnly)
	warm := time.Second
	if h.o.quick {
		warm = 300 * time.Millisecond
	}
	load.Run(h.ctx, load.Config{Addr: srv.Env.Addr(), Mix: targets, Seed: mixSeed, Conns: kaConns, Duration: warm})
	x := float64(h.o.maxConns)
	h.step(tag, fmt.Sprintf("%s %d conns", sc, h.o.maxConns))
	h.measureMix(srv, sc, round, x, targets)
	if sc == report.Mix && h.hasWrk() && srv.Alive() {
		h.step(tag, fmt.Sprintf("%s wrk %d conns", sc, h.o.maxConns))
		h.wrkMix(srv, round, x, targets)
	}
}

// measureMix runs the generator over targets at x connections and
// records a sample for all requests and one per class. In the
// slow-database scenario 503s are load shed, counted apart; elsewhere
// they are errors.
func (h *harness) measureMix(srv *peers.Server, sc string, round int, x float64, targets []load.Target) {
	cfg := load.Config{Addr: srv.Env.Addr(), Mix: targets, Seed: mixSeed, Conns: h.o.maxConns,
		Duration: h.o.duration, Timeout: 10 * time.Second, DialConcurrency: 500}
	var u0 peers.Usage
	cfg.Started = func() { u0, _ = srv.Usage() }
	res, err := load.Run(h.ctx, cfg)
	if err != nil {
		h.note("%s %s: %v", srv.Peer.Name, sc, err)
		return
	}
	u1, _ := srv.Usage()
	sample := func(class string, ok int64, errs load.Errors, lat *load.Histogram) report.Sample {
		s := report.Sample{
			Scenario: sc, Server: srv.Peer.Name, Round: round, X: x, Tool: "sluicebench", Class: class,
			RPS: float64(ok) / res.Elapsed.Seconds(), OK: ok, Errors: errs.Total(), RSS: u1.RSS,
			P50ms: ms(lat.Quantile(0.5)), P99ms: ms(lat.Quantile(0.99)), MeanMs: ms(lat.Mean()), MaxMs: ms(lat.Max()),
		}
		if sc == report.MixSlowDB {
			s.Shed = errs.Unavailable
			s.Errors -= errs.Unavailable
		}
		if errs.Total() > 0 {
			s.ErrorText = errs.String()
		}
		return s
	}
	all := sample("", res.OK, res.Errors, res.Latency)
	all.MBps = float64(res.Bytes) / res.Elapsed.Seconds() / 1e6
	if res.OK > 0 {
		all.CPUus = float64((u1.CPU - u0.CPU).Microseconds()) / float64(res.OK)
	}
	if all.ErrorText != "" {
		all.ErrorText += fmt.Sprintf("; first: %v", res.FirstError)
		if res.Conns < cfg.Conns {
			all.ErrorText = fmt.Sprintf("%d of %d connections opened; %s", res.Conns, cfg.Conns, all.ErrorText)
		}
	}
	h.add(all)
	for _, class := range mixClasses {
		if c, ok := res.Classes[class]; ok {
			s := sample(class, c.OK, c.Errors, c.Latency)
			h.rep.Samples = append(h.rep.Samples, s)
			h.prog.logf("    %-8s %9.0f req/s p50 %7.2f ms p99 %7.2f ms errors %d shed %d", class, s.RPS, s.P50ms, s.P99ms, s.Errors, s.Shed)
		}
	}
}

// wrkMix runs wrk -t1 over targets at x connections, with a Lua script
// that draws them as the generator does, and records a sample of
// scenario MixWrk.
func (h *harness) wrkMix(srv *peers.Server, round int, x float64, targets []load.Target) {
	script := filepath.Join(h.tmp, fmt.Sprintf("mix-%d.lua", len(targets)))
	if err := os.WriteFile(script, []byte(wrkScript(targets, mixSeed)), 0o644); err != nil {
		h.note("%s wrk: %v", srv.Peer.Name, err)
		return
	}
	if s, _, ok := h.wrkRun(srv, report.MixWrk, round, x, int(x), "http://"+srv.Env.Addr()+"/", "--timeout", "10s", "-s", script); ok {
		h.add(s)
	}
}

// wrkScript returns a wrk Lua script that draws each request from
// targets by weight, with numbered targets' numbers uniform from 1 to
// IDs, from a generator seeded with seed (Lua's, not the Go
// generator's: the same mix, not the same sequence).
func wrkScript(targets []load.Target, seed uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "-- sluicebench: the C10K seed's mix, drawn by weight (seed %d)\n", seed)
	fmt.Fprintf(&b, "math.randomseed(%d)\nlocal targets = {\n", seed)
	total := 0
	for _, t := range targets {
		w := max(t.Weight, 1)
		total += w
		fmt.Fprintf(&b, "  {upto = %d, path = %q, ids = %d},\n", total, t.Path, t.IDs)
	}
	fmt.Fprintf(&b, "}\nlocal total = %d\n", total)
	b.WriteString(`
function init(args)
  for _, t in ipairs(targets) do
    if t.ids == 0 then t.req = wrk.format("GET", t.path) end
  end
end

function request()
  local n = math.random(total)
  for _, t in ipairs(targets) do
    if n <= t.upto then
      if t.req then return t.req end
      return wrk.format("GET", t.path .. math.random(t.ids))
    end
  end
end
`)
	return b.String()
}
