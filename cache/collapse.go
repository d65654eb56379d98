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
		// A reader holds the body from now until unread: the leader lets
		// go of its own hold only once e has left the map (tap.release).
		e.readers++
		if e.body != nil {
			e.body.ref()
		}
		return e, false
	}
	if !lead {
		return nil, false
	}
	e := newEntry()
	if x.disk == nil {
		// Made now, so that the readers who join can hold it.
		e.body = e.mem.init(-1, x.arena)
	}
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
	case <-e.readyChan():
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
	// A body too long to store keeps only a window of its last bytes:
	// a reader that comes when its start is gone goes on its own, and
	// one that comes in time keeps the start until its first write.
	if e.body != nil && !e.body.pinStart() {
		x.unread(e)
		return false
	}
	x.count(c, outCollapsed)
	now := x.now()
	if !x.answer(c, e, m, ri, now, x.name+"; fwd=miss; fwd-status="+strconv.Itoa(m.status)+"; collapsed; ttl="+ttl(m, now)) {
		// Nothing of the body to read (a 304, a 412, HEAD): done with it
		// now. Not in the content, which an error page may replace (a
		// 412's), and then never runs.
		if e.body != nil {
			e.body.unpin()
		}
		x.unread(e)
		return true
	}
	// The reader counts until it has read what it reads. The content
	// is a 2xx or 3xx answer's, which no error page replaces, or a stored
	// error response's, whose body is on the Go heap: if a page replaces
	// it, the count stays only while the fetch runs (nothing looks at it
	// once the entry has left the in-flight map) and holds no memory of
	// the arena.
	content := c.Content()
	c.SetContent(func(w pipe.Writer) error {
		defer x.unread(e)
		if e.body == nil || e.body.dsk != nil {
			// No pin (a disk body keeps its start), and w stays the
			// pipeline's, which pipe.SendFile recognises.
			return content(w)
		}
		pw := &pinnedWriter{Writer: w, b: e.body}
		defer pw.release()
		return content(pw)
	})
	return true
}

// pinnedWriter lets go of a collapsed reader's pin on the body's start
// (body.pinStart) at its first write, or when the content ends without
// one.
type pinnedWriter struct {
	pipe.Writer
	b    *body
	done bool
}

func (w *pinnedWriter) release() {
	if !w.done {
		w.done = true
		w.b.unpin()
	}
}

func (w *pinnedWriter) Write(p []byte) (int, error) {
	n, err := w.Writer.Write(p)
	w.release()
	return n, err
}

func (w *pinnedWriter) Flush() error {
	err := w.Writer.Flush()
	w.release()
	return err
}

// unread counts off a reader of e that is done with it (or never read),
// and lets go of its hold on the body.
func (x *Cache) unread(e *entry) {
	x.mu.Lock()
	e.readers--
	b := e.body // set under the lock by attachDisk, for a disk store's fetch
	x.mu.Unlock()
	if b != nil {
		b.unref()
	}
}
