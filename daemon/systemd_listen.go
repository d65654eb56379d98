package daemon

import (
	"net"
	"os"
	"slices"
	"strconv"

	"github.com/sluice-server/sluice/config"
)

// Activation holds the listening sockets a service manager passed this
// process when it started it: systemd's socket activation
// (sd_listen_fds(3)). Its Listen hands them to a Server, or to a
// supervisor.Master, by address. It is safe for concurrent use.
type Activation struct {
	socks []*activated // fixed by SocketActivation
}

// activated is one socket passed.
type activated struct {
	name string   // its LISTEN_FDNAMES entry ("" if none)
	f    *os.File // kept open: Listen hands out duplicates
	addr net.Addr // as bound
}

// Unmatched describes the sockets passed that none of addrs matches (see
// Listen), by address and name: sockets a config does not serve.
func (a *Activation) Unmatched(addrs []config.Address) []string {
	if a == nil {
		return nil
	}
	var out []string
	for _, s := range a.socks {
		if !slices.ContainsFunc(addrs, func(c config.Address) bool { return boundTo(s.addr, c) }) {
			d := s.addr.String()
			if s.name != "" {
				d += " (" + s.name + ")"
			}
			out = append(out, d)
		}
	}
	return out
}

// boundTo reports whether a socket bound to bound serves the config
// address a (see Activation.Listen).
func boundTo(bound net.Addr, a config.Address) bool {
	switch b := bound.(type) {
	case *net.UnixAddr:
		return a.Network == "unix" && a.Addr == b.Name
	case *net.TCPAddr:
		if a.Network == "unix" {
			return false
		}
		host, port, err := net.SplitHostPort(a.Addr)
		if err != nil {
			return false
		}
		if p, err := strconv.Atoi(port); err != nil || p != 0 && p != b.Port {
			return false
		}
		if host == "" {
			return b.IP.IsUnspecified()
		}
		ips := []net.IP{net.ParseIP(host)}
		if ips[0] == nil {
			if ips, err = net.LookupIP(host); err != nil {
				return false
			}
		}
		for _, ip := range ips {
			if ip.Equal(b.IP) || ip.IsUnspecified() && b.IP.IsUnspecified() {
				return true
			}
		}
	}
	return false
}
