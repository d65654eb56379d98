package report_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/bench/report"
)

// TestWriteMix renders the mix scenarios from made-up samples and checks
// the figures it derives: latency by class, the 503s of the slow
// database apart from errors, and the seed's targets judged from the
// medians.
func TestWriteMix(t *testing.T) {
	rep := &report.Report{
		Command: "sluicebench --scenarios mix,mix-slowdb", Reproduce: "go -C bench run ./cmd/sluicebench",
		Started: time.Now(), Rounds: 1, Duration: time.Second, Sweep: time.Second, SlowQuery: 50 * time.Millisecond,
		Scenarios: []string{report.Mix, report.MixSlowDB},
		Peers: []report.PeerInfo{
			{Name: "sluice", About: "base"}, {Name: "nginx", About: "base"},
			{Name: "nginx-static", Base: "nginx"}, {Name: "sluice-static", Base: "sluice"},
			{Name: "sluice-mix", Base: "sluice", Config: "routes: []"}, {Name: "nethttp-mix", Base: "nethttp"},
		},
	}
	add := func(sc, srv, class string, p99 float64, ok, errs, shed int64) {
		rep.Samples = append(rep.Samples, report.Sample{Scenario: sc, Server: srv, Class: class, Round: 1, X: 10000,
			RPS: float64(ok), OK: ok, Errors: errs, Shed: shed, P50ms: p99 / 10, P99ms: p99, CPUus: 20, RSS: 30 << 20})
	}
	add(report.Mix, "nginx-static", "", 40, 1000, 0, 0)
	add(report.Mix, "nginx-static", "static", 40, 1000, 0, 0)
	add(report.Mix, "sluice-static", "", 30, 1000, 0, 0)
	add(report.Mix, "sluice-static", "static", 30, 1000, 0, 0)
	add(report.Mix, "sluice-mix", "", 70, 900, 0, 0)
	for _, c := range []string{"static", "template", "dynamic"} {
		add(report.Mix, "sluice-mix", c, 70, 300, 0, 0)
		add(report.Mix, "nethttp-mix", c, 90, 300, 0, 0)
	}
	add(report.Mix, "nethttp-mix", "", 90, 900, 0, 0)
	add(report.MixWrk, "nginx-static", "", 20, 1000, 0, 0)
	add(report.MixWrk, "sluice-static", "", 25, 1000, 0, 0) // above nginx's: not met
	add(report.MixWrk, "sluice-mix", "", 45, 900, 3, 0)     // an error, and over twice nginx's
	add(report.MixSlowDB, "sluice-mix", "", 75, 600, 0, 300)
	add(report.MixSlowDB, "sluice-mix", "static", 72, 300, 0, 0)
	add(report.MixSlowDB, "sluice-mix", "template", 75, 300, 0, 0)
	add(report.MixSlowDB, "sluice-mix", "dynamic", 0, 0, 0, 300) // every article shed

	dir := t.TempDir()
	path, err := report.Write(dir, rep)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	md := string(data)
	for _, want := range []string{
		"## The C10K seed's mix at 10,000 connections",
		"| sluice-mix | 900 | 20.0 | 7.00 / 70.00 | 7.00 / 70.00 | 7.00 / 70.00 | 7.00 / 70.00 | 0 | 30.0 MiB |",
		"| nginx-static | 1,000 | 20.0 | 4.00 / 40.00 | – | – | 4.00 / 40.00 | 0 | 30.0 MiB |",
		"| sluicebench | errors in the mix (sluice-mix) | 0 of 900 | met |",
		"| sluicebench | mix p99 ≤ 2 × nginx's static p99 | 70.00 ms vs 2 × 40.00 ms | met |",
		"| sluicebench | Sluice's static p99 ≤ nginx's | 30.00 ms vs 40.00 ms | met |",
		"| wrk | errors in the mix (sluice-mix) | 3 of 903 | **not met** |",
		"| wrk | mix p99 ≤ 2 × nginx's static p99 | 45.00 ms vs 2 × 20.00 ms | **not met** |",
		"| wrk | Sluice's static p99 ≤ nginx's | 25.00 ms vs 20.00 ms | **not met** |",
		"sleeps 50 ms in every query (`CROSS JOIN pg_sleep(0.05)`)",
		// Shed articles: no latency, 300 of 300 shed, not errors.
		"| sluice-mix | PostgreSQL, slow | 600 | 7.20 / 72.00 | 7.50 / 75.00 | – | 300 (100 %) | 0 | 30.0 MiB |",
		"| sluice-mix | SQLite | 900 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("README.md lacks %q", want)
		}
	}
	for _, fig := range []string{"mix-p99.png", "mix-slowdb.png"} {
		if fi, err := os.Stat(filepath.Join(dir, fig)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", fig, err)
		}
	}
}
