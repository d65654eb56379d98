package load_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-server/sluice/bench/load"
	"github.com/sluice-server/sluice/engine"
)

// recorder is a server that records the paths it is asked for: /busy
// answers 503, /missing 404, anything else 200.
type recorder struct {
	mu    sync.Mutex
	paths []string
}

func (rec *recorder) serve(t *testing.T) string {
	t.Helper()
	srv := &engine.Server{Handler: engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		rec.mu.Lock()
		rec.paths = append(rec.paths, string(r.Path))
		rec.mu.Unlock()
		switch string(r.Path) {
		case "/busy":
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(503)
		case "/missing":
			w.WriteHeader(404)
		default:
			w.WriteString(page)
		}
	})}
	ln, err := engine.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// A mix's requests follow the weights, numbered targets stay within
// their range, and every class counts its own outcome: 503 apart from
// other statuses.
func TestMix(t *testing.T) {
	var rec recorder
	mix := []load.Target{
		{Class: "static", Path: "/static/a.html", Weight: 3},
		{Class: "static", Path: "/static/b.html", Weight: 3},
		{Class: "dynamic", Path: "/article/", IDs: 100, Weight: 2},
		{Class: "busy", Path: "/busy", Weight: 1},
		{Class: "missing", Path: "/missing", Weight: 1},
	}
	res, err := load.Run(context.Background(), load.Config{Addr: rec.serve(t), Mix: mix, Seed: 1, Conns: 4, Requests: 4000})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	ids := map[int]bool{}
	for _, p := range rec.paths {
		if n, ok := strings.CutPrefix(p, "/article/"); ok {
			id, err := strconv.Atoi(n)
			if err != nil || id < 1 || id > 100 {
				t.Fatalf("asked for %q, want /article/1 to /article/100", p)
			}
			ids[id] = true
			p = "/article/"
		}
		count[p]++
	}
	if len(rec.paths) != 4000 {
		t.Fatalf("server saw %d requests, want 4000", len(rec.paths))
	}
	for path, want := range map[string]int{"/static/a.html": 1200, "/static/b.html": 1200, "/article/": 800, "/busy": 400, "/missing": 400} {
		if got := count[path]; got < want*8/10 || got > want*12/10 {
			t.Errorf("%s asked %d times, want about %d (its weight)", path, got, want)
		}
	}
	if len(ids) < 90 {
		t.Errorf("%d distinct article ids of 100 in %d requests", len(ids), count["/article/"])
	}
	c := res.Classes
	if len(c) != 4 {
		t.Fatalf("classes %v, want static, dynamic, busy and missing", c)
	}
	if c["static"].OK != int64(count["/static/a.html"]+count["/static/b.html"]) || c["dynamic"].OK != int64(count["/article/"]) {
		t.Errorf("OK static %d dynamic %d; server answered %v", c["static"].OK, c["dynamic"].OK, count)
	}
	if c["static"].Latency.Count() != c["static"].OK || c["static"].Errors.Total() != 0 {
		t.Errorf("static: %d latencies for %d OK, errors %v", c["static"].Latency.Count(), c["static"].OK, c["static"].Errors)
	}
	if b := c["busy"]; b.OK != 0 || b.Errors.Unavailable != int64(count["/busy"]) || b.Errors.Status != 0 {
		t.Errorf("busy: OK %d errors %v; want every one of %d a 503", b.OK, b.Errors, count["/busy"])
	}
	if m := c["missing"]; m.Errors.Status != int64(count["/missing"]) || m.Errors.Unavailable != 0 {
		t.Errorf("missing: errors %v; want %d status errors", m.Errors, count["/missing"])
	}
	if res.Errors.Unavailable != c["busy"].Errors.Unavailable || res.Errors.Status != c["missing"].Errors.Status ||
		res.OK != c["static"].OK+c["dynamic"].OK || res.Latency.Count() != res.OK {
		t.Errorf("totals OK %d errors %v do not add up from the classes", res.OK, res.Errors)
	}
}

// The same Seed makes the same requests; another Seed others.
func TestMixSeed(t *testing.T) {
	paths := func(seed uint64) []string {
		var rec recorder
		mix := []load.Target{{Class: "a", Path: "/a/", IDs: 1000}, {Class: "b", Path: "/b"}}
		if _, err := load.Run(context.Background(), load.Config{Addr: rec.serve(t), Mix: mix, Seed: seed, Requests: 50}); err != nil {
			t.Fatal(err)
		}
		return rec.paths
	}
	one, again, other := paths(7), paths(7), paths(8)
	if len(one) != 50 || !slices.Equal(one, again) {
		t.Errorf("seed 7 twice: %q and %q", one, again)
	}
	if slices.Equal(one, other) {
		t.Errorf("seeds 7 and 8 made the same requests: %q", one)
	}
}
