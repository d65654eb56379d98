package daemon

import (
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"strconv"
	"syscall"

	"github.com/sluice-server/sluice/config"
)

// FixAttr returns the log attribute fix=what, or the empty attribute,
// which handlers leave out, when what is "".
func FixAttr(what string) slog.Attr {
	if what == "" {
		return slog.Attr{}
	}
	return slog.String("fix", what)
}

// ListenFix returns what to do about err, an error listening on a, for
// the operator: the "fix" a "cannot listen" log record carries, or ""
// when there is nothing to add to err.
func ListenFix(a config.Address, err error) string {
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns):
		return "the host name does not resolve to an address of this machine: listen on one of its IP addresses, on :PORT for all, or on a name /etc/hosts gives"
	case errors.Is(err, syscall.EADDRINUSE):
		return "another process listens on this address (ss -ltnp shows which): stop it, or change listen"
	case errors.Is(err, syscall.EACCES) && a.Network == "tcp" && privilegedPort(a.Addr):
		return "a port below 1024 needs root or CAP_NET_BIND_SERVICE (AmbientCapabilities= in a systemd unit): run so, or listen on a port from 1024"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no interface of this machine has this address: listen on one it has, or on :PORT for all"
	case errors.Is(err, fs.ErrPermission) && a.Network == "unix":
		return "the server's user may not create the socket there: change listen, or the directory's owner"
	case errors.Is(err, fs.ErrNotExist) && a.Network == "unix":
		return "the socket's directory does not exist: create it, or change listen"
	}
	return ""
}

// privilegedPort reports whether the port of host:port is below 1024.
func privilegedPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n > 0 && n < 1024
}

// PidFileFix returns what to do about err, an error writing the pid
// file: the "fix" a "cannot write the pid file" log record carries, or
// "" when there is nothing to add to err.
func PidFileFix(err error) string {
	switch {
	case errors.Is(err, syscall.EISDIR):
		return "pid_file names a directory: name a file in it (DIR/sluice.pid), with pid_file or --pid-file"
	case errors.Is(err, fs.ErrNotExist):
		return "its directory does not exist: create it, or change pid_file (or --pid-file)"
	case errors.Is(err, fs.ErrPermission):
		return "the server's user may not write there: change pid_file (or --pid-file), or the directory's owner"
	}
	return ""
}
