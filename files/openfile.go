package files

import (
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// openFile is an open file shared by the requests sending it, like Warp's
// FdCache entries but reference counted: the cache holds one reference
// while the file is cached, every request sending it holds one, and the
// file is closed when the last reference goes, so it is never closed
// under a transfer (a descriptor number cannot be reused while sendfile(2)
// still reads from it).
//
// Only *os.File content is shared; SendFile and ReadAt do not move its
// offset. An fs.File of another kind (embed.FS) has an offset of its own,
// so it is opened per request and never cached.
type openFile struct {
	f    fs.File
	osf  *os.File // f, when it is an *os.File
	refs atomic.Int64
}

// acquire takes a reference unless the file is already closed.
func (o *openFile) acquire() bool {
	for {
		r := o.refs.Load()
		if r <= 0 {
			return false
		}
		if o.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// release drops a reference, closing the file with the last one.
func (o *openFile) release() {
	if o.refs.Add(-1) == 0 {
		o.f.Close()
	}
}

// section returns a reader of n bytes of the file from off: a section of
// the file itself, or, for an fs.File without ReadAt, the file positioned
// by Seek (or by reading and discarding).
func (o *openFile) section(off, n int64) (io.Reader, error) {
	if ra, ok := o.f.(io.ReaderAt); ok {
		return io.NewSectionReader(ra, off, n), nil
	}
	if off > 0 {
		if sk, ok := o.f.(io.Seeker); ok {
			if _, err := sk.Seek(off, io.SeekStart); err != nil {
				return nil, err
			}
		} else if _, err := io.CopyN(io.Discard, o.f, off); err != nil {
			return nil, err
		}
	}
	return io.LimitReader(o.f, n), nil
}

// fdCache keeps the open files of cached entries (entry.fd) and closes
// those not used for OpenExpiry, or at once when their entry leaves the
// path cache (a changed file gets a new entry, hence a new open file). A
// sweeper goroutine runs while any file is kept open. It is safe for
// concurrent use.
type fdCache struct {
	expiry time.Duration
	max    int
	now    func() int64

	mu       sync.Mutex
	m        map[*entry]struct{} // entries whose fd is set
	sweeping bool
	closed   bool
	stop     chan struct{}
}

func newFDCache(o Options, now func() int64) *fdCache {
	return &fdCache{expiry: o.OpenExpiry, max: o.MaxOpenFiles, now: now, m: map[*entry]struct{}{}, stop: make(chan struct{})}
}

// keep makes o, open for e, e's shared file, holding the cache's own
// reference (o.refs must count it already). It reports false when o is
// not kept: the cache is full or closed, or e already has a file.
func (c *fdCache) keep(e *entry, o *openFile) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || len(c.m) >= c.max || e.dropped.Load() {
		return false
	}
	if !e.fd.CompareAndSwap(nil, o) {
		return false
	}
	c.m[e] = struct{}{}
	if !c.sweeping {
		c.sweeping = true
		go c.sweep()
	}
	return true
}

// drop releases e's shared file, if any, for good: e left the path cache.
func (c *fdCache) drop(e *entry) {
	e.dropped.Store(true)
	c.mu.Lock()
	c.forget(e)
	c.mu.Unlock()
}

// forget releases e's shared file. Called with mu held.
func (c *fdCache) forget(e *entry) {
	if o := e.fd.Swap(nil); o != nil {
		o.release()
	}
	delete(c.m, e)
}

// sweep closes idle files every half expiry until none is left open.
func (c *fdCache) sweep() {
	t := time.NewTicker(max(c.expiry/2, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		c.mu.Lock()
		idle := c.now() - int64(c.expiry)
		for e := range c.m {
			if e.used.Load() <= idle {
				c.forget(e)
			}
		}
		if len(c.m) == 0 {
			c.sweeping = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// close releases every kept file and stops the sweeper; files in use
// close when their last request ends.
func (c *fdCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	close(c.stop)
	for e := range c.m {
		c.forget(e)
	}
}
