package cache

import (
	"bytes"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/sluice-server/sluice/cache/disk"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

// The disk store (Options.Path): responses are objects of a disk.Store,
// their meta encoded in the object's head (headcodec.go), their bodies
// written to the object's file as they stream in and sent from it with
// sendfile on a hit. The directory is the index: every lookup opens the
// object its key names, so what another process sharing the directory
// stores, replaces or purges is seen at once. A Vary marker is an object
// too, under the primary key, with an empty body; its generation, part
// of its variants' keys, is random, so that two processes that each make
// a marker after an invalidation never reuse one another's (a counter
// per process would, and bring an invalidated variant back). Only the
// hit-for-pass markers stay in memory, per process.

// errReplaced is what a send gets when the object it looked up was
// replaced or removed in between.
var errReplaced = errors.New("cache: the stored object changed while it was read")

// diskBody is a body kept in a disk store object: one being written
// (w set: readers along follow it through the writer's Objects until
// Commit), or one stored under key, opened again for each send and
// checked to be the object looked up.
type diskBody struct {
	s      *disk.Store
	key    string
	w      *disk.Writer
	max    int64  // the object stays published only up to this size
	marker []byte // the Vary marker to store under pk with the object, or nil
	pk     string

	mu    sync.Mutex
	heads [][]byte // the heads the object may have: as looked up, as freshened

	// o is the stored object, held open while the entry is remembered
	// (refs 1) and while sends read it (one more each), so that a purge
	// after a lookup does not cut the answers to it short.
	o    *disk.Object
	refs int
}

// acquire returns the open object, held for a send, or nil.
func (d *diskBody) acquire() *disk.Object {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.o == nil || d.refs == 0 {
		return nil
	}
	d.refs++
	return d.o
}

// release lets go of a hold on the open object, closing it after the
// last.
func (d *diskBody) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.o == nil || d.refs == 0 {
		return
	}
	if d.refs--; d.refs == 0 {
		d.o.Close()
		d.o = nil
	}
}

// memoCharge is what a remembered disk entry is charged at least in the
// memory store, whose budget is DefaultSize: it holds a file open, so
// at most 1024 are remembered.
const memoCharge = DefaultSize / 1024

// diskEvicted closes the object of a remembered disk entry leaving the
// memory store (once the sends reading it end).
func (x *Cache) diskEvicted(_ string, e *entry) {
	if e.body != nil && e.body.dsk != nil {
		e.body.dsk.release()
	}
}

// diskMemo returns the entry kept in memory for the disk object o under
// mk, closing o, or nil when none is kept for o's head.
func (x *Cache) diskMemo(mk string, o *disk.Object) *entry {
	if e, ok := x.store.Get(mk); ok && e.body != nil && e.body.dsk != nil && e.body.dsk.knows(o.Head()) {
		o.Close()
		return e
	}
	return nil
}

func (d *diskBody) knows(head []byte) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, h := range d.heads {
		if bytes.Equal(h, head) {
			return true
		}
	}
	return false
}

func (d *diskBody) addHead(head []byte) {
	d.mu.Lock()
	d.heads = append(d.heads, head)
	d.mu.Unlock()
}

// writeTo sends the body's bytes [off, end) with pipe.SendFile.
func (d *diskBody) writeTo(w pipe.Writer, off, end int64, gone <-chan struct{}) error {
	if o := d.acquire(); o != nil {
		defer d.release()
		return o.SendTo(w, off, end, gone)
	}
	var o *disk.Object
	err := errReplaced
	if d.w != nil {
		o, err = d.w.Object()
	}
	if err != nil {
		// Committed, or a stored object: open it again.
		if o, err = d.s.Get(d.key); err != nil {
			return errReplaced
		}
		if !d.knows(o.Head()) {
			o.Close()
			return errReplaced
		}
	}
	defer o.Close()
	if _, done := o.Size(); !done {
		// The header goes out first, as a body of unknown length: a
		// SendFile committing it would take its length for the body's.
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return o.SendTo(w, off, end, gone)
}

// appendDisk writes p to the object; a failed write drops the object.
func (b *body) appendDisk(p []byte) {
	b.mu.Lock()
	stop := b.done || b.failed
	b.mu.Unlock()
	if stop {
		return
	}
	_, err := b.dsk.w.Write(p)
	b.mu.Lock()
	if err != nil {
		b.failed = true
	} else {
		b.n += int64(len(p))
	}
	b.mu.Unlock()
	if err != nil {
		b.dsk.w.Abort()
	}
}

// finishDisk publishes the object (Commit) or drops it (Abort). An
// object over its size limit is published for the readers along it and
// purged at once.
func (b *body) finishDisk(failed bool) {
	b.mu.Lock()
	if b.done || b.failed {
		b.mu.Unlock()
		return
	}
	n := b.n
	b.mu.Unlock()
	d := b.dsk
	if failed {
		d.w.Abort()
	} else if err := d.w.Commit(); err != nil {
		failed = true
	} else if n > d.max {
		d.s.Purge(d.key)
	}
	b.mu.Lock()
	b.done, b.failed = !failed, failed
	b.mu.Unlock()
}

// diskLookup is lookup for the disk store.
func (x *Cache) diskLookup(pk string, r *engine.Request) (*entry, string, string) {
	o, err := x.disk.Get(pk)
	if err != nil {
		if e, ok := x.store.Get(pk); ok && e.kind == kindPass && x.now().Before(e.passUntil) {
			return nil, pk, "pass"
		}
		return nil, pk, "uri-miss"
	}
	m, gen, names, err := decodeHead(o.Head())
	if err != nil {
		o.Close()
		return nil, pk, "uri-miss"
	}
	if m != nil {
		return x.diskEntry(o, m, pk, ""), pk, ""
	}
	o.Close()
	sk := secondaryKey(r, names)
	vk := variantKey(pk, gen, sk)
	v, err := x.disk.Get(vk)
	if err != nil {
		return nil, vk, "vary-miss"
	}
	vm, _, _, err := decodeHead(v.Head())
	if err != nil || vm == nil || !encodingAcceptable(r, vm) {
		v.Close()
		return nil, vk, "vary-miss"
	}
	return x.diskEntry(v, vm, vk, sk), vk, ""
}

// diskEntry returns the entry of a stored object, which it takes over.
// The entry is remembered in the memory store while the object is
// unchanged, so that the requests of this process for it share one
// entry, one open file and one revalidation at a time; sends after it
// is forgotten open the object again.
func (x *Cache) diskEntry(o *disk.Object, m *meta, key, sk string) *entry {
	mk := "d\x00" + key
	if e := x.diskMemo(mk, o); e != nil {
		return e
	}
	// Made under memoMu, so that requests looking the object up at once
	// share one entry, and with it one revalidation (entry.pending).
	x.memoMu.Lock()
	defer x.memoMu.Unlock()
	if e := x.diskMemo(mk, o); e != nil {
		return e
	}
	n, _ := o.Size()
	d := &diskBody{s: x.disk, key: key, heads: [][]byte{bytes.Clone(o.Head())}, o: o, refs: 1}
	e := newEntry()
	e.key, e.sk = key, sk
	e.body = &body{dsk: d, n: n, done: true}
	e.publish(m, 0, nil)
	if !x.store.Set(mk, e, max(int64(len(mk)+len(o.Head()))+entryOverhead, memoCharge)) {
		d.release()
	}
	return e
}

// diskMarker returns the generation of the Vary marker stored under pk
// when it names names, or a new random one and the marker to store.
func (x *Cache) diskMarker(pk string, names []string) (uint64, []byte) {
	if o, err := x.disk.Get(pk); err == nil {
		_, gen, stored, err := decodeHead(o.Head())
		o.Close()
		if err == nil && stored != nil && equalNames(stored, names) {
			return gen, nil
		}
	}
	gen := rand.Uint64()
	return gen, encodeVary(gen, names)
}

// attachDisk makes e's body an object of the disk store, written as it
// streams in, when the cache has one. On an error e keeps a body in
// memory, which diskInsert writes out whole; c is the request, named in
// the log line of a failure.
func (x *Cache) attachDisk(c *pipe.Conn, e *entry, pk string, m *meta, sk string) {
	if x.disk == nil || e.body != nil {
		return
	}
	key, marker := pk, []byte(nil)
	if m.vary != nil {
		var gen uint64
		gen, marker = x.diskMarker(pk, m.vary)
		key = variantKey(pk, gen, sk)
	}
	head := encodeMeta(m)
	w, err := x.disk.Create(key, head)
	if err != nil {
		x.logger.Error("cache: disk store", "error", err, c.RequestIDAttr())
		return
	}
	b := &body{dsk: &diskBody{s: x.disk, key: key, w: w, max: x.maxObject, marker: marker, pk: pk, heads: [][]byte{head}}}
	// Under the lock: a request joining the fetch (join) reads e.body
	// under it, and may do so while this response's head is stored.
	x.mu.Lock()
	e.key = key
	e.body = b
	x.mu.Unlock()
}

// diskInsert is insert for the disk store: the object is published when
// its body completes (finishDisk), and its Vary marker now; a body kept
// in memory (a revalidation's new response) is written out here.
func (x *Cache) diskInsert(pk string, e *entry, m *meta, sk string) bool {
	n, done := e.body.state()
	if !done || n > x.maxObject {
		return false
	}
	if e.purged.Load() {
		// A purge came while it was fetched; its object may be out.
		if e.key != "" {
			x.disk.Purge(e.key)
		}
		return false
	}
	d := e.body.dsk
	if d == nil {
		key, marker := pk, []byte(nil)
		if m.vary != nil {
			var gen uint64
			gen, marker = x.diskMarker(pk, m.vary)
			key = variantKey(pk, gen, sk)
		}
		w, err := x.disk.Create(key, encodeMeta(m))
		if err != nil {
			return false
		}
		if err := e.body.writeTo(fileWriter{w}, 0, -1, nil); err != nil {
			w.Abort()
			return false
		}
		if err := w.Commit(); err != nil {
			return false
		}
		e.key = key
		d = &diskBody{marker: marker}
	}
	if d.marker != nil {
		w, err := x.disk.Create(pk, d.marker)
		if err != nil {
			return false
		}
		if err := w.Commit(); err != nil {
			return false
		}
	}
	return true
}

// diskFreshen stores the head of a response a 304 freshened. SetHead
// copies the body to a new file, so it runs on a goroutine of its own
// (which Close waits for): the request that revalidated is answered
// from the entry, freshened at once, meanwhile. reqID names that request
// in a failure's log line.
func (x *Cache) diskFreshen(e *entry, m *meta, reqID slog.Attr) {
	if x.disk == nil || e.body == nil || e.body.dsk == nil || e.key == "" {
		return
	}
	head := encodeMeta(m)
	e.body.dsk.addHead(head)
	x.fetches.Add(1)
	go func() {
		defer x.fetches.Done()
		if err := x.disk.SetHead(e.key, head); err != nil && !errors.Is(err, disk.ErrNotFound) {
			x.logger.Error("cache: disk store", "error", err, reqID)
		}
	}()
}

// diskPurgePrefix removes the objects whose keys start with prefix:
// the responses to one URI under every value of the extra key parts.
// The disk store keeps no index of keys, so this reads the key of every
// object file: a walk of the directory per invalidation.
func (x *Cache) diskPurgePrefix(prefix string) {
	if x.disk == nil {
		return
	}
	if _, err := x.disk.PurgePrefix(prefix); err != nil {
		x.logger.Error("cache: disk store", "error", err)
	}
}

// diskPurgeURL removes the response stored under base, or its Vary
// marker and variants, and the responses under extra key parts (keys
// base, NUL, ...): a walk of the directory, as PurgePrefix is. It
// returns how many responses it removed.
func (x *Cache) diskPurgeURL(base string) int {
	n := 0
	if o, err := x.disk.Get(base); err == nil {
		m, _, _, err := decodeHead(o.Head())
		o.Close()
		if ok, _ := x.disk.Purge(base); ok && err == nil && m != nil {
			n++
		}
	}
	k, err := x.disk.PurgePrefix(base + "\x00")
	if err != nil {
		x.logger.Error("cache: disk store", "error", err)
	}
	return n + k
}

// diskBan removes the objects whose keys start with one of prefixes,
// and returns how many it removed; 0 without a disk store.
func (x *Cache) diskBan(prefixes []string) int {
	if x.disk == nil {
		return 0
	}
	n := 0
	for _, p := range prefixes {
		k, err := x.disk.PurgePrefix(p)
		if err != nil {
			x.logger.Error("cache: disk store", "error", err)
		}
		n += k
	}
	return n
}

// diskPurgeTag removes the responses on disk tagged tag, and returns
// how many it removed; 0 without a disk store. The directory keeps no
// index of tags: this reads every object's head.
func (x *Cache) diskPurgeTag(tag string) int {
	if x.disk == nil {
		return 0
	}
	n, err := x.disk.PurgeWhere(func(_ string, head []byte) bool {
		m, _, _, err := decodeHead(head)
		return err == nil && m != nil && containsString(responseTags(m), tag)
	})
	if err != nil {
		x.logger.Error("cache: disk store", "error", err)
	}
	return n
}

// diskStats is Stats with a disk store: its objects (responses and Vary
// markers) and evictions in this process, and the bytes of every
// process's objects.
func (x *Cache) diskStats() Stats {
	st := Stats{
		Hits: atomic.LoadUint64(&x.stats.Hits), Misses: atomic.LoadUint64(&x.stats.Misses),
		Stale: atomic.LoadUint64(&x.stats.Stale), Revalidated: atomic.LoadUint64(&x.stats.Revalidated),
		Passes: atomic.LoadUint64(&x.stats.Passes), Collapsed: atomic.LoadUint64(&x.stats.Collapsed),
		Stored:      atomic.LoadUint64(&x.stats.Stored),
		BytesServed: atomic.LoadUint64(&x.stats.BytesServed), Purged: atomic.LoadUint64(&x.stats.Purged),
	}
	if ds, err := x.disk.Stats(); err == nil {
		st.Objects, st.Bytes, st.Evictions = uint64(max(0, ds.Objects)), ds.Bytes, ds.Evictions
	}
	return st
}

// fileWriter is a pipe.Writer onto a disk.Writer.
type fileWriter struct{ w *disk.Writer }

func (f fileWriter) Write(p []byte) (int, error) { return f.w.Write(p) }
func (f fileWriter) Flush() error                { return nil }
func (f fileWriter) Close() error                { return nil }

// Close waits for the revalidations running behind answers already
// given (stale-while-revalidate) to end, and closes the disk store, if
// the cache has one; the cache must not be used after. Close it once
// the server stops handing it requests.
func (x *Cache) Close() error {
	x.fetches.Wait()
	if x.disk == nil {
		return nil
	}
	x.store.Range(func(_ string, e *entry) bool {
		x.diskEvicted("", e)
		return true
	})
	return x.disk.Close()
}
