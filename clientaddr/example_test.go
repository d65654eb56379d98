package clientaddr_test

import (
	"fmt"
	"net"

	"github.com/sluice-server/sluice/clientaddr"
	"github.com/sluice-server/sluice/engine"
)

// Behind a proxy on 10.0.0.0/8, the client is the rightmost address of
// X-Forwarded-For that is not a trusted proxy; a peer that is not trusted
// is the client, whatever it sends.
func ExampleResolver_Addr() {
	r, err := clientaddr.New([]string{"10.0.0.0/8"}, "")
	if err != nil {
		panic(err)
	}
	fields := []engine.Field{{Name: []byte("X-Forwarded-For"), Value: []byte("6.6.6.6, 192.0.2.7, 10.1.1.1")}}
	viaProxy := &engine.Request{RemoteAddr: &net.TCPAddr{IP: net.ParseIP("10.0.0.2"), Port: 5000}, Fields: fields}
	direct := &engine.Request{RemoteAddr: &net.TCPAddr{IP: net.ParseIP("198.51.100.1"), Port: 5000}, Fields: fields}
	fmt.Println(r.Addr(viaProxy))
	fmt.Println(r.Addr(direct))
	// Output:
	// 192.0.2.7
	// 198.51.100.1
}
