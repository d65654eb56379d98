package sluicetest_test

import (
	"fmt"
	"io"
	"net/http"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// A test calls sluicetest.NewServer(t, h) and needs no Close: the server
// stops when the test ends. An Example, which has no testing.T, uses
// Start and closes the server itself.
func ExampleStart() {
	hello := engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		fmt.Fprintf(w, "hello, %s", r.Path)
	})
	s, err := sluicetest.Start(hello, sluicetest.Configure(func(es *engine.Server) {
		es.Limits.MaxHeaderBytes = 4096
	}))
	if err != nil {
		panic(err)
	}
	defer s.Close()

	resp, err := http.Get(s.URL + "/world")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status, string(body))
	// Output:
	// 200 OK hello, /world
}

// A test calls sluicetest.NewTLSServer(t, h) for a server over TLS; its
// Client trusts the certificate the server was issued, and with the
// HTTP2 option speaks HTTP/2 to it, as ALPN chose.
func ExampleStartTLS() {
	hello := engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		fmt.Fprintf(w, "hello over %s, %s", r.TLS.NegotiatedProtocol, r.Path)
	})
	s, err := sluicetest.StartTLS(hello, sluicetest.HTTP2())
	if err != nil {
		panic(err)
	}
	defer s.Close()

	resp, err := s.Client().Get(s.URL + "/world")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Proto, resp.Status, string(body))
	// Output:
	// HTTP/2.0 200 OK hello over h2, /world
}
