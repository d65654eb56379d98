package metrics_test

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/sluice-server/sluice/metrics"
	"github.com/sluice-server/sluice/pipe"
)

// A route's counting pipe goes first in its pipeline; a scrape writes
// the counts of every process's snapshot (here one, without workers).
func Example() {
	var g metrics.Registry
	api := g.Route("api")
	_ = pipe.Chain{api.Component(), pipe.Source(func(c *pipe.Conn) pipe.Content { return nil })}

	// What the pipe does at the end of each response:
	api.Observe(200, 3*time.Millisecond)
	api.Observe(503, 40*time.Millisecond)

	var b bytes.Buffer
	metrics.WriteText(&b, []metrics.Snapshot{metrics.Take(&g)})
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "sluice_route_responses_total") || strings.HasPrefix(line, "sluice_route_request_duration_seconds_count") {
			fmt.Println(line)
		}
	}
	// Output:
	// sluice_route_responses_total{route="api",class="1xx"} 0
	// sluice_route_responses_total{route="api",class="2xx"} 1
	// sluice_route_responses_total{route="api",class="3xx"} 0
	// sluice_route_responses_total{route="api",class="4xx"} 0
	// sluice_route_responses_total{route="api",class="5xx"} 1
	// sluice_route_request_duration_seconds_count{route="api"} 2
}
