package tracing_test

import (
	"context"
	"log"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/tracing"
	"github.com/sluice-server/sluice/tracing/otlp"
)

// A pipeline traced by hand, as a config file's tracing section builds
// it: the Tracer's stage before everything, its route stage first in the
// route's pipeline, and a component of one's own that spans its upstream
// work with StartUpstream (nil, and free, when the request is not
// traced). Shutdown sends what is still queued.
func Example() {
	sample := 0.1
	tr, err := otlp.New(tracing.Options{Endpoint: "http://127.0.0.1:4318", Sample: &sample, Service: "shop"})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Shutdown(context.Background())

	backend := pipe.Pipe(func(c *pipe.Conn) bool {
		span := tracing.StartUpstream(c, "backend", "10.0.0.7:9000")
		// ... ask the backend, passing c.Request's traceparent on ...
		span.End(200, nil)
		return true
	})
	rt, err := pipe.NewRouter(pipe.Route{Match: []string{"/api/"}, Pipeline: pipe.Chain{tr.Route("/api/"), backend}})
	if err != nil {
		log.Fatal(err)
	}
	handler := pipe.Handler(pipe.Chain{tr.Stage(), rt})
	_ = handler // serve it with engine.Server, or sluicetest.Start
}
