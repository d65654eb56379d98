package cache

import (
	"math/bits"
	"runtime"
	"sync"
	"unsafe"
)

// Body memory: the chunks of the bodies a memory store holds come from,
// and go back to, the Cache's arena, so that a miss reuses the memory an
// evicted body let go of instead of allocating anew (which first-touches
// fresh pages, and paces the garbage collector by the bytes stored). A
// body counts who holds it (body.ref) and gives its chunks back when the
// last lets go: the store, the fetch writing it, and each reader.
//
// Chunks come in size classes of 4, 8, 16 and 32 KiB. Where the
// platform allows, the arena is one anonymous mapping of the store's
// budget and an eighth (arenaSlack) reserved at New, outside the Go heap:
// the collector neither scans nor counts it, so it sets no pace, and the
// process's memory is the budget plus a bounded slack, not twice the
// budget. The mapping is cut into units of 32 KiB, carved as they are
// first needed and never given back to the system (a full store holds
// its budget anyway). A unit is whole (free, or out as a 32 KiB chunk)
// or split into the pieces of one smaller class, its free pieces a
// bitmap; a class's units with free pieces are a set, and a unit whose
// pieces are all free again is whole and free again. So a change in the
// mix of body sizes finds the memory smaller bodies let go of: nothing
// stays cut into pieces nobody asks for. Used up (bodies being fetched
// and evicted ones still being read on top of a full store), a chunk is
// taken from the Go heap, which the collector frees when it comes back.
// Elsewhere (no mapping) every chunk is a Go heap allocation, recycled
// through free lists that, with the chunks out, hold at most the budget
// and an eighth.

// Chunk size classes.
const (
	minClassShift = 12 // 4 KiB
	numClasses    = 4  // 4, 8, 16, 32 KiB
	maxClass      = 1 << (minClassShift + numClasses - 1)
)

// chunkSize is the largest chunk, the size a body of unknown length
// grows by once it is past its first few.
const chunkSize = maxClass

// arenaSlack is the part of the budget the arena reserves on top of it,
// for bodies being fetched and evicted bodies still being read.
const arenaSlack = 8

// arenaHeap makes New's arenas take chunks from the Go heap even where
// memory can be mapped, and arenaSmallPages makes them not ask for huge
// pages (for tests and measurements).
var arenaHeap, arenaSmallPages = false, false

// arenaPoison makes put fill every chunk given back with 0xEE, so that a
// chunk given back while a reader still sends it shows (for tests).
var arenaPoison = false

// unitShift is the size of the mapping's units, the largest class's.
const unitShift = minClassShift + numClasses - 1

// unit is the state of one unit of the mapping.
type unit struct {
	class int8  // -1: whole; else the class of its pieces
	free  uint8 // the free pieces, a bit each, when split
	at    int32 // its place in arena.partial[class] while it has free pieces
}

// arena is a Cache's body memory. Safe for concurrent use.
type arena struct {
	mu sync.Mutex

	// The mapping, when there is one (nil on the heap): base is its
	// address, units its units' states, carved how many of them were
	// handed out once; wholes are the carved units that are whole and
	// free, partial[k] those split into class k that have a free piece.
	// The slices have room for every unit from the start: get and put
	// allocate nothing.
	region  []byte
	base    uintptr
	units   []unit
	carved  int
	wholes  []int32
	partial [numClasses - 1][]int32

	// free holds recycled chunks of the Go heap, by class, when there is
	// no mapping; freeBytes is what they add up to, and with out at most
	// limit.
	free      [numClasses][][]byte
	freeBytes int64
	limit     int64

	reused  int64 // chunks handed out of memory the arena had already
	out     int64 // bytes of chunks handed out (get) and not given back (put)
	spilled int64 // chunks taken from the Go heap while the mapping was used up
}

// newArena returns an arena for a store of budget bytes.
func newArena(budget int64) *arena {
	limit := budget + budget/arenaSlack
	a := &arena{limit: limit}
	if n := (limit + maxClass - 1) >> unitShift; !arenaHeap && n<<unitShift == int64(int(n<<unitShift)) && n == int64(int32(n)) {
		if r := mapRegion(int(n << unitShift)); r != nil {
			a.region = r
			a.base = uintptr(unsafe.Pointer(unsafe.SliceData(r)))
			a.units = make([]unit, n)
			a.wholes = make([]int32, 0, n)
			for k := range a.partial {
				a.partial[k] = make([]int32, 0, n)
			}
			// Unmapped once nothing can reach the arena: every body that
			// holds chunks of it points to it, and a reader holds its body.
			runtime.AddCleanup(a, unmapRegion, r)
		}
	}
	return a
}

// classOf returns the class of a chunk of capacity n, or -1 when n is no
// class's size.
func classOf(n int) int {
	if n < 1<<minClassShift || n > maxClass || n&(n-1) != 0 {
		return -1
	}
	return bits.TrailingZeros(uint(n)) - minClassShift
}

// get returns an empty chunk of class k.
func (a *arena) get(k int) []byte {
	size := 1 << (minClassShift + k)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.out += int64(size)
	if a.region != nil {
		if c := a.getMapped(k); c != nil {
			return c
		}
		a.spilled++
		return make([]byte, 0, size)
	}
	if n := len(a.free[k]); n > 0 {
		c := a.free[k][n-1]
		a.free[k][n-1] = nil
		a.free[k] = a.free[k][:n-1]
		a.freeBytes -= int64(size)
		a.reused++
		return c
	}
	// Free chunks of other classes over the limit are the collector's:
	// kept, they would stay idle while this class allocates anew.
	for j := numClasses - 1; j >= 0 && a.out+a.freeBytes > a.limit; j-- {
		for n := len(a.free[j]); n > 0 && a.out+a.freeBytes > a.limit; n-- {
			a.freeBytes -= int64(cap(a.free[j][n-1]))
			a.free[j][n-1] = nil
			a.free[j] = a.free[j][:n-1]
		}
	}
	return make([]byte, 0, size)
}

// getMapped returns an empty chunk of class k from the mapping, or nil
// when it is used up, under a.mu.
func (a *arena) getMapped(k int) []byte {
	size := 1 << (minClassShift + k)
	if k < numClasses-1 {
		if n := len(a.partial[k]); n > 0 {
			// A piece of a unit already split into this class.
			i := a.partial[k][n-1]
			u := &a.units[i]
			p := bits.TrailingZeros8(u.free)
			if u.free &^= 1 << p; u.free == 0 {
				a.partial[k] = a.partial[k][:n-1]
			}
			a.reused++
			off := int(i)<<unitShift + p*size
			return a.region[off : off : off+size]
		}
	}
	var i int32
	if n := len(a.wholes); n > 0 {
		i = a.wholes[n-1]
		a.wholes = a.wholes[:n-1]
		a.reused++
	} else if a.carved < len(a.units) {
		i = int32(a.carved)
		a.carved++
	} else {
		return nil
	}
	off := int(i) << unitShift
	u := &a.units[i]
	u.class = -1
	if k < numClasses-1 {
		// Split: piece 0 goes out, the others are free.
		pieces := maxClass / size
		u.class = int8(k)
		u.free = uint8(1<<pieces-1) &^ 1
		u.at = int32(len(a.partial[k]))
		a.partial[k] = append(a.partial[k], i)
	}
	return a.region[off : off : off+size]
}

// owns reports whether c is a chunk of the mapping.
func (a *arena) owns(c []byte) bool {
	if a.region == nil || cap(c) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(c[:1])))
	return p >= a.base && p < a.base+uintptr(len(a.region))
}

// put gives back the chunk c, which get handed out and which nobody
// reads or writes any more. One from the Go heap where the arena maps
// its memory is left to the collector.
func (a *arena) put(c []byte) {
	k := classOf(cap(c))
	if k < 0 {
		return
	}
	if arenaPoison {
		full := c[:cap(c)]
		for i := range full {
			full[i] = 0xEE
		}
	}
	mapped := a.owns(c)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.out -= int64(cap(c))
	switch {
	case mapped:
		a.putMapped(c, k)
	case a.region == nil && a.out+a.freeBytes+int64(cap(c)) <= a.limit:
		a.free[k] = append(a.free[k], c[:0])
		a.freeBytes += int64(cap(c))
	}
}

// putMapped gives back c, a chunk of class k of the mapping, under a.mu.
func (a *arena) putMapped(c []byte, k int) {
	off := int(uintptr(unsafe.Pointer(unsafe.SliceData(c[:1]))) - a.base)
	i := int32(off >> unitShift)
	u := &a.units[i]
	if u.class < 0 {
		a.wholes = append(a.wholes, i)
		return
	}
	if int(u.class) != k {
		panic("cache: a chunk given back to the arena as another class")
	}
	bit := uint8(1) << ((off & (maxClass - 1)) >> (minClassShift + k))
	if u.free&bit != 0 {
		panic("cache: a chunk given back to the arena twice")
	}
	if u.free == 0 {
		u.at = int32(len(a.partial[k]))
		a.partial[k] = append(a.partial[k], i)
	}
	u.free |= bit
	if pieces := maxClass >> (minClassShift + k); u.free == uint8(1<<pieces-1) {
		// Every piece is free: the unit is whole again.
		a.dropPartial(k, u)
		u.class, u.free = -1, 0
		a.wholes = append(a.wholes, i)
	}
}

// dropPartial removes the unit u from the set of class k's units with
// free pieces, under a.mu.
func (a *arena) dropPartial(k int, u *unit) {
	set := a.partial[k]
	last := set[len(set)-1]
	set[u.at] = last
	a.units[last].at = u.at
	a.partial[k] = set[:len(set)-1]
}

// stats returns the bytes carved from the mapping (0 on the heap), the
// bytes free for reuse (of the mapping: carved and not out), how many
// chunks were handed out again, and the bytes handed out and not given
// back.
func (a *arena) stats() (mapped, free, reused, out int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.region != nil {
		mapped = int64(a.carved) << unitShift
		free = int64(len(a.wholes)) << unitShift
		for k, set := range a.partial {
			for _, i := range set {
				free += int64(bits.OnesCount8(a.units[i].free)) << (minClassShift + k)
			}
		}
		return mapped, free, a.reused, a.out
	}
	return 0, a.freeBytes, a.reused, a.out
}
