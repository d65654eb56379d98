package engine_test

import (
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/sluice-server/sluice/engine"
)

// A native handler: it reads the request's fields without copying them and
// lets the engine compute Content-Length for the small body.
func Example() {
	hello := engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteString("Hello, ")
		w.Write(r.Path[1:])
		w.WriteString("!\n")
	})
	srv := &engine.Server{Handler: hello, ServerHeader: "sluice"}
	ln, err := engine.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(ln)
	defer srv.Close()

	resp, err := http.Get("http://" + ln.Addr().String() + "/world")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.Status, " ", resp.Header.Get("Content-Length"), " ", string(body))
	// Output: 200 OK 14 Hello, world!
}

// Requests the engine refuses never reach the handler.
func Example_strictness() {
	srv := &engine.Server{Handler: engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {})}
	ln, _ := engine.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ln)
	defer srv.Close()

	c, _ := net.Dial("tcp", ln.Addr().String())
	defer c.Close()
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n")
	out, _ := io.ReadAll(c)
	fmt.Printf("%s", out[:len("HTTP/1.1 400 Bad Request")])
	// Output: HTTP/1.1 400 Bad Request
}

// HTTP/2 in cleartext for a client with prior knowledge (H2C), beside
// HTTP/1.1 on the same listener; over TLS, list "h2" in the tls.Config's
// NextProtos instead. The handler is the same for both.
func ExampleServer_ServeWith() {
	proto := engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.WriteString(r.Proto() + "\n")
	})
	srv := &engine.Server{Handler: proto}
	ln, err := engine.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.ServeWith(ln, engine.ListenerOptions{H2C: true})
	defer srv.Close()

	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true) // HTTP/2 with prior knowledge
	h2c := &http.Client{Transport: &http.Transport{Protocols: &protocols}}
	for _, c := range []*http.Client{h2c, http.DefaultClient} {
		resp, err := c.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Print(string(body))
	}
	// Output:
	// HTTP/2.0
	// HTTP/1.1
}
