package sqldata

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// cache keeps a query's results for QueryOptions.Cache, with one fetch
// in flight per key.
type cache struct {
	mu      sync.Mutex
	entries map[string]*cacheEntry
	max     int
	ttl     time.Duration
	joining *atomic.Int32 // the DB's count of callers waiting for a fetch in flight
}

// cacheEntry is a result, or one being fetched until done is closed.
type cacheEntry struct {
	done    chan struct{}
	res     *Result
	err     error
	expires time.Time // set when done closes
}

// get returns the result for key: a fresh cached one, the one another
// caller is fetching (waiting for it within ctx), or one fetched now.
// Results with ErrNoRows are kept; other errors are not.
func (c *cache) get(ctx context.Context, key string, fetch func() (*Result, error)) (*Result, error) {
	now := time.Now()
	c.mu.Lock()
	e := c.entries[key]
	if e != nil {
		select {
		case <-e.done:
			if now.Before(e.expires) {
				c.mu.Unlock()
				return e.res, e.err
			}
			e = nil // stale: fetch again
		default: // in flight: wait for it
		}
	}
	if e != nil {
		c.mu.Unlock()
		c.joining.Add(1)
		defer c.joining.Add(-1)
		select {
		case <-e.done:
			return e.res, e.err
		case <-ctx.Done():
			return nil, ErrBusy
		}
	}
	e = &cacheEntry{done: make(chan struct{})}
	c.makeRoom(now)
	c.entries[key] = e
	c.mu.Unlock()

	e.res, e.err = fetch()
	c.mu.Lock()
	if e.err == nil || errors.Is(e.err, ErrNoRows) {
		e.expires = time.Now().Add(c.ttl)
	} else if c.entries[key] == e {
		delete(c.entries, key) // the next request tries again
	}
	close(e.done)
	c.mu.Unlock()
	return e.res, e.err
}

// makeRoom drops entries until one more fits: the expired ones first,
// then arbitrary finished ones. Fetches in flight stay. c.mu is held.
func (c *cache) makeRoom(now time.Time) {
	if len(c.entries) < c.max {
		return
	}
	for k, e := range c.entries {
		if isDone(e) && !now.Before(e.expires) {
			delete(c.entries, k)
		}
	}
	for k, e := range c.entries {
		if len(c.entries) < c.max {
			return
		}
		if isDone(e) {
			delete(c.entries, k)
		}
	}
}

func isDone(e *cacheEntry) bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// cacheKey encodes args, with their types, as a map key.
func cacheKey(args []any) string {
	var b strings.Builder
	for _, a := range args {
		fmt.Fprintf(&b, "%T\x00%v\x00", a, a)
	}
	return b.String()
}
