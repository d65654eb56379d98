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

// A Proxy speaking HTTP/2 with prior knowledge (transport h2c) to an
// application server, as gRPC services are reached: many requests share
// a connection, and trailers pass.
func Example_h2c() {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Status")
		fmt.Fprintf(w, "app saw %s", r.Proto)
		w.Header().Set("X-Status", "done")
	})
	app := httptest.NewUnstartedServer(h)
	app.Config.Protocols = new(http.Protocols)
	app.Config.Protocols.SetUnencryptedHTTP2(true)
	app.Start()
	defer app.Close()

	p, err := proxy.New(proxy.Options{Upstreams: []string{app.URL}, Transport: proxy.TransportH2C})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	srv, err := sluicetest.Start(pipe.Handler(p))
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status, resp.Header.Get("Via"))
	fmt.Println(string(body), resp.Trailer.Get("X-Status"))
	// Output:
	// 200 OK 2 sluice
	// app saw HTTP/2.0 done
}
