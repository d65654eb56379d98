package components

import (
	"strconv"
	"sync"

	"github.com/sluice-server/sluice/cache"
)

// Caches is the set of caches of one config (see Context.Caches), which
// the status page shows and cache_purge purges. Its methods are safe for
// concurrent use and on a nil *Caches (an empty set); the zero value is
// an empty set.
type Caches struct {
	mu    sync.RWMutex
	list  []*cache.Cache
	relay PurgeRelay
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

// Purge is one purge of cache_purge: the stored responses of URLs, of
// path prefixes and of tags on Host, in the caches called Cache (every
// cache when empty). URLs and Prefixes are absolute http or https URLs
// or paths on Host, as cache.Cache.PurgeURL and BanPrefix take them. It
// is also what the processes of a master relay to one another, as JSON.
type Purge struct {
	Cache    string   `json:"cache,omitempty"`
	Host     string   `json:"host"`
	URLs     []string `json:"urls,omitempty"`
	Prefixes []string `json:"prefixes,omitempty"`
	Tags     []string `json:"tags,omitempty"`
}

// PurgeRelay sends p to the other processes that serve the same config
// (a master's other workers), which apply it to their own caches, and
// returns how many stored responses they removed and how many processes
// confirmed it. It returns an error when not every one did. It must be
// safe for concurrent use.
type PurgeRelay func(p Purge) (purged, processes int, err error)

// SetRelay has Purge relay every purge with r after applying it here;
// nil (the default) purges this process's caches only.
func (s *Caches) SetRelay(r PurgeRelay) {
	s.mu.Lock()
	s.relay = r
	s.mu.Unlock()
}

// PurgeItemError is a URL or prefix of a Purge that is not one:
// List is "urls" or "prefixes", Index its place in the list.
type PurgeItemError struct {
	List  string
	Index int
}

func (e *PurgeItemError) Error() string {
	what := "a URL or path to purge"
	if e.List == "prefixes" {
		what = "a URL or path prefix"
	}
	return e.List + "[" + strconv.Itoa(e.Index) + "] is not " + what
}

// Apply purges p from the caches of this process, and returns how many
// stored responses it removed, or a *PurgeItemError for the first URL
// or prefix that is not one (the caches before it are purged).
func (s *Caches) Apply(p Purge) (int, error) {
	n := 0
	for _, x := range s.Named(p.Cache) {
		for i, u := range p.URLs {
			k, err := x.PurgeURL(p.Host, u)
			if err != nil {
				return n, &PurgeItemError{"urls", i}
			}
			n += k
		}
		for i, u := range p.Prefixes {
			k, err := x.BanPrefix(p.Host, u)
			if err != nil {
				return n, &PurgeItemError{"prefixes", i}
			}
			n += k
		}
		for _, t := range p.Tags {
			n += x.PurgeTag(t)
		}
	}
	return n, nil
}

// Purge applies p here (Apply) and then, when a relay is set, in the
// other processes of the config. It returns the stored responses
// removed in all, and the processes that applied p (this one counted);
// an error from Apply stops it before the relay, and an error from the
// relay is returned with what was purged.
func (s *Caches) Purge(p Purge) (purged, processes int, err error) {
	n, err := s.Apply(p)
	if err != nil {
		return n, 1, err
	}
	if s == nil {
		return n, 1, nil
	}
	s.mu.RLock()
	relay := s.relay
	s.mu.RUnlock()
	if relay == nil {
		return n, 1, nil
	}
	m, k, err := relay(p)
	return n + m, 1 + k, err
}
