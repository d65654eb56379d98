package engine

import (
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// A sendfile(2) of bytes in the page cache cannot wait for a disk, so the
// engine makes it without giving up its P, like its calls on non-blocking
// sockets (see sysCall); bytes that may have to be read from a disk are
// sent with a call the scheduler knows may block. Asking the kernel
// (cachestat(2)) costs about as much as the raw call saves, so the answer
// is remembered for a short while per open file: a busy file is checked
// about once per residencyTTL, not per response. A file evicted from the
// page cache in that while costs, at worst, one sendfile that keeps its P
// through a disk read, as every sendfile of nginx's does.

// residencyTTL is how long a file's span found in the page cache is taken
// to stay there.
const residencyTTL = int64(time.Second)

// residentFiles is the process's memory of resident file spans; the page
// cache it mirrors is the system's.
var residentFiles residency

// residency remembers, per open file, the last span found in the page
// cache and when. It is safe for concurrent use. Keys are *os.File: an
// entry keeps its file reachable, so a remembered pointer is never reused
// for another file; entries older than residencyTTL are swept when new
// ones are added, so it holds about the files checked in the last two
// TTLs.
type residency struct {
	m     sync.Map // *os.File → *residentSpan
	swept atomic.Int64
}

// residencyQueries counts the questions residency put to the kernel, for
// tests.
var residencyQueries atomic.Int64

// residentSpan is a span [lo, hi) of a file found in the page cache at
// the coarse time at (UnixNano).
type residentSpan struct{ lo, hi, at int64 }

// check reports whether bytes [off, off+n) of f, whose descriptor is fd,
// are in the page cache, from memory if f's span was checked within
// residencyTTL of now (the coarse clock), else by asking the kernel.
func (r *residency) check(f *os.File, fd int, off, n, now int64) bool {
	if v, ok := r.m.Load(f); ok {
		s := v.(*residentSpan)
		if now-s.at < residencyTTL && s.lo <= off && off+n <= s.hi {
			return true
		}
	}
	residencyQueries.Add(1)
	if !resident(fd, off, n) {
		r.m.Delete(f)
		return false
	}
	r.m.Store(f, &residentSpan{lo: off, hi: off + n, at: now})
	r.sweep(now)
	return true
}

// sweep drops expired entries, at most once per residencyTTL.
func (r *residency) sweep(now int64) {
	last := r.swept.Load()
	if now-last < residencyTTL || !r.swept.CompareAndSwap(last, now) {
		return
	}
	r.m.Range(func(k, v any) bool {
		if now-v.(*residentSpan).at >= residencyTTL {
			r.m.Delete(k)
		}
		return true
	})
}
