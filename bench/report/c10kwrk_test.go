package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// c10kReport is a report of the c10k-wrk scenario alone, with Sluice's
// and nginx's medians given per page (bytes → requests/s, p99 ms).
func c10kReport(sluice, nginx map[float64][2]float64) *Report {
	rep := &Report{
		Command: "sluicebench --scenarios c10k-wrk", Reproduce: "go -C bench run ./cmd/sluicebench",
		Started: time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC), Rounds: 1, Duration: 5 * time.Second,
		Peers:        []PeerInfo{{Name: "sluice"}, {Name: "nginx"}},
		C10KWrkConns: 10000,
	}
	for srv, pages := range map[string]map[float64][2]float64{"sluice": sluice, "nginx": nginx} {
		for x, v := range pages {
			rep.Samples = append(rep.Samples, Sample{Scenario: C10KWrk, Server: srv, Round: 1, X: x, Tool: "wrk",
				RPS: v[0], OK: 1000, CPUus: 15, P50ms: v[1] / 2, P99ms: v[1], RSS: 1 << 20})
		}
	}
	return rep
}

// writeMarkdown writes rep's report into dir and returns its README.md.
func writeMarkdown(t *testing.T, dir string, rep *Report) string {
	t.Helper()
	path, err := Write(dir, rep)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(md)
}

// TestC10KVerdict: the sentence on issue 18's target is computed from
// the medians, page by page.
func TestC10KVerdict(t *testing.T) {
	for _, c := range []struct {
		name          string
		sluice, nginx map[float64][2]float64
		want          []string
	}{
		{"issue 18's run", map[float64][2]float64{151: {54937, 315}, 81920: {22040, 844}}, map[float64][2]float64{151: {60409, 178}, 81920: {32075, 355}},
			[]string{"on the 151 B page Sluice misses both: 54,937 req/s < nginx's 60,409, p99 315.00 ms > nginx's 178.00 ms, 0 errors",
				"on the 80 KB page Sluice misses both: 22,040 req/s < nginx's 32,075, p99 844.00 ms > nginx's 355.00 ms"}},
		{"met", map[float64][2]float64{151: {70000, 100}, 81920: {32075, 355}}, map[float64][2]float64{151: {60409, 178}, 81920: {32075, 355}},
			[]string{"on the 151 B page Sluice meets the target: 70,000 req/s ≥ nginx's 60,409, p99 100.00 ms ≤ nginx's 178.00 ms",
				"on the 80 KB page Sluice meets the target: 32,075 req/s ≥ nginx's 32,075, p99 355.00 ms ≤ nginx's 355.00 ms"}},
		{"half", map[float64][2]float64{151: {70000, 200}, 81920: {30000, 300}}, map[float64][2]float64{151: {60409, 178}, 81920: {32075, 355}},
			[]string{"151 B page Sluice has the throughput but not the tail", "80 KB page Sluice has the tail but not the throughput"}},
	} {
		w := &writer{rep: c10kReport(c.sluice, c.nginx), servers: []string{"sluice", "nginx"}}
		got := w.c10kVerdict()
		for _, want := range c.want {
			if !strings.Contains(got, want) {
				t.Errorf("%s: verdict %q lacks %q", c.name, got, want)
			}
		}
	}
	w := &writer{rep: c10kReport(map[float64][2]float64{151: {1, 1}}, nil), servers: []string{"sluice"}}
	if got := w.c10kVerdict(); got != "" {
		t.Errorf("without nginx, verdict %q", got)
	}
}

// TestC10KSection: the section has a table per page, the figure, and the
// headline shows the scenario's figures.
func TestC10KSection(t *testing.T) {
	dir := t.TempDir()
	md := writeMarkdown(t, dir, c10kReport(map[float64][2]float64{151: {54937, 315}, 81920: {22040, 844}}, map[float64][2]float64{151: {60409, 178}, 81920: {32075, 355}}))
	for _, want := range []string{
		"## C10K with wrk: 10,000 keep-alive connections, 151 B and 80 KB",
		"`wrk -t1 -c10000 -d5s --latency --timeout 10s",
		"151 B page, medians over rounds:", "80 KB page, medians over rounds:",
		"| sluice | 54,937 | 157.50 / 315.00 | 15.0 | 82 % | – |", "| nginx | 32,075 | 177.50 / 355.00 | 15.0 | 48 % | – |",
		"![requests/s and p99 latency at 10,000 connections](c10k-wrk.png)",
		// The headline.
		"\n| server | c=10,000 151 B (wrk) req/s · p50 / p99 ms · errors | c=10,000 80 KB (wrk) req/s · p50 / p99 ms · errors |\n|---|---:|---:|\n",
		"| sluice | 54,937 · 157.50 / 315.00 · 0 | 22,040 · 422.00 / 844.00 · 0 |",
		"(#c10k-with-wrk-10000-keep-alive-connections-151-b-and-80-kb)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("README.md lacks %q", want)
		}
	}
	if strings.Contains(md, "idle RSS/conn") || strings.Contains(md, "keep-alive c=100") {
		t.Error("the headline has columns of scenarios that did not run")
	}
	if n := strings.Count(md, "**Against nginx in this run**"); n != 2 {
		t.Errorf("the verdict appears %d times, want 2 (headline and section)", n)
	}
	if fi, err := os.Stat(filepath.Join(dir, "c10k-wrk.png")); err != nil || fi.Size() == 0 {
		t.Errorf("c10k-wrk.png: %v", err)
	}
}

// TestC10KPace: the tables give how busy each end's core was, and a page
// on which the client's core had no time to spare in Sluice's and
// nginx's runs says so; one on which it had, or that was not measured,
// does not.
func TestC10KPace(t *testing.T) {
	rep := c10kReport(map[float64][2]float64{151: {54937, 315}, 81920: {22040, 844}}, map[float64][2]float64{151: {60409, 178}, 81920: {32075, 355}})
	for i := range rep.Samples {
		s := &rep.Samples[i]
		switch {
		case s.X == 81920 && s.Server == "sluice":
			s.ServerCore, s.ClientCore = 96.6, 99.6
		case s.X == 81920:
			s.ServerCore, s.ClientCore = 93.2, 100
		case s.Server == "sluice":
			s.ServerCore, s.ClientCore = 100, 97.4
		default:
			s.ServerCore, s.ClientCore = 100, 99
		}
	}
	w := &writer{rep: rep, servers: []string{"sluice", "nginx"}}
	got := w.c10kPace(81920)
	for _, want := range []string{"On the 80 KB page the client's core had no time to spare in Sluice's and nginx's runs (100 % busy, medians; the servers' cores 93–97 %)", "wrk set the pace"} {
		if !strings.Contains(got, want) {
			t.Errorf("80 KB: %q lacks %q", got, want)
		}
	}
	if got := w.c10kPace(151); got != "" {
		t.Errorf("151 B, where Sluice's client core was 97 %% busy: %q", got)
	}
	alone := &writer{rep: c10kReport(map[float64][2]float64{81920: {22040, 844}}, nil), servers: []string{"sluice"}}
	alone.rep.Samples[0].ClientCore = 100
	if got := alone.c10kPace(81920); got != "" {
		t.Errorf("without nginx: %q", got)
	}
	md := writeMarkdown(t, t.TempDir(), rep)
	for _, want := range []string{
		"| server | req/s | p50 / p99 ms | server CPU-µs/req | server core busy | cores busy, all work: server / client | RSS | errors |",
		"| 82 % | 100 / 97 % |", "| 48 % | 93 / 100 % |", "On the 80 KB page the client's core had no time to spare",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("README.md lacks %q", want)
		}
	}
	if strings.Contains(md, "On the 151 B page the client's core") {
		t.Error("README.md says the client's core set the pace on the 151 B page")
	}
}
