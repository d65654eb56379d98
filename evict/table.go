package evict

// table is the Map's index: its entries by key, an open addressing table
// with linear probing, at most half full, whose slots hold an entry and
// its key's hash (maphash, computed once when the entry is set, and the
// ghost's hash too). Looking a key up hashes it once and reads a slot or
// two, comparing keys only where the hashes are equal; removing an entry
// finds its slot by its hash and its pointer, without hashing or reading
// its key. A Go map hashes the key on each operation and reads the key
// of the slot it deletes, and an evicted entry's key (long unread, as
// the entry is) is a memory access of its own. The zero value is empty.
type table[K comparable, V any] struct {
	slots []slot[K, V]
	n     int // entries
}

// slot is a place of the table: e nil when empty. The key is compared
// in the entry, whose line a lookup that finds it reads anyway.
type slot[K comparable, V any] struct {
	h uint64
	e *entry[K, V]
}

// find returns the entry of key k, whose hash is h, or nil.
func (t *table[K, V]) find(k K, h uint64) *entry[K, V] {
	if len(t.slots) == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e == nil {
			return nil
		}
		if s.h == h && s.e.key == k {
			return s.e
		}
	}
}

// insert adds e, whose key (hashed e.hash) the table does not hold.
func (t *table[K, V]) insert(e *entry[K, V]) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	t.place(e)
	t.n++
}

// place puts e in the first empty slot from its hash's home on.
func (t *table[K, V]) place(e *entry[K, V]) {
	mask := uint64(len(t.slots) - 1)
	i := e.hash & mask
	for t.slots[i].e != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = slot[K, V]{e.hash, e}
}

// grow doubles the table (16 slots at first) and places every entry
// anew.
func (t *table[K, V]) grow() {
	old := t.slots
	t.slots = make([]slot[K, V], max(16, 2*len(old)))
	for _, s := range old {
		if s.e != nil {
			t.place(s.e)
		}
	}
}

// remove takes e, which the table holds, out of it, and moves back the
// entries after its slot that would no longer be found past the hole
// (deletion without tombstones).
func (t *table[K, V]) remove(e *entry[K, V]) {
	mask := len(t.slots) - 1
	hole := int(e.hash) & mask
	for t.slots[hole].e != e {
		hole = (hole + 1) & mask
	}
	for j := (hole + 1) & mask; t.slots[j].e != nil; j = (j + 1) & mask {
		home := int(t.slots[j].h) & mask
		// The entry at j may fill the hole unless its home slot lies
		// cyclically in (hole, j].
		if (j-home)&mask >= (j-hole)&mask {
			t.slots[hole] = t.slots[j]
			hole = j
		}
	}
	t.slots[hole] = slot[K, V]{}
	t.n--
}
