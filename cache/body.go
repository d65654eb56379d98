package cache

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/sluice-server/sluice/pipe"
)

// chunkSize is the size of the pieces a body of unknown length grows in:
// a piece is never reallocated, so readers hold views of it without a
// lock while the body grows.
const chunkSize = 32 << 10

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
// before it is sent. Appending never moves bytes already in it. Safe for
// one writer and any number of readers at a time.
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
	// a reader further behind is cut off.
	window int64

	all, allCounted pipe.Content // send the whole complete body; made once (sendAll)

	first [1][]byte // chunks' first backing array: a short body needs no other

	// dsk, when set, keeps the bytes in a disk store object instead
	// (diskstore.go): chunks stay empty, n counts what is written.
	dsk *diskBody
}

// sendAll returns a Content that sends the whole body, which is
// complete, made once for every hit on it; with served set, it adds the
// body's length to *served (a Stats counter, atomically) when it was
// sent whole, as Cache.counted does.
func (b *body) sendAll(served *uint64) pipe.Content {
	b.mu.Lock()
	defer b.mu.Unlock()
	if served == nil {
		if b.all == nil {
			b.all = func(w pipe.Writer) error { return b.writeTo(w, 0, -1, nil) }
		}
		return b.all
	}
	if b.allCounted == nil {
		n := uint64(b.n)
		b.allCounted = func(w pipe.Writer) error {
			err := b.writeTo(w, 0, -1, nil)
			if err == nil {
				atomic.AddUint64(served, n)
			}
			return err
		}
	}
	return b.allCounted
}

// newBody returns an empty body of the known length, or -1. Memory is
// taken as the bytes come, in chunks that grow with the body (never
// past a known length), not all at once before the first byte.
func newBody(length int64) *body {
	b := &body{length: length}
	b.chunks = b.first[:0]
	return b
}

// nextChunk is the capacity of the chunk that follows the b.n bytes
// there are: chunkSize for a body of unknown length (so that at most
// that much is unused), and for a known length as much again as there
// is (at least chunkSize), up to what the length leaves, so that the
// chunks add up to the length exactly.
func (b *body) nextChunk() int64 {
	if b.length <= b.n || b.window > 0 {
		return chunkSize
	}
	return min(max(chunkSize, b.n), b.length-b.n)
}

// bound makes the body keep only about its last window bytes from now
// on (see body.window).
func (b *body) bound(window int64) {
	b.mu.Lock()
	b.window = max(window, 2*chunkSize)
	b.trim()
	b.mu.Unlock()
}

// trim lets go of the oldest chunks past the window, under b.mu.
func (b *body) trim() {
	if b.window <= 0 {
		return
	}
	for len(b.chunks) > 1 && b.n-b.base-int64(len(b.chunks[0])) >= b.window {
		b.base += int64(len(b.chunks[0]))
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
			last = make([]byte, 0, b.nextChunk())
			b.chunks = append(b.chunks, last)
		}
		n := min(cap(last)-len(last), len(p))
		last = append(last, p[:n]...)
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
		for len(b.chunks) > 0 && b.base+int64(len(b.chunks[0])) <= off {
			b.base += int64(len(b.chunks[0]))
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

// writeTo writes the body's bytes [off, end) to w as they arrive (end -1:
// to the end), flushing whenever it must wait for more. It stops with an
// error when w fails, the body breaks off or gone is closed.
func (b *body) writeTo(w pipe.Writer, off, end int64, gone <-chan struct{}) error {
	if b.dsk != nil {
		return b.dsk.writeTo(w, off, end, gone)
	}
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
