package evict

import (
	"hash/maphash"
	"math/rand/v2"
	"testing"
)

// The table agrees with a Go map over random inserts and removes,
// through its growth and with hashes that collide in their low bits.
func TestTableAgreesWithMap(t *testing.T) {
	for _, collide := range []bool{false, true} {
		seed := maphash.MakeSeed()
		hash := func(k int) uint64 {
			h := maphash.Comparable(seed, k)
			if collide {
				h &^= 0xff // many keys share a home slot
			}
			return h
		}
		var tb table[int, int]
		want := map[int]*entry[int, int]{}
		r := rand.New(rand.NewPCG(1, 2))
		for range 20000 {
			k := r.IntN(3000)
			if e, ok := want[k]; ok {
				if got := tb.find(k, e.hash); got != e {
					t.Fatalf("find(%d) = %p, want %p", k, got, e)
				}
				tb.remove(e)
				delete(want, k)
			} else {
				e := &entry[int, int]{key: k, hash: hash(k)}
				tb.insert(e)
				want[k] = e
			}
			if tb.n != len(want) {
				t.Fatalf("n = %d, want %d", tb.n, len(want))
			}
		}
		for k := range 3000 {
			e, ok := want[k]
			got := tb.find(k, hash(k))
			if ok && got != e || !ok && got != nil {
				t.Fatalf("find(%d) = %p, want %p (present %v)", k, got, e, ok)
			}
		}
		n := 0
		for _, s := range tb.slots {
			if s.e != nil {
				n++
				if s.h != s.e.hash {
					t.Fatalf("slot of key %d holds hash %x, the entry's is %x", s.e.key, s.h, s.e.hash)
				}
			}
		}
		if n != len(want) {
			t.Fatalf("%d slots hold entries, want %d", n, len(want))
		}
	}
}
