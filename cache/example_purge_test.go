package cache_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/sluice-server/sluice/cache"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// Purging a URL and a tag: the next request for a purged response is a
// miss again, and the counters say what happened.
func ExampleCache_PurgeTag() {
	c, err := cache.New(cache.Options{Name: "pages"})
	if err != nil {
		panic(err)
	}
	page := pipe.Source(func(conn *pipe.Conn) pipe.Content {
		conn.Header().Set("Cache-Control", "max-age=600")
		conn.Header().Set("Cache-Tag", "products, "+strings.TrimPrefix(string(conn.Request.Path), "/"))
		return func(w pipe.Writer) error {
			_, err := io.WriteString(w, "page")
			return err
		}
	})
	srv, err := sluicetest.Start(pipe.Handler(pipe.Chain{c, page}))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	get := func(path string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			panic(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	get("/p1")
	get("/p2")
	get("/p1")
	host := strings.TrimPrefix(srv.URL, "http://")
	n, _ := c.PurgeURL(host, "/p1")
	fmt.Println("purged /p1:", n)
	fmt.Println("purged tag products:", c.PurgeTag("products"))
	get("/p2")
	st := c.Stats()
	fmt.Printf("hits %d, misses %d, purged %d, objects %d\n", st.Hits, st.Misses, st.Purged, st.Objects)
	// Output:
	// purged /p1: 1
	// purged tag products: 1
	// hits 1, misses 3, purged 2, objects 1
}
