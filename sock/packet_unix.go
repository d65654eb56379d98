//go:build unix

package sock

import (
	"context"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// ListenPacketShared opens a UDP socket ("udp", "udp4" or "udp6") bound
// to addr with SO_REUSEPORT, so that several sockets (of several worker
// processes, or a master's group of them) may bind the same address; on
// Linux the kernel then spreads datagrams among them by their addresses
// unless a program steers them (see package quicsteer). Every socket
// sharing the address must set it, and belong to the same user.
func ListenPacketShared(network, addr string) (net.PacketConn, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	return lc.ListenPacket(context.Background(), network, addr)
}
