package admin

import (
	"errors"
	"os"
	"sync"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
)

// Local is the Backend of a server that serves in one process (a
// daemon.Server; this package does not import it, so that it builds
// where package daemon does not). Wire it in: the server's Load reads the config with
// Read and records what it built with Built; its Applied calls Applied;
// Reload is the server's Reload. Its methods are safe for concurrent
// use.
type Local struct {
	// File is the config file's name: Read reads it, and a config posted
	// to /load stands for it (its relative paths resolve against the
	// file's directory).
	File string

	// Reload loads the config again (daemon.Server.Reload), which calls
	// Read.
	Reload func() error

	loadMu  sync.Mutex // one Load at a time
	mu      sync.Mutex // guards what follows
	pending []byte     // a posted config, or the resumed one, for the next Read
	running []byte
	built   map[*config.Config]built
	caches  *components.Caches
}

type built struct {
	data   []byte
	caches *components.Caches
}

// Resume makes the next Read (the server's first load) return data, the
// config of a saved State, instead of the file's.
func (l *Local) Resume(data []byte) {
	l.mu.Lock()
	l.pending = data
	l.mu.Unlock()
}

// Read returns the config to load: the one Load or Resume gave, once,
// or else the file's bytes. A reload by SIGHUP reads the file.
func (l *Local) Read() (name string, data []byte, err error) {
	l.mu.Lock()
	data, l.pending = l.pending, nil
	l.mu.Unlock()
	if data != nil {
		return l.File, data, nil
	}
	data, err = os.ReadFile(l.File)
	return l.File, data, err
}

// Built records that cfg was built from data with caches (the
// components.Context.Caches it was built with), for Applied.
func (l *Local) Built(cfg *config.Config, data []byte, caches *components.Caches) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.built == nil {
		l.built = map[*config.Config]built{}
	}
	l.built[cfg] = built{data, caches}
}

// Applied records that cfg serves (daemon.Server.Applied): its text is
// the running config's, its caches those purged.
func (l *Local) Applied(cfg *config.Config) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.built[cfg]; ok {
		l.running, l.caches = b.data, b.caches
	}
	clear(l.built) // those not applied were rejected
}

// Running is Backend.Running.
func (l *Local) Running() (string, []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.File, l.running
}

// Load is Backend.Load: data is applied by a reload.
func (l *Local) Load(data []byte) error {
	l.loadMu.Lock()
	defer l.loadMu.Unlock()
	l.mu.Lock()
	l.pending = data
	l.mu.Unlock()
	err := l.Reload()
	l.mu.Lock()
	l.pending = nil // unread if the server is not running
	l.mu.Unlock()
	var errs config.Errors
	if errors.As(err, &errs) { // within the server's *daemon.LoadError
		return errs
	}
	return err
}

// Purge is Backend.Purge, on the running config's caches.
func (l *Local) Purge(p components.Purge) (int, int, error) {
	l.mu.Lock()
	c := l.caches
	l.mu.Unlock()
	return c.Purge(p)
}

// Upstreams is Backend.Upstreams: LocalSets's.
func (l *Local) Upstreams() ([]SetState, error) { return LocalSets().List(), nil }

// ChangeUpstream is Backend.ChangeUpstream, on LocalSets.
func (l *Local) ChangeUpstream(name string, c Change) (SetState, error) {
	return LocalSets().Apply(name, c)
}
