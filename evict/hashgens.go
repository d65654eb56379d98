package evict

// hashGens maps 64-bit hashes to generations, for the ghost: an open
// addressing table with linear probing, at most half full, in two
// arrays of its own (no pointers, nothing for the collector to scan),
// which costs a probe or two where a Go map costs a hash of the key and
// a group lookup. Hashes are maphash values, uniform already: a slot is
// a hash's low bits. The hash 0 marks an empty slot, so it is kept
// apart (zero, zeroGen).
type hashGens struct {
	hs      []uint64 // 0: empty
	gens    []uint32
	n       int // slots in use
	zero    bool
	zeroGen uint32
}

// zeroSlot is what find returns for the hash 0.
const zeroSlot = -1

// find returns the slot of h and whether h is there.
func (t *hashGens) find(h uint64) (int, bool) {
	if h == 0 {
		return zeroSlot, t.zero
	}
	if len(t.hs) == 0 {
		return 0, false
	}
	mask := uint64(len(t.hs) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch t.hs[i] {
		case h:
			return int(i), true
		case 0:
			return int(i), false
		}
	}
}

// gen returns the generation in slot i, which holds a hash.
func (t *hashGens) gen(i int) uint32 {
	if i == zeroSlot {
		return t.zeroGen
	}
	return t.gens[i]
}

// put sets h's generation.
func (t *hashGens) put(h uint64, gen uint32) {
	if h == 0 {
		t.zero, t.zeroGen = true, gen
		return
	}
	if 2*(t.n+1) > len(t.hs) {
		t.grow()
	}
	i, ok := t.find(h)
	if !ok {
		t.hs[i] = h
		t.n++
	}
	t.gens[i] = gen
}

// grow doubles the table (16 slots at first) and places every hash anew.
func (t *hashGens) grow() {
	hs, gens := t.hs, t.gens
	size := max(16, 2*len(hs))
	t.hs, t.gens = make([]uint64, size), make([]uint32, size)
	mask := uint64(size - 1)
	for j, h := range hs {
		if h == 0 {
			continue
		}
		i := h & mask
		for t.hs[i] != 0 {
			i = (i + 1) & mask
		}
		t.hs[i], t.gens[i] = h, gens[j]
	}
}

// remove empties slot i, which holds a hash, and moves back the hashes
// after it that would no longer be found past the hole (deletion
// without tombstones).
func (t *hashGens) remove(i int) {
	if i == zeroSlot {
		t.zero, t.zeroGen = false, 0
		return
	}
	mask := len(t.hs) - 1
	hole := i
	for j := (i + 1) & mask; t.hs[j] != 0; j = (j + 1) & mask {
		home := int(t.hs[j]) & mask
		// The hash at j may fill the hole unless its home slot lies
		// cyclically in (hole, j].
		if (j-home)&mask >= (j-hole)&mask {
			t.hs[hole], t.gens[hole] = t.hs[j], t.gens[j]
			hole = j
		}
	}
	t.hs[hole], t.gens[hole] = 0, 0
	t.n--
}
