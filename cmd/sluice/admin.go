package main

import (
	"errors"
	"io/fs"
	"log/slog"
	"reflect"
	"sort"

	"github.com/sluice-server/sluice/admin"
	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/daemon"
)

// resumeState returns the admin state serve --resume starts from: that
// of the state file of file's admin section, or nil (and why, logged)
// when there is none yet. A config without an admin section has no
// state to resume: an error when asked, nil otherwise (a binary
// upgrade's new master resumes what it can).
func resumeState(file string, log *slog.Logger, asked bool) (*admin.State, error) {
	quiet := components.Context{Logger: slog.New(slog.DiscardHandler)}
	cfg, err := (&config.Loader{Context: quiet}).Load(file)
	if err != nil {
		return nil, nil // the server reports the file's errors
	}
	defer cfg.Close()
	if cfg.Admin == nil && !asked {
		return nil, nil
	}
	if cfg.Admin == nil {
		return nil, errors.New("--resume starts from the admin API's saved state, and " + file + " has no admin section: add one (admin: {socket: PATH}), or serve without --resume")
	}
	st, err := admin.ReadState(cfg.Admin.State)
	if errors.Is(err, fs.ErrNotExist) {
		log.Info("no saved admin state yet; starting from the config file", "state", cfg.Admin.State)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	log.Info("resuming from the admin API's saved state; the config file is not read", "state", cfg.Admin.State, "saved", st.Saved, "upstream_sets", len(st.Upstreams))
	return st, nil
}

// applyUpstreams applies a resumed state's upstream changes to this
// process's sets, logging those that no longer apply.
func applyUpstreams(st *admin.State, log *slog.Logger) {
	if st == nil {
		return
	}
	names := make([]string, 0, len(st.Upstreams))
	for name := range st.Upstreams {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := admin.LocalSets().Apply(name, admin.Change{Replace: true, Hosts: st.Upstreams[name]}); err != nil {
			log.Error("cannot resume an upstream set's hosts", "set", name, "error", err)
		}
	}
}

// localAdmin is the admin API of a server serving in this process: it
// starts with the first config that serves, if that has an admin
// section, and keeps that section until the process ends (a reload that
// changes it says so).
type localAdmin struct {
	backend admin.Local
	log     *slog.Logger
	resumed *admin.State
	srv     *admin.Server
	conf    *config.Admin
	started bool
	err     error
}

// applied is the daemon.Server's Applied.
func (a *localAdmin) applied(cfg *config.Config) {
	a.backend.Applied(cfg)
	if a.started {
		if !reflect.DeepEqual(cfg.Admin, a.conf) {
			a.log.Warn("the admin section changed; it takes effect on a restart, and the admin API keeps its settings")
		}
		if a.srv != nil {
			_, data := a.backend.Running()
			a.srv.Serving(data)
		}
		return
	}
	a.started, a.conf = true, cfg.Admin
	if cfg.Admin == nil {
		return
	}
	a.srv = &admin.Server{Config: cfg.Admin, Backend: &a.backend, Logger: a.log, Resumed: a.resumed}
	if err := a.srv.Start(); err != nil {
		a.log.Error("cannot start the admin API", "error", err)
		a.srv, a.err = nil, err
	}
}

// close stops the admin API, if it runs.
func (a *localAdmin) close() {
	if a.srv != nil {
		a.srv.Close()
	}
}

// wire makes d serve f's config file through a's backend.
func (a *localAdmin) wire(d *daemon.Server, f *serveFlags, act *daemon.Activation) {
	a.backend.File = f.file
	a.backend.Reload = d.Reload
	if a.resumed != nil {
		a.backend.Resume([]byte(a.resumed.Config))
	}
	d.Applied = a.applied
	d.Load = func(ctx components.Context) (*config.Config, error) {
		name, data, err := a.backend.Read()
		if err != nil {
			return nil, err
		}
		ctx.Caches = new(components.Caches)
		cfg, err := (&config.Loader{Context: ctx}).Parse(name, data)
		if err != nil {
			return nil, err
		}
		if err := f.prepare(cfg, act, ctx.Logger); err != nil {
			cfg.Close()
			return nil, err
		}
		a.backend.Built(cfg, data, ctx.Caches)
		if !a.started {
			// Before the first request: the sets the config just
			// registered take the resumed changes.
			applyUpstreams(a.resumed, a.log)
		}
		return cfg, nil
	}
}
