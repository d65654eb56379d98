package cache_test

import (
	"fmt"
	"io"
	"net/http"

	"github.com/sluice-server/sluice/cache"
	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// A cache before a source: the second request is answered from the
// store, with its age and the cache's status.
func Example() {
	c, err := cache.New(cache.Options{Size: 16 << 20})
	if err != nil {
		panic(err)
	}
	text, err := components.NewText(components.TextOptions{Body: "hello\n"})
	if err != nil {
		panic(err)
	}
	setMaxAge := pipe.Pipe(func(conn *pipe.Conn) bool {
		conn.Header().Set("Cache-Control", "max-age=60")
		return true
	})
	srv, err := sluicetest.Start(pipe.Handler(pipe.Chain{c, setMaxAge, text}))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	for range 2 {
		resp, err := http.Get(srv.URL + "/")
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%q %s\n", body, resp.Header.Get("Cache-Status"))
	}
	// Output:
	// "hello\n" Sluice; fwd=uri-miss; fwd-status=200; stored; ttl=60
	// "hello\n" Sluice; hit; ttl=60
}
