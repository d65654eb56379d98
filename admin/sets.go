package admin

import (
	"errors"
	"sync/atomic"

	"github.com/sluice-server/sluice/upstream"
)

// Sets are the upstream sets of this process's running config, which
// the API changes without a reload. Implementations must be safe for
// concurrent use.
type Sets interface {
	// List returns every set.
	List() []SetState
	// Apply applies c to the set called name (see Backend.ChangeUpstream).
	Apply(name string, c Change) (SetState, error)
}

// liveSets is Sets over package upstream's registry: the sets the
// config's proxy, fastcgi and php components register.
type liveSets struct{}

func (liveSets) List() []SetState {
	all := upstream.Sets()
	out := make([]SetState, len(all))
	for i, s := range all {
		out[i] = SetState{SetState: s}
	}
	return out
}

func (liveSets) Apply(name string, c Change) (SetState, error) {
	for try := 0; ; try++ {
		set, ok := upstream.LookupSet(name)
		if !ok {
			return SetState{}, ErrNoSet
		}
		var err error
		if c.Replace {
			err = set.Replace(c.Hosts, c.By)
		} else {
			err = set.Patch(c.Add, c.Remove, c.By)
		}
		if errors.Is(err, upstream.ErrSetClosed) && try == 0 {
			continue // the set of the config that took over: change that one
		}
		if err != nil {
			return SetState{}, &ChangeError{Msg: err.Error()}
		}
		return SetState{SetState: set.State()}, nil
	}
}

var localSets atomic.Pointer[Sets]

// SetLocalSets makes s the upstream sets LocalSets returns, in place of
// package upstream's registry (a test's sets, say). Safe for concurrent
// use.
func SetLocalSets(s Sets) { localSets.Store(&s) }

// LocalSets returns this process's upstream sets: package upstream's
// registered sets, unless SetLocalSets gave others.
func LocalSets() Sets {
	if p := localSets.Load(); p != nil {
		return *p
	}
	return liveSets{}
}
