package daemon

import (
	"errors"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
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
// still fails. Settings that need a restart (workers, limits,
// server_header, log, pid_file) keep their running values, with a
// warning.
//
// A config that cannot be loaded, or served, changes nothing: the running
// config keeps serving. Reload logs the outcome either way and returns the
// error (a *LoadError, or a *ListenError); it returns ErrNotRunning before
// Start and after Shutdown.
func (s *Server) Reload() error {
	if err := s.lockRunning(); err != nil {
		return err
	}
	defer s.mu.Unlock()
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
	s.warnRestart(s.sw.Config(), cfg)

	var added []config.Address
	for _, a := range cfg.Listen {
		if s.listening(a) == nil {
			added = append(added, a)
		}
	}
	s.lnMu.Lock()
	var removed []*listener
	for _, l := range s.lns {
		if !slices.Contains(cfg.Listen, l.addr) {
			removed = append(removed, l)
		}
	}
	s.lnMu.Unlock()
	opened, err := s.open(added)
	if err != nil && errors.Is(err, syscall.EADDRINUSE) {
		opened, err = s.reopenSharingPort(added, removed, err)
	}
	if err != nil {
		s.logListenError(err)
		cfg.Close()
		log.Error("reload rejected; the running config keeps serving", "config", s.Name)
		return err
	}
	s.sw.Swap(cfg)
	s.serve(opened)
	for _, l := range removed {
		log.Info("closing listener", "addr", l.ln.Addr().String())
	}
	s.closeListeners(removed)
	log.Info("reloaded", "config", s.Name, "routes", len(cfg.Routes))
	return nil
}

// reopenSharingPort opens the added addresses after closing the removed
// listeners that share a TCP port with one of them: a socket on
// 0.0.0.0:8080 cannot be opened while this process still listens on
// 127.0.0.1:8080 (nor the other way round). Connections still queued on a
// listener closed this way are reset. If the added addresses still cannot
// be opened, the closed ones are opened again and the error returned;
// if no listener shares a port with them, inUse is.
func (s *Server) reopenSharingPort(added []config.Address, removed []*listener, inUse error) ([]*listener, error) {
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
	opened, err := s.open(added)
	if err == nil {
		return opened, nil
	}
	if back, berr := s.open(clashAddrs); berr == nil {
		s.serve(back)
	} else {
		s.logListenError(berr)
	}
	return nil, err
}

// warnRestart warns about settings that changed but only take effect on a
// restart; the running values are kept.
func (s *Server) warnRestart(old, cfg *config.Config) {
	log := s.logger()
	changed := func(key string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			log.Warn("changed setting needs a restart; keeping the running value", "key", key)
		}
	}
	changed("workers", old.Workers, cfg.Workers)
	changed("limits", old.Limits, cfg.Limits)
	changed("server_header", old.ServerHeader, cfg.ServerHeader)
	changed("log", old.Log, cfg.Log)
	changed("pid_file", old.PidFile, cfg.PidFile)
	if m := cfg.ExtraMethods(); !sameSet(m, old.ExtraMethods()) {
		log.Warn("the routes name new non-standard methods; requests with them get 501 until a restart", "methods", strings.Join(m, ","))
	}
}

func sameSet(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return len(a) == len(b)
}
