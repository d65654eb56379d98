package admin

import (
	"errors"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/upstream"
)

// Backend is what the API reads and changes: a running server, in one
// process (Local) or through a master's workers. Its methods are called
// from the API's goroutines, several at once; each must be safe for
// concurrent use.
type Backend interface {
	// Running returns the running config's file name and the text it
	// was loaded from (the main file's; the files it includes are read
	// from disk at each load).
	Running() (name string, data []byte)

	// Load validates data as the config file (as sluice check does:
	// relative paths against the running config's directory) and
	// applies it as a reload does, dropping no connection. A config
	// that is not valid returns its config.Errors, and one that cannot
	// be served (an address that cannot be listened on, say) another
	// error; either way the running config keeps serving.
	Load(data []byte) error

	// Purge applies p to every process's caches (components.Caches.Purge)
	// and returns what was purged, and by how many processes; an error
	// when not every process confirmed it, or a
	// *components.PurgeItemError.
	Purge(p components.Purge) (purged, processes int, err error)

	// Upstreams returns every upstream set of the running config.
	Upstreams() ([]SetState, error)

	// ChangeUpstream applies c to the set called name, without a reload,
	// and returns its new state: ErrNoSet when there is no such set, a
	// *ChangeError when c cannot be applied.
	ChangeUpstream(name string, c Change) (SetState, error)
}

// HostSpec is one host of an upstream set as a change writes it: its
// name as the config writes it (http://10.0.0.7:8080, unix:/path), its
// weight (1 to 100; 0 is the default, or in a PATCH of a host already
// in the set its weight unchanged) and whether it drains (takes no new
// requests; those under way finish): upstream's.
type HostSpec = upstream.HostSpec

// HostState is one host of a set as it runs: upstream's.
type HostState = upstream.HostState

// SetState is one upstream set as it runs (upstream.SetState: its name,
// transport, policy, source and hosts), and, with workers, the worker
// whose state it is.
type SetState struct {
	upstream.SetState
	Worker int `json:"worker,omitempty"`
}

// Specs returns the hosts of s as specs: what a PUT that made s
// wrote.
func (s SetState) Specs() []HostSpec {
	out := make([]HostSpec, len(s.Hosts))
	for i, h := range s.Hosts {
		out[i] = HostSpec{Name: h.Name, Weight: h.Weight, Drain: h.Draining}
	}
	return out
}

// Change is one change to an upstream set: Replace (a PUT) sets the
// hosts to Hosts; otherwise (a PATCH) Add adds hosts, or sets the weight
// and drain of those named already, and Remove removes hosts by name.
type Change struct {
	// By is who asks for it, for the log lines the change makes.
	By      string     `json:"by,omitempty"`
	Replace bool       `json:"replace,omitempty"`
	Hosts   []HostSpec `json:"hosts,omitempty"`
	Add     []HostSpec `json:"add,omitempty"`
	Remove  []string   `json:"remove,omitempty"`
}

// ErrNoSet is ChangeUpstream's error for a name that is no upstream set.
var ErrNoSet = errors.New("no upstream set of that name")

// A ChangeError is a change that cannot be applied: a host name that is
// no host, a remove of a host the set lacks, a set left with no host, a
// set whose hosts come from DNS.
type ChangeError struct{ Msg string }

func (e *ChangeError) Error() string { return e.Msg }
