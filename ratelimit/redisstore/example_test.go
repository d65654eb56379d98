package redisstore_test

import (
	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	_ "github.com/sluice-server/sluice/ratelimit/redisstore" // ratelimit's redis option
)

// A program that embeds Sluice imports the package for its side effect;
// ratelimit then keeps its buckets in Redis, shared with every instance
// that names the same server. Redis need not be up: the first request
// connects, and until Redis answers each instance counts alone.
func Example() {
	limit, err := components.NewRateLimit(components.RateLimitOptions{
		Rate:  10,
		Burst: 20,
		Redis: &components.RateLimitRedis{Address: "unix:/run/redis/redis-server.sock", OnError: components.OnErrorLocal},
	})
	if err != nil {
		panic(err)
	}
	text, _ := components.NewText(components.TextOptions{Body: "Hello, world!\n"})
	srv := &engine.Server{Handler: pipe.Handler(pipe.Chain{limit, text})}
	_ = srv // srv.Serve(listener)
}
