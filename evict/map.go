package evict

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// maxFreq is where an entry's access counter saturates: an entry in the
// main queue survives at most maxFreq passes of the eviction hand without
// being read again.
const maxFreq = 3

// smallShare is the part of the budget, in bytes, the small (probation)
// queue holds before it is evicted from first: one tenth, as in the
// paper.
const smallShare = 10

// promote is how many reads in the small queue move an entry to the main
// queue when the hand reaches it.
const promote = 1

// Which queue an entry is in.
const (
	inSmall = iota
	inMain
)

// entry is a stored value. key, hash, size, queue, prev and next are
// guarded by the Map's write lock; val too (read under the read lock);
// freq is atomic because Get bumps it under the read lock. hash is the
// key's, for the ghost, computed once when the entry is set.
type entry[K comparable, V any] struct {
	key        K
	val        V
	hash       uint64
	size       int64
	freq       atomic.Int32
	queue      uint8
	prev, next *entry[K, V]
}

// fifo is an intrusive doubly linked queue of entries: push at the tail,
// pop at the head, unlink from anywhere (Delete).
type fifo[K comparable, V any] struct {
	head, tail *entry[K, V]
	bytes      int64
	n          int
}

func (q *fifo[K, V]) push(e *entry[K, V]) {
	e.prev, e.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = e
	} else {
		q.head = e
	}
	q.tail = e
	q.bytes += e.size
	q.n++
}

func (q *fifo[K, V]) unlink(e *entry[K, V]) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		q.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		q.tail = e.prev
	}
	e.prev, e.next = nil, nil
	q.bytes -= e.size
	q.n--
}

// ghost remembers the hashes of keys recently evicted from the small
// queue without having been read, at most as many as the Map holds
// entries: a key set again while remembered goes straight to the main
// queue. Only 64-bit hashes are kept, never keys, so the memory it
// takes is a small multiple of 8 bytes per remembered key.
type ghost struct {
	seen hashGens    // hash -> generation of its newest ring slot
	ring []ghostSlot // FIFO, oldest at ring[head]
	head int
	gen  uint32
}

type ghostSlot struct {
	h   uint64
	gen uint32
}

func (g *ghost) add(h uint64, limit int) {
	if limit <= 0 {
		return
	}
	g.gen++
	g.seen.put(h, g.gen)
	g.ring = append(g.ring, ghostSlot{h, g.gen})
	for len(g.ring)-g.head > limit {
		g.drop()
	}
	// Compact once the consumed prefix is half the ring.
	if g.head > 64 && g.head*2 >= len(g.ring) {
		n := copy(g.ring, g.ring[g.head:])
		clear(g.ring[n:])
		g.ring, g.head = g.ring[:n], 0
	}
}

func (g *ghost) drop() {
	s := g.ring[g.head]
	g.head++
	if i, ok := g.seen.find(s.h); ok && g.seen.gen(i) == s.gen {
		g.seen.remove(i)
	}
}

// take reports whether h is remembered, and forgets it.
func (g *ghost) take(h uint64) bool {
	i, ok := g.seen.find(h)
	if ok {
		g.seen.remove(i)
	}
	return ok
}

// Map is a concurrent map whose entries' sizes add up to no more than a
// byte budget. Setting an entry that would pass the budget first evicts
// others, chosen by S3-FIFO (see the package documentation).
//
// A Map is safe for use by many goroutines at once. Get takes only a read
// lock and writes nothing but the entry's access counter, so reads run in
// parallel; Set and Delete take the write lock. The zero value is not
// usable: make a Map with New. A Map must not be copied after first use.
type Map[K comparable, V any] struct {
	mu    sync.RWMutex
	items table[K, V]
	small fifo[K, V]
	main  fifo[K, V]
	ghost ghost
	seed  maphash.Seed

	// free holds entries let go of, linked by next, for the next Sets to
	// reuse (at most maxFree), so that a Set that evicts allocates
	// nothing at the steady state. ranging counts the Range calls under
	// way: while there are any, no entry is kept for reuse, as Range
	// holds entries it has not visited yet and must not find another
	// key in one.
	free    *entry[K, V]
	nfree   int
	ranging atomic.Int32
	budget  int64
	onEvict func(K, V)

	bytes int64 // the sizes' sum, under the write lock
	// size and len publish bytes and len(items) when the write lock is
	// released, so that Size never shows the moment a Set passes the
	// budget before it evicts.
	size      atomic.Int64
	len       atomic.Int64
	evictions atomic.Uint64
}

// New returns an empty Map that holds entries of at most budget bytes in
// all. onEvict, when not nil, is called with each entry the Map lets go
// of by itself: one evicted to make room, or one replaced by Set (with
// the old value). It is not called for entries removed by Delete, which
// returns them. onEvict runs on the goroutine of the Set that let the
// entry go, after the Map's lock is released: it may call the Map's
// methods, and it must not keep that goroutine long.
func New[K comparable, V any](budget int64, onEvict func(K, V)) *Map[K, V] {
	return &Map[K, V]{
		seed:    maphash.MakeSeed(),
		budget:  max(budget, 0),
		onEvict: onEvict,
	}
}

// Get returns the value stored under k and whether there is one, and
// marks it used: an entry read since the eviction hand last passed it
// is kept over one that was not.
func (m *Map[K, V]) Get(k K) (V, bool) {
	h := maphash.Comparable(m.seed, k)
	m.mu.RLock()
	e := m.items.find(k, h)
	if e == nil {
		m.mu.RUnlock()
		var zero V
		return zero, false
	}
	v := e.val
	if f := e.freq.Load(); f < maxFreq {
		// A lost race only loses a count: the counter is a hint.
		e.freq.CompareAndSwap(f, f+1)
	}
	m.mu.RUnlock()
	return v, true
}

// kv is an entry let go of, to hand to onEvict once the lock is released.
type kv[K comparable, V any] struct {
	k K
	v V
}

// Set stores v under k, counting size bytes for it (a negative size
// counts as 0), replacing any value stored under k, and evicts other
// entries while the sizes add up to more than the budget. It returns false,
// storing nothing, when size alone is over the budget; any value stored
// under k is then removed all the same (and handed to onEvict), so that
// a Get after Set(k, v) returns v or nothing. The entries it lets go of
// are reused by later Sets (a few at a time, and not while a Range is
// under way), so a Set that evicts one allocates nothing.
func (m *Map[K, V]) Set(k K, v V, size int64) bool {
	size = max(size, 0)
	var buf [4]kv[K, V]
	gone := buf[:0]
	stored := true

	h := maphash.Comparable(m.seed, k)
	m.mu.Lock()
	e := m.items.find(k, h)
	exists := e != nil
	switch {
	case size > m.budget:
		stored = false
		if exists {
			gone = append(gone, kv[K, V]{k, e.val})
			m.remove(e)
			m.recycle(e)
		}
	case exists:
		gone = append(gone, kv[K, V]{k, e.val})
		q := m.queue(e)
		q.bytes += size - e.size
		m.bytes += size - e.size
		e.val, e.size = v, size
		gone = m.evict(e, gone)
	default:
		e = m.newEntry()
		e.key, e.val, e.size, e.hash = k, v, size, h
		m.items.insert(e)
		m.bytes += size
		if m.ghost.take(e.hash) {
			e.queue = inMain
			m.main.push(e)
		} else {
			m.small.push(e)
		}
		gone = m.evict(e, gone)
	}
	m.publish()
	m.mu.Unlock()

	if m.onEvict != nil {
		for _, g := range gone {
			m.onEvict(g.k, g.v)
		}
	}
	return stored
}

// maxFree bounds the entries kept for reuse: a Set evicts few at a time.
const maxFree = 16

// newEntry returns an entry to set, reused or new. The write lock is
// held.
func (m *Map[K, V]) newEntry() *entry[K, V] {
	e := m.free
	if e == nil {
		return new(entry[K, V])
	}
	m.free, e.next = e.next, nil
	m.nfree--
	return e
}

// recycle keeps e, unlinked and out of items, for reuse, when there is
// room and no Range is under way. The write lock is held.
func (m *Map[K, V]) recycle(e *entry[K, V]) {
	if m.nfree >= maxFree || m.ranging.Load() != 0 {
		return
	}
	var zk K
	var zv V
	e.key, e.val, e.hash, e.size, e.queue, e.prev = zk, zv, 0, 0, inSmall, nil
	e.freq.Store(0)
	e.next = m.free
	m.free = e
	m.nfree++
}

func (m *Map[K, V]) queue(e *entry[K, V]) *fifo[K, V] {
	if e.queue == inMain {
		return &m.main
	}
	return &m.small
}

// remove unlinks e and forgets its key. The write lock is held.
func (m *Map[K, V]) remove(e *entry[K, V]) {
	m.queue(e).unlink(e)
	m.items.remove(e)
	m.bytes -= e.size
}

// publish makes Size and Len show the state the write lock guards.
func (m *Map[K, V]) publish() {
	m.size.Store(m.bytes)
	m.len.Store(int64(m.items.n))
}

// evict lets entries go until the sizes add up to the budget or less,
// never keep (the entry just set, which fits), and appends them to gone.
// The write lock is held.
//
// S3-FIFO: while the small queue holds more than its share, its oldest
// entry leaves it: to the main queue when it was read while there, to
// the ghost otherwise. Else the main queue's oldest entry goes, unless it
// was read since the hand last passed it: then it goes round again with
// one read less.
func (m *Map[K, V]) evict(keep *entry[K, V], gone []kv[K, V]) []kv[K, V] {
	for m.bytes > m.budget {
		if m.small.n > 0 && (m.small.bytes > m.budget/smallShare || m.main.n == 0) &&
			(m.small.n > 1 || m.small.head != keep) {
			e := m.small.head
			m.small.unlink(e)
			switch {
			case e == keep: // a replaced entry, with others behind it
				m.small.push(e)
			case e.freq.Load() >= promote:
				e.freq.Store(0)
				e.queue = inMain
				m.main.push(e)
			default:
				m.ghost.add(e.hash, m.items.n)
				gone = m.drop(e, gone)
			}
			continue
		}
		e := m.main.head
		if e == nil {
			break // only keep is left, and it fits
		}
		m.main.unlink(e)
		if f := e.freq.Load(); f > 0 || e == keep {
			e.freq.Store(max(f-1, 0))
			m.main.push(e)
			continue
		}
		gone = m.drop(e, gone)
	}
	return gone
}

// drop forgets e, already unlinked, as evicted.
func (m *Map[K, V]) drop(e *entry[K, V], gone []kv[K, V]) []kv[K, V] {
	m.items.remove(e)
	m.bytes -= e.size
	m.evictions.Add(1)
	gone = append(gone, kv[K, V]{e.key, e.val})
	m.recycle(e)
	return gone
}

// Delete removes the value stored under k and returns it, and whether
// there was one. onEvict is not called for it.
func (m *Map[K, V]) Delete(k K) (V, bool) {
	h := maphash.Comparable(m.seed, k)
	m.mu.Lock()
	e := m.items.find(k, h)
	if e == nil {
		m.mu.Unlock()
		var zero V
		return zero, false
	}
	m.remove(e)
	m.publish()
	v := e.val
	m.recycle(e)
	m.mu.Unlock()
	return v, true
}

// Range calls fn with each entry, in no particular order, until fn returns
// false. It visits the entries present when it began that are still
// present when their turn comes, with their value at that moment; entries
// set after it began may be left out. fn runs with no lock held: it may
// call the Map's methods, Delete included (a purge walks the Map so).
// Range does not mark entries used. It allocates a slice of one pointer
// per entry.
func (m *Map[K, V]) Range(fn func(K, V) bool) {
	m.mu.RLock()
	// Counted under the read lock: no entry the walk holds is let go of
	// for reuse from now until it ends.
	m.ranging.Add(1)
	defer m.ranging.Add(-1)
	all := make([]*entry[K, V], 0, m.items.n)
	for _, s := range m.items.slots {
		if s.e != nil {
			all = append(all, s.e)
		}
	}
	m.mu.RUnlock()
	for _, e := range all {
		m.mu.RLock()
		k := e.key
		cur := m.items.find(k, e.hash)
		ok := cur != nil
		var v V
		if ok && cur == e {
			v = e.val
		}
		m.mu.RUnlock()
		if ok && cur == e && !fn(k, v) {
			return
		}
	}
}

// Len returns the number of entries.
func (m *Map[K, V]) Len() int { return int(m.len.Load()) }

// Size returns the sum of the entries' sizes: at most the budget.
func (m *Map[K, V]) Size() int64 { return m.size.Load() }

// Budget returns the budget New was given (0 if it was negative).
func (m *Map[K, V]) Budget() int64 { return m.budget }

// Evictions returns how many entries have been evicted to make room since
// New; replaced and deleted entries are not counted.
func (m *Map[K, V]) Evictions() uint64 { return m.evictions.Load() }
