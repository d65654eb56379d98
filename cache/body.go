package cache

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sluice-server/sluice/pipe"
)

// errBodyFailed is what a reader of a body whose fetch broke off gets.
var errBodyFailed = errors.New("cache: the response being stored broke off")

// contentReader is what a hit reads a stored body through: its length so
// far and whether it is complete, and the bytes [off, end) as they
// arrive. A body in memory is one; a file of the disk store
// (cache/disk's Object: Size and SendTo) can stand in for it.
type contentReader interface {
	state() (n int64, done bool)
	writeTo(w pipe.Writer, off, end int64, gone <-chan struct{}) error
}

var _ contentReader = (*body)(nil)

// body is an entry's content in memory. It grows while the response is
// fetched; readers (the clients collapsed onto the fetch, and hits on it)
// read what is there and wait for more, so nothing is buffered whole
// before it is sent. Appending never moves bytes already in it: a chunk
// is never reallocated, so readers hold views of it without a lock while
// the body grows. Safe for one writer and any number of readers at a
// time.
//
// A body with an arena is reference counted (ref, unref): it starts
// held once, by the fetch that writes it; the store holds it while it is
// stored, and every reader from before it reads until it has written
// what it read. When the last lets go its chunks go back to the arena,
// and it can be held no more: a view of a chunk is never written to a
// client after the chunk has gone back.
type body struct {
	mu     sync.Mutex
	chunks [][]byte
	n      int64
	length int64 // the known length, or -1
	done   bool  // complete
	failed bool  // broke off: readers stop with errBodyFailed
	wait   chan struct{}

	// stream marks a body that is not stored and has one reader: the
	// chunks it has read are let go, so a long response passed through
	// costs no more memory than what the reader lags behind. base is the
	// offset of chunks[0].
	stream bool
	base   int64

	// window, when over 0, bounds what the body holds: a body that will
	// not be stored (it outgrew MaxObjectSize) but that collapsed
	// readers read keeps only its last window bytes (whole chunks), and
	// a reader further behind is cut off. pins counts the collapsed
	// readers that joined but have not written a byte yet: while there
	// are any the window does not slide, so that none finds its first
	// bytes gone because its goroutine ran late (see pinStart).
	window int64
	pins   int

	all, allCounted pipe.Content // send the whole complete body; made once (sendAll)

	first [1][]byte // chunks' first backing array: a short body needs no other

	// arena, when set, is where the chunks come from and go back to;
	// refs counts the body's holders, 0 once it let its chunks go (it
	// never rises again). retired holds the chunks trimmed off a
	// windowed body, which readers may still be writing from: they go
	// back with the rest.
	arena   *arena
	refs    atomic.Int64
	retired [][]byte
	// heapOnly: the chunks come from the Go heap even with an arena (an
	// error response's body, which an error page may replace: then the
	// hold its answer took is never let go of).
	heapOnly bool
	early    int // chunks[:early] are from before the window: the arena's

	// dsk, when set, keeps the bytes in a disk store object instead
	// (diskstore.go): chunks stay empty, n counts what is written.
	dsk *diskBody
}

// sendAll returns a Content that sends the whole body, which is
// complete, made once for every hit on it, and then lets go of a hold on
// the body that the caller took for it; with served set, it adds the
// body's length to *served (a Stats counter, atomically) when it was
// sent whole, as Cache.counted does.
func (b *body) sendAll(served *uint64) pipe.Content {
	b.mu.Lock()
	defer b.mu.Unlock()
	if served == nil {
		if b.all == nil {
			b.all = func(w pipe.Writer) error {
				defer b.unref()
				return b.writeAll(w)
			}
		}
		return b.all
	}
	if b.allCounted == nil {
		n := uint64(b.n)
		b.allCounted = func(w pipe.Writer) error {
			defer b.unref()
			err := b.writeAll(w)
			if err == nil {
				atomic.AddUint64(served, n)
			}
			return err
		}
	}
	return b.allCounted
}

// newBody returns an empty body of the known length, or -1, held once
// (by its writer), its chunks from a, or from the Go heap when a is nil.
// Memory is taken as the bytes come, in chunks that grow with the body
// (never past a known length), not all at once before the first byte.
func newBody(length int64, a *arena) *body {
	return new(body).init(length, a)
}

// init makes the zero body b one of newBody's, and returns it.
func (b *body) init(length int64, a *arena) *body {
	b.length, b.arena = length, a
	b.chunks = b.first[:0]
	b.refs.Store(1)
	return b
}

// setLength sets the known length of a body made before it was known,
// and whether its chunks must come from the Go heap, before anything
// is appended.
func (b *body) setLength(length int64, heapOnly bool) {
	b.mu.Lock()
	b.length, b.heapOnly = length, heapOnly
	b.mu.Unlock()
}

// ref takes a hold on the body, and reports false when it has let its
// chunks go already (its last holder let go): then it must not be read.
// A body without an arena is always held (the collector frees it).
func (b *body) ref() bool {
	if b.arena == nil {
		return true
	}
	for {
		n := b.refs.Load()
		if n <= 0 {
			return false
		}
		if b.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// unref lets go of a hold taken by newBody or ref; after the last, the
// chunks go back to the arena.
func (b *body) unref() {
	if b.arena == nil {
		return
	}
	switch n := b.refs.Add(-1); {
	case n > 0:
		return
	case n < 0:
		panic("cache: body let go of more often than held")
	}
	b.mu.Lock()
	n := len(b.chunks) // those from the arena: all but a window's and a heapOnly body's
	if b.window > 0 {
		n = b.early
	}
	if b.heapOnly {
		n = 0
	}
	for i, c := range b.chunks {
		if i < n {
			b.arena.put(c)
		}
		b.chunks[i] = nil
	}
	for i, c := range b.retired {
		b.arena.put(c)
		b.retired[i] = nil
	}
	b.chunks, b.retired = nil, nil
	b.mu.Unlock()
}

// nextChunk returns an empty chunk to follow the b.n bytes there are,
// under b.mu. A body of unknown length grows by 4, 8, 16 KiB, then
// 32 KiB at a time (so that at most about half of it is unused); one of
// known length in 32 KiB chunks and then classes that add up to the
// length with little over (a quarter of the last chunk at most, or 3 KiB
// below 4 KiB, or an exact piece of the Go heap); one outgrown
// MaxObjectSize in 32 KiB chunks of the Go heap (see trim).
func (b *body) nextChunk() []byte {
	if b.window > 0 {
		return make([]byte, 0, chunkSize)
	}
	size := chunkSize
	if r := b.length - b.n; b.length > b.n && r < chunkSize {
		size = 1 << minClassShift
		for size < int(r) {
			size <<= 1
		}
		switch {
		case r < 3<<(minClassShift-2):
			// Below 3 KiB: an exact piece rather than most of 4 KiB unused.
			return make([]byte, 0, r)
		case size > 1<<minClassShift && int64(size)-r > int64(size/4):
			size >>= 1
		}
	} else if b.length < 0 {
		if k := len(b.chunks); k > 0 {
			size = min(chunkSize, 2*cap(b.chunks[k-1]))
		} else {
			size = 1 << minClassShift
		}
	}
	if b.arena == nil || b.heapOnly {
		return make([]byte, 0, size)
	}
	return b.arena.get(classOf(size))
}

// bound makes the body keep only about its last window bytes from now
// on (see body.window).
func (b *body) bound(window int64) {
	b.mu.Lock()
	b.window = max(window, 2*chunkSize)
	b.early = len(b.chunks)
	b.trim()
	b.mu.Unlock()
}

// pinStart keeps the body's start for a reader that will read it from
// offset 0, until unpin or until the body holds twice its window (see
// trim): false when it is gone already (a windowed body that slid), and
// the reader must not read it. A disk body needs no pin.
func (b *body) pinStart() bool {
	if b.dsk != nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.base > 0 {
		return false
	}
	b.pins++
	return true
}

// unpin ends a pinStart's hold; the window may slide again once none is
// left.
func (b *body) unpin() {
	if b.dsk != nil {
		return
	}
	b.mu.Lock()
	b.pins--
	if b.pins == 0 {
		b.trim()
	}
	b.mu.Unlock()
}

// trim lets go of the oldest chunks past the window, under b.mu. A pin
// (pinStart) holds the start only while the body holds less than twice
// the window: a pinned reader whose first write does not return (its
// client reads nothing) must not make the body grow without bound. It
// is then cut off like any reader behind the window.
func (b *body) trim() {
	if b.window <= 0 || b.pins > 0 && b.n-b.base < 2*b.window {
		return
	}
	for len(b.chunks) > 1 && b.n-b.base-int64(len(b.chunks[0])) >= b.window {
		b.base += int64(len(b.chunks[0]))
		if b.early > 0 {
			// The arena's, and a slow reader may be writing from it
			// still. The Go heap's are the collector's to free.
			b.early--
			if b.arena != nil && !b.heapOnly {
				b.retired = append(b.retired, b.chunks[0])
			}
		}
		b.chunks[0] = nil
		b.chunks = b.chunks[1:]
	}
}

// append adds p (copied) and wakes the readers waiting for it.
func (b *body) append(p []byte) {
	if b.dsk != nil {
		b.appendDisk(p)
		return
	}
	b.mu.Lock()
	for len(p) > 0 {
		var last []byte
		if k := len(b.chunks); k > 0 {
			last = b.chunks[k-1]
		}
		if len(last) == cap(last) {
			last = b.nextChunk()
			b.chunks = append(b.chunks, last)
		}
		n := min(cap(last)-len(last), len(p))
		k := len(last)
		last = last[:k+n]
		storeCopy(last[k:], p[:n])
		b.chunks[len(b.chunks)-1] = last
		b.n += int64(n)
		p = p[n:]
	}
	b.trim()
	b.wake()
	b.mu.Unlock()
}

// finish marks the body complete, or broken off, and wakes the readers.
func (b *body) finish(failed bool) {
	if b.dsk != nil {
		b.finishDisk(failed)
		return
	}
	b.mu.Lock()
	if !b.done && !b.failed {
		b.done, b.failed = !failed, failed
	}
	b.wake()
	b.mu.Unlock()
}

func (b *body) wake() {
	if b.wait != nil {
		close(b.wait)
		b.wait = nil
	}
}

// state returns the length so far and whether the body is complete.
func (b *body) state() (int64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n, b.done
}

// capacity is what the body holds in memory.
func (b *body) capacity() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	var n int64
	for _, c := range b.chunks {
		n += int64(cap(c))
	}
	return n
}

// next returns the bytes from off on that are there now (from one chunk),
// or, when none are, whether the body is complete or failed, and a
// channel that is closed when that changes.
func (b *body) next(off int64) (p []byte, done bool, wait <-chan struct{}, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stream {
		// The one reader has written what is before off.
		for len(b.chunks) > 0 && b.base+int64(len(b.chunks[0])) <= off {
			b.base += int64(len(b.chunks[0]))
			if b.arena != nil && !b.heapOnly {
				b.arena.put(b.chunks[0])
			}
			b.chunks[0] = nil
			b.chunks = b.chunks[1:]
		}
	}
	if off < b.base {
		return nil, false, nil, errBodyFailed
	}
	if off < b.n {
		rel := off - b.base
		for _, c := range b.chunks {
			if rel < int64(len(c)) {
				return c[rel:], false, nil, nil
			}
			rel -= int64(len(c))
		}
	}
	if b.failed {
		return nil, false, nil, errBodyFailed
	}
	if b.done {
		return nil, true, nil, nil
	}
	if b.wait == nil {
		b.wait = make(chan struct{})
	}
	return nil, false, b.wait, nil
}

// writeAll writes the whole body, which is complete, to w: its chunks
// together (pipe.WriteBuffers), so that a body of several chunks leaves
// with its header in one system call where the writers beneath allow,
// not in a call per chunk. A body on disk, or one that let its start go,
// is written by writeTo. The caller holds the body (ref) until it
// returns.
func (b *body) writeAll(w pipe.Writer) error {
	if b.dsk != nil {
		return b.writeTo(w, 0, -1, nil)
	}
	b.mu.Lock()
	// A complete body's chunks no longer change: appending is over, and
	// only a stream or a window trims them.
	chunks := b.chunks
	whole := b.done && !b.stream && b.window <= 0 && b.base == 0
	b.mu.Unlock()
	if !whole || len(chunks) < 2 {
		return b.writeTo(w, 0, -1, nil)
	}
	// b, and so its arena's mapping, is reachable until the chunks are
	// written.
	defer runtime.KeepAlive(b)
	_, err := pipe.WriteBuffers(w, chunks)
	return err
}

// writeTo writes the body's bytes [off, end) to w as they arrive (end -1:
// to the end), flushing whenever it must wait for more. It stops with an
// error when w fails, the body breaks off or gone is closed. The caller
// holds the body (ref) until it returns.
func (b *body) writeTo(w pipe.Writer, off, end int64, gone <-chan struct{}) error {
	if b.dsk != nil {
		return b.dsk.writeTo(w, off, end, gone)
	}
	// b, and so its arena's mapping, is reachable until the last view is
	// written.
	defer runtime.KeepAlive(b)
	for end < 0 || off < end {
		p, done, wait, err := b.next(off)
		switch {
		case err != nil:
			return err
		case done:
			return nil
		case wait != nil:
			if err := w.Flush(); err != nil {
				return err
			}
			select {
			case <-wait:
			case <-gone:
				return errors.New("cache: client gone")
			}
			continue
		}
		if end >= 0 && int64(len(p)) > end-off {
			p = p[:end-off]
		}
		if _, err := w.Write(p); err != nil {
			return err
		}
		off += int64(len(p))
	}
	return nil
}
