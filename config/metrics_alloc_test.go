//go:build !race

package config

import (
	"io"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/metrics"
)

// A request through a route of a config that counts its routes (it has
// a status source) allocates no more than through the same route of a
// config that does not.
func TestRouteMetricsAllocs(t *testing.T) {
	const route = "routes:\n  - match: /hello\n    pipeline: [{text: hello}]\n"
	allocs := map[bool]float64{}
	for _, counted := range []bool{false, true} {
		text := route
		if counted {
			text += "  - match: /metrics\n    pipeline: [status: prometheus]\n"
		}
		cfg, err := parseString(t, t.TempDir(), text)
		if err != nil {
			t.Fatal(err)
		}
		h := cfg.Handler()
		req := &engine.Request{Method: []byte("GET"), Path: []byte("/hello"), Host: []byte("a"), Body: io.LimitReader(nil, 0)}
		w := &discardWriter{}
		h.Serve(w, req) // warm the pools
		before := metrics.Default.Route("#1").Snapshot().Duration.Count()
		allocs[counted] = testing.AllocsPerRun(500, func() { h.Serve(w, req) })
		n := metrics.Default.Route("#1").Snapshot().Duration.Count() - before
		if counted && n < 500 || !counted && n != 0 {
			t.Fatalf("counted %v: %d requests counted", counted, n)
		}
	}
	if allocs[true] != allocs[false] {
		t.Errorf("a counted route: %v allocations a request, uncounted %v: counting must add none", allocs[true], allocs[false])
	}
}
