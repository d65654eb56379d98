package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"sync/atomic"

	"github.com/sluice-server/sluice/admin"
	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/daemon"
	"github.com/sluice-server/sluice/daemon/supervisor"
)

// runMaster runs a master and its worker processes (package
// daemon/supervisor) until SIGINT or SIGTERM. With an admin section, the
// admin API runs in the master.
func (f *serveFlags) runMaster(stdout, stderr io.Writer, log *slog.Logger, act *daemon.Activation, resumed *admin.State) int {
	m := &supervisor.Master{Grace: f.grace, Stdout: stdout, Stderr: stderr, Logger: log}
	if daemon.UnderInit() {
		m.NoUpgrade = "this master runs under sluice as PID 1, which would end with it; replace the container instead"
	}
	if act != nil {
		m.Listen = act.Listen
	}
	name := flagsSource
	if f.file != "" {
		name = f.file
		m.QUICSecretFile, _ = daemon.QUICSecretFile(f.file) // none where no state or cache directory is known
		first := resumed
		m.Read = func() (string, []byte, error) {
			if first != nil { // --resume: the first load is the saved config's
				data := []byte(first.Config)
				first = nil
				return f.file, data, nil
			}
			data, err := os.ReadFile(f.file)
			return f.file, data, err
		}
		m.Prepare = func(cfg *config.Config) error { return f.prepare(cfg, act, log) }
		if resumed != nil {
			m.ResumeUpstreams = resumed.Upstreams
		}
	} else {
		m.Read = func() (string, []byte, error) {
			data, err := f.configYAML()
			return flagsSource, data, err
		}
		m.Prepare = func(cfg *config.Config) error {
			warnUnmatched(cfg, act)
			return checkRoot(cfg, flagsSource, false, log)
		}
	}
	ctx, stop := supervisor.HandleSignals(context.Background(), m)
	defer stop()
	srv := masterAdmin(f, m, log, resumed)
	started := make(chan bool, 1)
	runDone := make(chan struct{})
	var serving atomic.Pointer[admin.Server]
	if srv != nil {
		m.Serving = func(name string, data []byte) {
			s := serving.Load()
			if s == nil {
				return // the first generation: Start saves it
			}
			s.Serving(data) // the state file keeps what serves
			go warnAdminChanged(name, data, s.Config, log)
		}
		go func() { // once the workers serve (an upgrade's: once it takes over)
			select {
			case <-m.Ready():
			case <-runDone:
				started <- false
				return
			}
			err := srv.Start()
			if err != nil {
				log.Error("cannot start the admin API", "error", err)
			} else {
				serving.Store(srv)
			}
			started <- err == nil
		}()
	}
	err := m.Run(ctx)
	close(runDone)
	if srv != nil && <-started {
		srv.Close()
	}
	if err != nil && !errors.As(err, new(*daemon.LoadError)) {
		fmt.Fprintln(stderr, "sluice serve:", err)
	}
	return exitStatus(err, name, log, stderr)
}

// masterAdmin returns the admin API of the master's config, not started,
// or nil when it has none. The config is read here as the master will
// read it (the resumed one's, or the file's).
func masterAdmin(f *serveFlags, m *supervisor.Master, log *slog.Logger, resumed *admin.State) *admin.Server {
	if f.file == "" {
		return nil
	}
	quiet := components.Context{Logger: slog.New(slog.DiscardHandler)}
	var cfg *config.Config
	var err error
	if resumed != nil {
		cfg, err = (&config.Loader{Context: quiet}).Parse(f.file, []byte(resumed.Config))
	} else {
		cfg, err = (&config.Loader{Context: quiet}).Load(f.file)
	}
	if err != nil {
		return nil // the master reports it
	}
	defer cfg.Close()
	if cfg.Admin == nil {
		return nil
	}
	srv := &admin.Server{Config: cfg.Admin, Backend: m, Logger: log, Resumed: resumed, UID: -1, Replace: supervisor.Upgrading()}
	if owner, err := daemon.ACMEOwner(cfg.User, cfg.Group); err == nil && owner != nil {
		srv.UID, srv.GID = owner.UID, owner.GID
	}
	return srv
}

// warnAdminChanged logs a warning when the config in data (a reload's)
// has an admin section other than the one the API runs with, which
// takes effect on a restart.
func warnAdminChanged(name string, data []byte, running *config.Admin, log *slog.Logger) {
	quiet := components.Context{Logger: slog.New(slog.DiscardHandler)}
	cfg, err := (&config.Loader{Context: quiet}).Parse(name, data)
	if err != nil {
		return
	}
	defer cfg.Close()
	if !reflect.DeepEqual(cfg.Admin, running) {
		log.Warn("the admin section changed; it takes effect on a restart, and the admin API keeps its settings")
	}
}
