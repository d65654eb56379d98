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

// A parser walks the fields of a header section, its first line
// having ended in CRLF, until the empty line that ends it.
func ExampleNextField() {
	buf := []byte("Host: example.com\r\nAccept: */*\r\n\r\nbody")
	pos := 0
	for {
		name, value, next, err := httpgrammar.NextField(buf, pos, 1024, true)
		if err != nil {
			fmt.Println(err) // httpgrammar.ErrIncomplete: read more
			return
		}
		pos = next
		if name == nil {
			break
		}
		fmt.Printf("%s=%s\n", name, value)
	}
	fmt.Printf("body %q\n", buf[pos:])
	// Output:
	// Host=example.com
	// Accept=*/*
	// body "body"
}
