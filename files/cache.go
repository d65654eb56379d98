package files

import (
	"sync"
	"sync/atomic"
)

// cache maps cleaned request paths to entries, like Warp's FileInfoCache:
// a hit costs a read lock and a map lookup. It bounds the number of
// entries and the bytes of content held. A cache is safe for concurrent
// use.
type cache struct {
	fresh      int64 // how long an entry is fresh on the clock now reads: Expiry, less a tick when coarse
	coarse     bool  // now reads the coarse clock
	maxEntries int
	maxBytes   int64

	held atomic.Int64 // content bytes held by entries in m
	fds  *fdCache     // the open files of entries in m

	mu sync.RWMutex
	m  map[string]*entry
}

func newCache(o Options) *cache {
	c := &cache{
		fresh:      int64(o.Expiry),
		maxEntries: o.MaxEntries,
		maxBytes:   o.MaxMemBytes,
		m:          make(map[string]*entry),
	}
	if o.Expiry >= 10*clockTick || o.Expiry < 0 {
		// Expiry is coarse enough for the coarse clock, which spares
		// every request a read of the system's clock. An entry is fresh
		// for a tick less, as the clock may be that far behind: a
		// changed file is still served within Expiry.
		c.coarse = true
		if o.Expiry > 0 {
			c.fresh -= int64(clockTick)
		}
	}
	c.fds = newFDCache(o, c.now)
	return c
}

// now reads the cache's monotonic clock: the package's coarse clock, or
// the system's for an Expiry too short for it.
func (c *cache) now() int64 {
	if c.coarse {
		return clock.Now()
	}
	return preciseNow()
}

// get returns the entry for key, or nil. It does not allocate.
func (c *cache) get(key []byte) *entry {
	c.mu.RLock()
	e := c.m[string(key)]
	c.mu.RUnlock()
	return e
}

// getString is get for a string key.
func (c *cache) getString(key string) *entry {
	c.mu.RLock()
	e := c.m[key]
	c.mu.RUnlock()
	return e
}

// fits reports whether n more content bytes may be held.
func (c *cache) fits(n int64) bool { return c.held.Load()+n <= c.maxBytes }

// put makes e the entry for its key, fresh for one expiry, unless the key
// now holds an entry other than old (another request was faster): then e
// is used by the request that made it but not cached.
func (c *cache) put(old, e *entry) {
	e.expires.Store(c.now() + c.fresh)
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.m[e.key]
	if cur != old {
		// Never cached: it keeps no open file.
		c.fds.drop(e)
		for _, v := range e.variants {
			c.fds.drop(v)
		}
		return
	}
	if cur == nil && len(c.m) >= c.maxEntries {
		c.evict()
	}
	if cur != nil {
		c.release(cur)
	}
	c.held.Add(heldBytes(e))
	c.m[e.key] = e
}

// heldBytes is the content e and its variants hold in memory.
func heldBytes(e *entry) int64 {
	n := int64(len(e.body))
	for _, v := range e.variants {
		n += int64(len(v.body))
	}
	return n
}

// release accounts for e leaving the cache: its bytes are no longer
// counted and its open files are closed once no request uses them.
func (c *cache) release(e *entry) {
	c.held.Add(-heldBytes(e))
	c.fds.drop(e)
	for _, v := range e.variants {
		c.fds.drop(v)
	}
}

// renew keeps e, unchanged on disk, fresh for another expiry.
func (c *cache) renew(e *entry) { e.expires.Store(c.now() + c.fresh) }

// evict makes room for an eighth of maxEntries: expired entries first,
// then arbitrary ones (map order is random). Called with mu held.
func (c *cache) evict() {
	target := c.maxEntries - max(1, c.maxEntries/8)
	now := c.now()
	for k, e := range c.m {
		if len(c.m) <= target {
			return
		}
		if now >= e.expires.Load() {
			c.drop(k, e)
		}
	}
	for k, e := range c.m {
		if len(c.m) <= target {
			return
		}
		c.drop(k, e)
	}
}

func (c *cache) drop(k string, e *entry) {
	delete(c.m, k)
	c.release(e)
}

// close empties the cache and closes the open files it keeps.
func (c *cache) close() {
	c.mu.Lock()
	for k, e := range c.m {
		c.drop(k, e)
	}
	c.mu.Unlock()
	c.fds.close()
}
