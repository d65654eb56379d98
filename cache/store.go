package cache

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/engine"
)

// Kinds of store entry.
const (
	kindResponse = iota // a stored response
	kindVary            // the Vary names of the responses stored under a primary key
	kindPass            // hit-for-pass: the last response was not storable
)

// entry is one store entry. A response entry is made when a fetch
// starts; its meta is published (and it is ready) when the response
// header is known, or it is abandoned; its body grows until the fetch
// ends, and it enters the store once the body is complete.
type entry struct {
	kind uint8

	// isReady is set once the entry is published or abandoned; ready,
	// made only for a request that waits for that before (a collapsed
	// miss, a shared revalidation: most fetches have nobody waiting),
	// is then closed. readyMu guards both. Kept beside kind, abandoned
	// and purged, they take no room but the channel's pointer.
	isReady   atomic.Bool
	abandoned atomic.Bool // set before the entry is ready, without a meta
	purged    atomic.Bool // a purge matched it while it was fetched: not stored
	readyMu   sync.Mutex
	ready     chan struct{}

	// kindVary: the names, and the generation in the variants' keys, so
	// that a new set of names or an invalidation orphans every old one.
	vary []string
	gen  uint64

	// kindPass.
	passUntil time.Time

	// kindResponse.
	meta    atomic.Pointer[meta]
	body    *body
	pending atomic.Pointer[fetch] // the revalidation in flight, shared
	hit     atomic.Pointer[hitStrings]
	mem     body   // the body, when in memory: made with the entry (newBodyIn)
	readers int    // collapsed readers, under Cache.mu
	sk      string // the secondary key, set before the entry is ready
	flight  string // the key in Cache.inflight while fetched
	key     string // the store key
	charge  int64
}

func newEntry() *entry { return new(entry) }

// closedReady is the ready channel of an entry that was ready before
// anyone waited.
var closedReady = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// readyChan returns a channel closed once e is published or abandoned.
func (e *entry) readyChan() <-chan struct{} {
	e.readyMu.Lock()
	defer e.readyMu.Unlock()
	if e.ready == nil {
		if e.isReady.Load() {
			return closedReady
		}
		e.ready = make(chan struct{})
	}
	return e.ready
}

// markReady makes e ready, once, and wakes who waits for it.
func (e *entry) markReady() {
	e.readyMu.Lock()
	e.isReady.Store(true)
	ch := e.ready
	if ch == nil {
		e.ready = closedReady
	}
	e.readyMu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// publish makes m the entry's response and wakes the waiters. A known
// length up to sizeHint sizes the body's chunks (see newBody); a longer
// body grows as one of unknown length. The body is made now, its memory
// from a (from the Go heap for an error status), unless the entry has
// one already (made before the length was known, or on disk).
func (e *entry) publish(m *meta, sizeHint int64, a *arena) {
	length := int64(-1)
	if m.length >= 0 && m.length <= sizeHint {
		length = m.length
	}
	if e.body == nil {
		e.body = e.mem.init(length, a)
	}
	if e.body.dsk == nil {
		// An error response's body stays on the Go heap: an error page
		// (pipe.ErrorPages) may replace an answer from it, whose hold on
		// the body would then never be let go of.
		e.body.setLength(length, m.status >= 400)
	}
	e.meta.Store(m)
	e.markReady()
}

// abandon releases the waiters of an entry that will have no response.
func (e *entry) abandon() {
	e.abandoned.Store(true)
	e.markReady()
}

// variantKey is the store key of the variant sk of a primary key under
// a Vary marker's generation.
func variantKey(pk string, gen uint64, sk string) string {
	return pk + "\x00" + strconv.FormatUint(gen, 36) + sk
}

// lookup finds the stored response for r under its primary key pk. It
// returns the response entry (nil when none), the key that collapses
// concurrent misses, and the Cache-Status fwd value of a miss:
// "uri-miss", "vary-miss", or "pass" under a hit-for-pass marker.
func (x *Cache) lookup(pk string, r *engine.Request) (*entry, string, string) {
	if x.disk != nil {
		return x.diskLookup(pk, r)
	}
	e, ok := x.store.Get(pk)
	if !ok {
		return nil, pk, "uri-miss"
	}
	switch e.kind {
	case kindPass:
		if x.now().Before(e.passUntil) {
			return nil, pk, "pass"
		}
		return nil, pk, "uri-miss"
	case kindVary:
		sk := secondaryKey(r, e.vary)
		vk := variantKey(pk, e.gen, sk)
		v, ok := x.store.Get(vk)
		if !ok || v.kind != kindResponse {
			return nil, vk, "vary-miss"
		}
		if m := v.meta.Load(); !encodingAcceptable(r, m) {
			return nil, vk, "vary-miss"
		}
		return v, vk, ""
	}
	return e, pk, ""
}

// insert stores the complete response entry e under its primary key pk,
// with a Vary marker when the response varies. It reports whether the
// budget took it.
func (x *Cache) insert(pk string, r *engine.Request, e *entry, m *meta, sk string) bool {
	if x.disk != nil {
		return x.diskInsert(pk, e, m, sk)
	}
	n, _ := e.body.state()
	charge := m.headerSize + e.body.capacity() + int64(2*len(pk)) + entryOverhead
	charge = max(charge, x.minCharge)
	if n > x.maxObject {
		return false
	}
	e.charge = charge
	if m.vary == nil {
		e.key = pk
		return x.add(e, m, charge)
	}
	mk, ok := x.store.Get(pk)
	if !ok || mk.kind != kindVary || !equalNames(mk.vary, m.vary) {
		mk = &entry{kind: kindVary, vary: m.vary, gen: x.gen.Add(1)}
		if !x.store.Set(pk, mk, int64(len(pk))+markerOverhead) {
			return false
		}
	}
	e.key = variantKey(pk, mk.gen, sk)
	return x.add(e, m, charge)
}

func equalNames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// markPass records that the response for pk could not be stored, so
// that requests for it stop waiting on one another for a while; a
// stored response or Vary marker is left alone.
func (x *Cache) markPass(pk string) {
	if _, ok := x.store.Get(pk); ok {
		return
	}
	x.store.Set(pk, &entry{kind: kindPass, passUntil: x.now().Add(passTTL)}, int64(len(pk))+markerOverhead)
}

// invalidate removes what is stored under a primary key: its response,
// or its Vary marker, which orphans every variant (they age out of the
// budget unreachable).
func (x *Cache) invalidate(pk string) {
	x.remove(pk)
	if x.disk != nil {
		x.disk.Purge(pk)
	}
}
