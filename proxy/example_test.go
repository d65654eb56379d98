package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/proxy"
	"github.com/sluice-server/sluice/sluicetest"
)

// A Proxy is a pipeline source: here the only component of a server's
// pipeline, sending every request to an application server.
func Example() {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "app saw %s %s from %s", r.Method, r.URL.Path, r.Header.Get("X-Forwarded-For"))
	}))
	defer app.Close()

	p, err := proxy.New(proxy.Options{Upstreams: []string{app.URL}})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	srv, err := sluicetest.Start(pipe.Handler(p))
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/hello")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status, resp.Header.Get("Via"))
	fmt.Println(string(body))
	// Output:
	// 200 OK 1.1 sluice
	// app saw GET /hello from 127.0.0.1
}
