package sock

import (
	"errors"
	"io/fs"
	"net"
	"syscall"
)

// DialFix returns what to do about err, an error connecting to a server
// (a dial's *net.OpError or *net.DNSError, through any wrapping), for the
// operator: "" when it has nothing to add to err's own text. server names
// the server in the advice ("the upstream", "the database server"), and
// setting where its address is written ("proxy", "the database's dsn").
// It is safe for concurrent use.
func DialFix(err error, server, setting string) string {
	var dns *net.DNSError
	var op *net.OpError
	unix := errors.As(err, &op) && (op.Net == "unix" || op.Net == "unixpacket")
	switch {
	case err == nil:
		return ""
	case errors.As(err, &dns) && dns.IsNotFound:
		return "the host name does not resolve: correct it in " + setting + ", or write an IP address"
	case errors.Is(err, syscall.ECONNREFUSED) && unix:
		return "the socket file is there but nothing accepts on it: start " + server + ", or correct the path in " + setting
	case errors.Is(err, syscall.ECONNREFUSED):
		return "nothing listens at that address: start " + server + ", or correct the host and port in " + setting
	case errors.Is(err, fs.ErrNotExist) && unix:
		return "no socket at that path: start " + server + ", or correct the path in " + setting
	case errors.Is(err, fs.ErrPermission) && unix:
		return "this process's user may not connect to the socket: give it the socket's group (or the socket a mode that lets it in), or run the server as a user that may"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to that host: check the address in " + setting + ", and this machine's network"
	case op != nil && op.Op == "dial" && op.Timeout():
		return server + " did not take the connection in time: check that it runs at the address in " + setting + " and that no firewall drops the connection"
	}
	return ""
}
