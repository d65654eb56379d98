package cache

import (
	"net/http"
	"strconv"
	"time"

	"github.com/sluice-server/sluice/pipe"
)

// Request collapsing: concurrent misses for one key make one request
// down the pipeline. The first becomes the leader of an entry in
// Cache.inflight (join); the others wait for its response header, up to
// LockTimeout, and read its body as it grows (waitCollapsed). The leader
// leaves the map when its response is stored or abandoned (leave).

// join finds the fetch in flight for ck, or, when lead is set, makes the
// request its leader; it returns nil when there is neither.
func (x *Cache) join(ck string, lead bool) (*entry, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.inflight[ck]; ok {
		e.readers++
		return e, false
	}
	if !lead {
		return nil, false
	}
	e := newEntry()
	e.flight = ck
	x.inflight[ck] = e
	return e, true
}

// leave removes a fetch from the in-flight map (if it is still there)
// and returns how many readers joined it.
func (x *Cache) leave(e *entry) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.inflight[e.flight] == e {
		delete(x.inflight, e.flight)
	}
	return e.readers
}

// readersOf returns how many readers joined e so far.
func (x *Cache) readersOf(e *entry) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return e.readers
}

// waitCollapsed waits for the fetch e that another request leads and
// serves its response as it streams in. It returns false when the
// request must go on its own: the wait outlasted LockTimeout, the fetch
// was abandoned (its response was not storable) or its response varies
// on what this request sent otherwise.
func (x *Cache) waitCollapsed(c *pipe.Conn, e *entry, ri *reqInfo) bool {
	timer := time.NewTimer(x.lockTimeout)
	defer timer.Stop()
	select {
	case <-e.ready:
	case <-timer.C:
		// The leader may never bring a header (its content failed before
		// committing): let the next request lead instead.
		x.leave(e)
		x.unread(e)
		return false
	case <-c.Gone():
		// Nobody to answer: stop counting as a reader.
		x.unread(e)
		c.Error(http.StatusServiceUnavailable, "client gone")
		return true
	}
	if e.abandoned.Load() {
		x.unread(e)
		return false
	}
	m := e.meta.Load()
	if m.vary != nil && secondaryKey(c.Request, m.vary) != e.sk || !encodingAcceptable(c.Request, m) {
		x.unread(e)
		return false
	}
	x.count(c, outCollapsed)
	now := x.now()
	x.serve(c, e, m, ri, now, x.name+"; fwd=miss; fwd-status="+strconv.Itoa(m.status)+"; collapsed; ttl="+ttl(m, now))
	content := c.Content()
	if content == nil {
		x.unread(e)
		return true
	}
	// The reader counts until it has read what it reads.
	c.SetContent(func(w pipe.Writer) error {
		defer x.unread(e)
		return content(w)
	})
	return true
}

// unread counts off a reader of e that is done with it (or never read).
func (x *Cache) unread(e *entry) {
	x.mu.Lock()
	e.readers--
	x.mu.Unlock()
}
