package sock_test

import (
	"fmt"
	"io"
	"net"

	"github.com/sluice-server/sluice/sock"
)

// A listener from Listen accepts connections as net.Listen's does; on
// Linux they are *sock.Conn, served with direct system calls.
func ExampleListen() {
	ln, err := sock.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return
		}
		defer c.Close()
		c.Write([]byte("ping"))
	}()
	c, err := ln.Accept()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	b, _ := io.ReadAll(c)
	fmt.Printf("%s\n", b)
	// Output: ping
}
