package quicsteer

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// Attach compiles t and attaches it to the SO_REUSEPORT group of the UDP
// socket c (any socket of the group: the program is the group's),
// replacing the program attached before, if any, at once for the
// datagrams that follow.
func Attach(c syscall.RawConn, t Table) error {
	raw, err := t.Program()
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, ins := range raw {
		filter[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_CBPF, &prog)
	}); err != nil {
		return err
	}
	if serr != nil {
		return &AttachError{Err: serr}
	}
	return nil
}
