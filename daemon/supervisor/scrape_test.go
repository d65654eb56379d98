//go:build linux

package supervisor

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/sluice-server/sluice/metrics"
)

// A worker's figures too large for a control packet lose the sets'
// gauges first, then the upstreams', then the routes'; the runtime and
// process figures always go.
func TestFitSnapshot(t *testing.T) {
	var g metrics.Registry
	for i := range 100 {
		g.Route(fmt.Sprint("route-", i))
		g.Upstream(fmt.Sprint("http://10.0.0.", i, ":8080"))
	}
	s := metrics.Take(&g)
	s.Worker = 7
	for i := range 100 {
		s.Sets = append(s.Sets, metrics.SetSnapshot{Set: fmt.Sprint("set-", i), Hosts: []metrics.HostSnapshot{{Host: "http://10.0.0.1:8080", Up: true}}})
	}
	size := func(s metrics.Snapshot) int { b, _ := json.Marshal(s); return len(b) }
	full := size(s)
	noSets := s
	noSets.Sets = nil
	noUps := noSets
	noUps.Upstreams = nil
	for _, tt := range []struct {
		limit                   int
		sets, upstreams, routes bool
	}{
		{full, true, true, true},
		{full - 1, false, true, true},
		{size(noSets) - 1, false, false, true},
		{size(noUps) - 1, false, false, false},
		{10, false, false, false},
	} {
		b, err := fitSnapshot(s, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got metrics.Snapshot
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if (len(got.Sets) > 0) != tt.sets || (len(got.Upstreams) > 0) != tt.upstreams || (len(got.Routes) > 0) != tt.routes {
			t.Errorf("limit %d (full %d): sets %d, upstreams %d, routes %d; want %v %v %v", tt.limit, full,
				len(got.Sets), len(got.Upstreams), len(got.Routes), tt.sets, tt.upstreams, tt.routes)
		}
		if got.Worker != 7 || got.Runtime.Goroutines == 0 {
			t.Errorf("limit %d: worker %d, runtime %+v: want them kept", tt.limit, got.Worker, got.Runtime)
		}
	}
}
