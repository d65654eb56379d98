//go:build linux

package supervisor

import (
	"net"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sluice-server/sluice/config"
)

// A UDP socket of a group stays non-blocking when the master hands it on
// (os/exec and send take its descriptor with Fd): the flag is the
// socket's, shared with the worker already reading it, whose recvmmsg
// would otherwise wait for a whole batch of datagrams and ignore
// deadlines. So both the sockets the master binds and those an old
// master hands over keep it, and the master does not poll them.
func TestUDPSocketsStayNonBlocking(t *testing.T) {
	m := &Master{}
	for _, tc := range []struct {
		name string
		file func(t *testing.T) *os.File
	}{
		{"bound", func(t *testing.T) *os.File {
			f, err := m.bindUDP(config.Address{Network: "tcp", Addr: "127.0.0.1:0"})
			if err != nil {
				t.Fatal(err)
			}
			return f
		}},
		{"handed over", func(t *testing.T) *os.File {
			pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			rc, _ := pc.SyscallConn()
			dup := -1
			rc.Control(func(fd uintptr) { dup, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 3) })
			if err != nil {
				t.Fatal(err)
			}
			// As a new master inherits it: non-blocking, as the old
			// master's worker reads it.
			unix.SetNonblock(dup, true)
			return socketFile(dup, "udp")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.file(t)
			defer f.Close()
			// A worker's copy, made before the master hands the socket
			// on again.
			worker, err := net.FilePacketConn(f)
			if err != nil {
				t.Fatal(err)
			}
			defer worker.Close()
			fd := f.Fd() // as os/exec's ExtraFiles and send's SCM_RIGHTS do
			flags, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
			if err != nil {
				t.Fatal(err)
			}
			if flags&unix.O_NONBLOCK == 0 {
				t.Errorf("the socket is blocking once the master took its descriptor: a worker reading it waits for whole batches")
			}
		})
	}
}
