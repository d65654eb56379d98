package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// State is what the server serves, as the admin API's state file keeps
// it: the text of the running config (the file's at the start and after
// a reload, or the one loaded through the API), and the upstream sets
// changed through the API since, with their hosts.
// sluice serve --resume starts from it.
type State struct {
	// File is the config file's name: relative paths in Config resolve
	// against its directory.
	File string `json:"file"`
	// Config is the config's text.
	Config string `json:"config"`
	// Upstreams are the hosts of the sets changed through the API since
	// Config was loaded, by set.
	Upstreams map[string][]HostSpec `json:"upstreams,omitempty"`
	// Saved is when the state was saved.
	Saved time.Time `json:"saved"`
}

// ReadState reads the state file at path.
func ReadState(path string) (*State, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s: not an admin state file: %v", path, err)
	}
	if st.Config == "" {
		return nil, fmt.Errorf("%s: the state holds no config", path)
	}
	return &st, nil
}

// WriteState writes st to path (mode 0600, its directory made 0700 if
// missing), by a rename: a crash leaves the old state or the new.
func WriteState(path string, st *State) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".state-")
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	err = errors.Join(err, f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// Serving records that the server serves the config data now (one
// loaded through the API, or by a reload), with its own upstream sets,
// and saves the state. Safe for concurrent use; it may be called from
// within Backend.Load.
func (s *Server) Serving(data []byte) {
	s.stMu.Lock()
	defer s.stMu.Unlock()
	s.state.Config, s.state.Upstreams = string(data), nil
	s.save()
}

// changed records the hosts of the set called name after a change, and
// saves the state.
func (s *Server) changed(name string, hosts []HostSpec) {
	s.stMu.Lock()
	defer s.stMu.Unlock()
	if s.state.Upstreams == nil {
		s.state.Upstreams = map[string][]HostSpec{}
	}
	s.state.Upstreams[name] = hosts
	s.save()
}

// save writes the state file, logging a failure; s.stMu is held.
func (s *Server) save() {
	s.state.Saved = time.Now().UTC()
	if err := WriteState(s.Config.State, &s.state); err != nil {
		s.log().Error("admin: cannot save the state; a restart with --resume will not see this change", "state", s.Config.State, "error", err)
	}
}
