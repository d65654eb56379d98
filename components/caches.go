package components

import (
	"sync"

	"github.com/sluice-server/sluice/cache"
)

// Caches is the set of caches of one config (see Context.Caches), which
// the status page shows and cache_purge purges. Its methods are safe for
// concurrent use and on a nil *Caches (an empty set); the zero value is
// an empty set.
type Caches struct {
	mu   sync.RWMutex
	list []*cache.Cache
}

// Add adds c to the set; nothing on a nil set.
func (s *Caches) Add(c *cache.Cache) {
	if s == nil || c == nil {
		return
	}
	s.mu.Lock()
	s.list = append(s.list, c)
	s.mu.Unlock()
}

// All returns the caches in the order they were added.
func (s *Caches) All() []*cache.Cache {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]*cache.Cache(nil), s.list...)
}

// Named returns the caches called name (cache.Cache.Name), or every
// cache when name is "".
func (s *Caches) Named(name string) []*cache.Cache {
	var out []*cache.Cache
	for _, c := range s.All() {
		if name == "" || c.Name() == name {
			out = append(out, c)
		}
	}
	return out
}
