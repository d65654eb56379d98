package daemon

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sluice-server/sluice/config"
)

// ListenFix names the fix for the errors Listen gives: a busy address, an
// address of no interface, a unix socket in a missing directory (real
// sockets), and a privileged port without the right to it.
func TestListenFix(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		addr config.Address
		err  error // nil: listen on addr for it
		want string
	}{
		{config.Address{Network: "tcp", Addr: busy.Addr().String()}, nil, "another process listens on this address"},
		{config.Address{Network: "tcp", Addr: "192.0.2.1:0"}, nil, "no interface of this machine has this address"},
		{config.Address{Network: "unix", Addr: filepath.Join(t.TempDir(), "missing", "s.sock")}, nil, "the socket's directory does not exist"},
		{config.Address{Network: "tcp", Addr: ":80"}, &net.OpError{Op: "listen", Net: "tcp", Err: os.NewSyscallError("bind", syscall.EACCES)}, "a port below 1024 needs root or CAP_NET_BIND_SERVICE"},
		{config.Address{Network: "tcp", Addr: ":8080"}, &net.OpError{Op: "listen", Net: "tcp", Err: os.NewSyscallError("bind", syscall.EACCES)}, ""},
		{config.Address{Network: "tcp", Addr: "no-such-host.invalid:80"}, &net.OpError{Op: "listen", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "no-such-host.invalid", IsNotFound: true}},
			"the host name does not resolve to an address of this machine"},
	} {
		err := tc.err
		if err == nil {
			ln, lerr := Listen(tc.addr)
			if lerr == nil {
				ln.Close()
				t.Fatalf("listening on %s succeeded", tc.addr)
			}
			err = lerr
		}
		got := ListenFix(tc.addr, err)
		if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
			t.Errorf("ListenFix(%s, %v) = %q, want %q...", tc.addr, err, got, tc.want)
		}
	}
	if a := FixAttr(""); !a.Equal(slog.Attr{}) {
		t.Errorf("FixAttr(\"\") = %v, want the empty attribute", a)
	}
}
