package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/user"

	"github.com/sluice-server/sluice/config"
)

// allowRootEnv, set to 1 in the environment, lets sluice serve as root
// a config that names no user (see checkRoot): for a container image
// whose processes all run as root, set once rather than in every file.
const allowRootEnv = "SLUICE_ALLOW_ROOT"

// A rootError is checkRoot's refusal: a process running as root was to
// serve a config that names no user.
type rootError struct {
	source string // the config file, or flagsSource
	fix    string // what to do instead
}

func (e *rootError) Error() string {
	if e.source == flagsSource {
		return "refusing to serve as root: no --user names the user to serve as"
	}
	return "refusing to serve as root: " + e.source + " names no user to serve as"
}

// checkRoot decides whether this process may serve cfg, given the user
// it runs as. A process whose effective user is not root serves as itself
// (under a systemd unit with User=, say): nil. A process running as root
// serves as the config's user, switching to it once its listeners and
// log files are open (package daemon, which logs it, and says so when
// that user is root); when the config names none, it refuses with a
// *rootError saying what to write, unless allowRootEnv=1 is in the
// environment, which it then logs to log as the reason it serves as
// root. The demo (demo set) serves as root on loopback addresses only,
// with a warning, and its refusal's fix is the demo's own.
func checkRoot(cfg *config.Config, source string, demo bool, log *slog.Logger) error {
	if os.Geteuid() != 0 || cfg.User != "" {
		return nil
	}
	if os.Getenv(allowRootEnv) == "1" {
		log.Info("serving as root, as "+allowRootEnv+"=1 says: every component acts with root's rights", "config", source)
		return nil
	}
	if demo && loopbackOnly(cfg.Listen) {
		// The README's first command works for whoever runs it: the demo
		// is reachable from this machine only. On any other address it
		// is refused as a server is.
		log.Warn("serving the demo as root: it listens on loopback only, but run it as an ordinary user where you can", "config", source)
		return nil
	}
	return &rootError{source: source, fix: rootFix(source, demo)}
}

// loopbackOnly reports whether every address is a TCP address on a
// loopback IP (127.0.0.0/8, ::1) or localhost, or a Unix socket.
func loopbackOnly(addrs []config.Address) bool {
	if len(addrs) == 0 {
		return false
	}
	for _, a := range addrs {
		if a.Network == "unix" {
			continue
		}
		host, _, err := net.SplitHostPort(a.Addr)
		if err != nil {
			return false
		}
		if host == "localhost" {
			continue
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.IsLoopback() {
			return false
		}
	}
	return true
}

// rootFix says what to do when the config source names no user, for a
// process running as root: the user to name is the first of sluice,
// www-data and nobody this system has.
func rootFix(source string, demo bool) string {
	if demo {
		return "run sluice demo as an ordinary user (it writes the site into that user's cache directory), or on a loopback " +
			"address (the default, 127.0.0.1:8080), or set " + allowRootEnv + "=1 in the environment to serve it as root"
	}
	name := "sluice"
	for _, n := range []string{"sluice", "www-data", "nobody"} {
		if _, err := user.Lookup(n); err == nil {
			name = n
			break
		}
	}
	var fix string
	if source == flagsSource {
		fix = fmt.Sprintf("add --user %s (or another unprivileged user) to serve as that user once the listener is open, "+
			"or --user root to serve as root on purpose (in a container, say)", name)
	} else {
		fix = fmt.Sprintf("add user: %s (or another unprivileged user) to %s to serve as that user once the listeners and log files are open, "+
			"or user: root to serve as root on purpose (in a container, say)", name, source)
	}
	if os.Getenv("INVOCATION_ID") != "" { // started by systemd
		fix += "; under systemd, rather run the service unprivileged from the start with User= and Group= in its unit, " +
			"and AmbientCapabilities=CAP_NET_BIND_SERVICE for ports below 1024 (contrib/sluice.service does)"
	}
	return fix
}
