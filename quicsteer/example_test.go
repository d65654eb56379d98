package quicsteer_test

import (
	"fmt"

	"github.com/quic-go/quic-go"

	"github.com/sluice-server/sluice/quicsteer"
)

// Two processes share a port: each makes its connection IDs with its own
// tag, and the table sends each tag's datagrams to its socket, new
// connections to either.
func Example() {
	a, b := quicsteer.Generator{Tag: 0x0a0a0a0a}, quicsteer.Generator{Tag: 0x0b0b0b0b}
	tab := quicsteer.Table{
		Owners:  map[uint32]uint32{a.Tag: 0, b.Tag: 1}, // the sockets' indices in the group
		Current: []uint32{0, 1},
	}
	// Process B serves on its own socket of the group:
	_ = &quic.Transport{ /* Conn: its socket, */ ConnectionIDGenerator: b}
	// In the process that holds the group (Linux):
	//	rc, _ := socket.SyscallConn(); quicsteer.Attach(rc, tab)

	id, _ := b.GenerateConnectionID()
	datagram := append([]byte{0x40}, id.Bytes()...) // a short header
	datagram = append(datagram, make([]byte, 30)...)
	fmt.Println(tab.Select(datagram))
	// Output: 1
}
