package httpgrammar_test

import (
	"fmt"

	"github.com/sluice-server/sluice/httpgrammar"
)

// A server offering zstd and gzip, and identity last, answers three
// clients.
func ExampleNegotiate() {
	offers := []string{"zstd", "gzip", "identity"}
	for _, ae := range []string{
		"gzip, deflate, br, zstd", // zstd and gzip equal: the server's order
		"gzip;q=0.5, identity",    // identity rated higher
		"x-gzip, *;q=0",           // the alias of gzip; nothing else
	} {
		fmt.Println(offers[httpgrammar.Negotiate(ae, offers)])
	}
	// Output:
	// zstd
	// identity
	// gzip
}

func ExampleNextElement() {
	v := []byte(" keep-alive, , Upgrade ,")
	for elem, rest := httpgrammar.NextElement(v); len(elem) > 0; elem, rest = httpgrammar.NextElement(rest) {
		fmt.Printf("%q\n", elem)
	}
	// Output:
	// "keep-alive"
	// "Upgrade"
}

func ExampleIsHopByHop() {
	connection := "close, X-Trace"
	for _, name := range []string{"Keep-Alive", "x-trace", "Accept"} {
		fmt.Println(name, httpgrammar.IsHopByHop(name, connection))
	}
	// Output:
	// Keep-Alive true
	// x-trace true
	// Accept false
}
