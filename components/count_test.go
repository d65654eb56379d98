package components

import (
	"fmt"
	"net/http"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

func ExampleNewCount() {
	stats := NewStats()
	count, err := NewCount(CountOptions{Stats: stats})
	if err != nil {
		panic(err)
	}
	hello, _ := NewText(TextOptions{Body: "hello\n"})
	missing, _ := NewText(TextOptions{Body: "no such page\n", Status: 404})
	rt, _ := pipe.NewRouter(
		pipe.Route{Match: []string{"/"}, Pipeline: hello},
		pipe.Route{Match: []string{"/missing"}, Pipeline: missing},
	)
	srv, err := sluicetest.Start(pipe.Handler(pipe.Chain{count, rt}))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	url := srv.URL
	for _, path := range []string{"/", "/", "/missing"} {
		resp, _ := http.Get(url + path)
		resp.Body.Close()
	}

	s := stats.Snapshot()
	fmt.Println("requests:", s.Requests, "2xx:", s.Responses["2xx"], "4xx:", s.Responses["4xx"], "bytes:", s.Bytes)
	// Output:
	// requests: 3 2xx: 2 4xx: 1 bytes: 25
}
