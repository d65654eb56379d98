package daemon

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"syscall"

	"github.com/sluice-server/sluice/config"
)

// Reload loads the config again (Load). A valid config takes over for
// new requests while those in flight finish on the old one, for up to
// Grace (see Switch). Listen addresses that are new are opened first, and
// if one cannot be, the reload is rejected; addresses no longer listed
// are closed after the switch, their open connections left to finish.
// An address moving to an overlapping one on the same TCP port
// (127.0.0.1:8080 to 0.0.0.0:8080) cannot be opened beside the old
// socket: the old one is closed first, and opened again if the new one
// still fails.
//
// The rest of the file applies too, once the new config serves: limits,
// server_header and the methods the routes name beyond the standard ones
// (engine.Server.SetLimits: to what starts afterwards, on open
// connections too; HTTP/2 connections, whose SETTINGS are fixed as they
// start, are sent GOAWAY (engine.Server.GoAway): their streams finish
// and their clients reconnect), the log section (a new output is opened before the
// switch; the records logged from then on go there, and the old file is
// closed) and pid_file (the new file is written, then the old one
// removed; one that cannot be written leaves the old one, with an
// error). Only workers, user and group need a restart (a process serving
// alone cannot become a master, nor switch back to root to switch to
// another user): a change is logged as a warning. A process that switched
// to the config's user (see Start) loads the new config as that user: its
// files must be readable, and its new listen addresses open, by it.
//
// A config that cannot be loaded, or served (a listen address or a log
// file that cannot be opened), changes nothing: the running config keeps
// serving. Reload logs the outcome either way and returns the error (a
// *LoadError, a *ListenError, or the log file's); it returns
// ErrNotRunning before Start and after Shutdown.
func (s *Server) Reload() error {
	if err := s.lockRunning(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.notify(NotifyReloading)
	defer s.notify(NotifyReady)
	log := s.logger()
	log.Info("reloading", "config", s.Name)
	cfg, err := s.Load(s.context())
	if err != nil {
		var errs config.Errors
		if errors.As(err, &errs) {
			for _, e := range errs {
				log.Error("config error", "error", e.Error())
			}
		} else {
			log.Error("config error", "error", err)
		}
		log.Error("reload rejected; the running config keeps serving", "config", s.Name)
		return &LoadError{err}
	}
	logWarnings(log, cfg)
	old := s.sw.Config()
	for _, c := range []struct {
		key     string
		changed bool
	}{
		{"workers", cfg.Workers != old.Workers},
		{"user", cfg.User != old.User},
		{"group", cfg.Group != old.Group},
	} {
		if c.changed {
			log.Warn("changed setting needs a restart; keeping the running value", "key", c.key)
		}
	}
	newLog := cfg.Log != s.logConfig
	var target logTarget
	if newLog {
		if target, err = s.openTarget(cfg.Log); err != nil {
			log.Error("cannot open the log", "output", cfg.Log.Output, "error", err, FixAttr(config.FileFix(err)))
			cfg.Close()
			log.Error("reload rejected; the running config keeps serving", "config", s.Name)
			return fmt.Errorf("log output %s: %w", cfg.Log.Output, err)
		}
	}

	s.adoptBoundPorts(cfg.Listen)
	var added []config.Address
	for _, a := range cfg.Listen {
		if l := s.listening(a); l == nil || !l.serves(a, cfg) {
			added = append(added, a)
		}
	}
	s.lnMu.Lock()
	var removed, kept []*listener
	for _, l := range s.lns {
		if slices.ContainsFunc(cfg.Listen, func(a config.Address) bool { return l.serves(a, cfg) }) {
			kept = append(kept, l)
		} else {
			removed = append(removed, l)
		}
	}
	s.lnMu.Unlock()
	opened, err := s.open(added, cfg)
	if err != nil && errors.Is(err, syscall.EADDRINUSE) {
		opened, err = s.reopenSharingPort(added, removed, cfg, old, err)
	}
	if err != nil {
		s.logListenError(err)
		if target.f != nil {
			target.f.Close()
		}
		cfg.Close()
		log.Error("reload rejected; the running config keeps serving", "config", s.Name)
		return err
	}
	s.sw.Swap(cfg)
	for _, l := range kept {
		s.setState(l, cfg.ListenOptions[l.addr], cfg) // new certificates, HSTS, redirect
	}
	s.certs.Retain(cfg, old) // drops acme sections cfg lacks, and old's staples unless cfg or acme keeps them
	s.srv.SetLimits(cfg.Limits)
	s.srv.SetServerHeader(cfg.ServerHeader)
	s.srv.SetExtraMethods(cfg.ExtraMethods())
	s.srv.GoAway() // HTTP/2 connections: their SETTINGS and certificate are those of their start
	s.reloadHTTP3(kept, cfg)
	if newLog {
		log.Info("log moves", "output", cfg.Log.Output, "format", cfg.Log.Format, "level", cfg.Log.Level.String())
		s.setLog(cfg.Log, target)
		log = s.logger()
	}
	s.serve(opened)
	for _, l := range removed {
		log.Info("closing listener", "addr", l.ln.Addr().String())
	}
	s.closeListeners(removed)
	s.movePidFile(cfg.PidFile)
	if s.Applied != nil {
		s.Applied(cfg)
	}
	log.Info("reloaded", "config", s.Name, "routes", len(cfg.Routes))
	return nil
}

// adoptBoundPorts gives a TCP listener opened for port 0 the address
// addrs name when that is the address it was bound to and addrs no longer
// name its own: a config that first said 127.0.0.1:0 and now says the
// port it got (as a config loaded through the admin API may) keeps the
// socket, rather than closing it, which would reset the connections
// still waiting on it to be accepted.
func (s *Server) adoptBoundPorts(addrs []config.Address) {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	for _, a := range addrs {
		if a.Network != "tcp" || slices.ContainsFunc(s.lns, func(l *listener) bool { return l.addr == a }) {
			continue
		}
		for _, l := range s.lns {
			_, port, _ := net.SplitHostPort(l.addr.Addr)
			if l.addr.Network == "tcp" && port == "0" && !slices.Contains(addrs, l.addr) && l.ln.Addr().String() == a.Addr {
				l.addr = a
				break
			}
		}
	}
}

// movePidFile moves the pid file to name, as a reload asks: the new one
// is written before the old one is removed.
func (s *Server) movePidFile(name string) {
	s.pidFile = SwitchPidFile(s.pidFile, name, s.logger())
}

// reopenSharingPort opens the added addresses after closing the removed
// listeners that share a TCP port with one of them: a socket on
// 0.0.0.0:8080 cannot be opened while this process still listens on
// 127.0.0.1:8080 (nor the other way round). Connections still queued on a
// listener closed this way are reset. If the added addresses still cannot
// be opened, the closed ones are opened again and the error returned;
// if no listener shares a port with them, inUse is.
func (s *Server) reopenSharingPort(added []config.Address, removed []*listener, cfg, old *config.Config, inUse error) ([]*listener, error) {
	ports := map[int]bool{}
	for _, a := range added {
		if a.Network == "tcp" {
			if _, p, err := net.SplitHostPort(a.Addr); err == nil {
				if n, err := strconv.Atoi(p); err == nil {
					ports[n] = true
				}
			}
		}
	}
	var clash []*listener
	var clashAddrs []config.Address
	for _, l := range removed {
		if ta, ok := l.ln.Addr().(*net.TCPAddr); ok && ports[ta.Port] {
			clash = append(clash, l)
			clashAddrs = append(clashAddrs, l.addr)
		}
	}
	if len(clash) == 0 {
		return nil, inUse
	}
	for _, l := range clash {
		s.logger().Info("closing listener first: its port is reused", "addr", l.ln.Addr().String())
	}
	s.closeListeners(clash)
	opened, err := s.open(added, cfg)
	if err == nil {
		return opened, nil
	}
	if back, berr := s.open(clashAddrs, old); berr == nil {
		s.serve(back)
	} else {
		s.logListenError(berr)
	}
	return nil, err
}
