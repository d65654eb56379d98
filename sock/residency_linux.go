package sock

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A sendfile(2) of bytes in the page cache of a local file system does
// not wait for a disk, so it can be made without giving up the P,
// like its calls on non-blocking sockets (see sysCall); other bytes are
// sent with a call the scheduler knows may block. "In the page cache" is
// cachestat(2)'s answer: pages whose read from disk is still in flight
// count as cached, and a local file system may still take a lock that
// waits behind a writer, so a raw sendfile can stall its P briefly; a
// file on a network or FUSE file system (which may revalidate over the
// network) is never sent raw.
//
// Asking the kernel costs about as much as the raw call saves, so the
// answer is remembered per open file for residencyTTL: a busy file is
// checked about once per TTL, not per response. A file evicted from the
// page cache within that time is sent raw all the same until the entry
// expires, its reads waiting for the disk with the P held — what every
// sendfile of nginx's worker does.
//
// cachestat answers only a caller that owns the file or may write it
// (as mincore(2)); a server running as a user that may only read its
// documents gets EPERM, and sends them with the blocking call, as before.

// residencyTTL is how long an answer about a file is remembered.
const residencyTTL = int64(time.Second)

// residentFiles is the process's memory of file spans found in the page
// cache; the page cache it mirrors is the system's. Servers sweep it.
var residentFiles residency

// Resident reports whether bytes [off, off+n) of f, whose descriptor is
// fd, may be sent with a Sendfile that does not wait (nb true): f is on a
// local file system and the span in the page cache. The answer about f is
// remembered for about a second from now, which is a coarse clock's
// reading (Unix nanoseconds), and given again for the same span, or a
// part of one remembered, without asking the kernel. An entry keeps f
// reachable until SweepResidency drops it: a server that calls Resident
// calls SweepResidency about once a second. Safe for concurrent use.
func Resident(f *os.File, fd int, off, n, now int64) bool {
	return residentFiles.check(f, fd, off, n, now)
}

// SweepResidency forgets the answers of Resident older than about a
// second at now (a coarse clock's reading, as Resident's). Safe for
// concurrent use.
func SweepResidency(now int64) { residentFiles.sweep(now) }

// residency remembers, per open file, the span found in the page cache
// (or that the file cannot be sent raw) and when. It is safe for
// concurrent use. Keys are *os.File: an entry keeps its file reachable, so
// a remembered pointer is never reused for another file; sweep drops
// entries older than residencyTTL.
type residency struct {
	m       sync.Map     // *os.File → *residentSpan
	queries atomic.Int64 // questions put to the kernel, for tests
}

// residentSpan is what residency knows of a file at the coarse time at
// (UnixNano): the span [lo, hi) is in the page cache, or, if raw is
// false, the file is not to be sent raw.
type residentSpan struct {
	lo, hi, at int64
	raw        bool
}

// check reports whether bytes [off, off+n) of f, whose descriptor is fd,
// may be sent raw: on a local file system and in the page cache. It
// answers from memory if f was checked within residencyTTL of now (the
// coarse clock), else asks the kernel.
func (r *residency) check(f *os.File, fd int, off, n, now int64) bool {
	var cur *residentSpan
	if v, ok := r.m.Load(f); ok {
		if s := v.(*residentSpan); now-s.at < residencyTTL {
			if !s.raw {
				return false
			}
			if s.lo <= off && off+n <= s.hi {
				return true
			}
			cur = s
		}
	}
	r.queries.Add(1)
	if cur == nil && !localFS(fd) {
		r.m.Store(f, &residentSpan{at: now})
		return false
	}
	in, known := resident(fd, off, n)
	switch {
	case !known:
		r.m.Store(f, &residentSpan{at: now})
		return false
	case !in:
		r.m.Delete(f)
		return false
	}
	s := &residentSpan{lo: off, hi: off + n, at: now, raw: true}
	if cur != nil && off <= cur.hi && cur.lo <= off+n {
		// Adjoining or overlapping the span remembered: keep the union,
		// so a large file sent in spans is asked about once per span.
		s.lo, s.hi = min(s.lo, cur.lo), max(s.hi, cur.hi)
	}
	r.m.Store(f, s)
	return true
}

// sweep drops the entries older than residencyTTL at now.
func (r *residency) sweep(now int64) {
	r.m.Range(func(k, v any) bool {
		if now-v.(*residentSpan).at >= residencyTTL {
			r.m.CompareAndDelete(k, v)
		}
		return true
	})
}

// localFS reports whether the file fd is on a local disk or memory file
// system whose reads of cached pages do not go to a network.
func localFS(fd int) bool {
	var st unix.Statfs_t
	if unix.Fstatfs(fd, &st) != nil {
		return false
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC,
		unix.TMPFS_MAGIC, unix.F2FS_SUPER_MAGIC:
		return true
	}
	return false
}
