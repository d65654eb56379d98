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
