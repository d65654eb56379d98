package evict

import (
	"hash/maphash"
	"testing"
)

// mapGhost is the ghost's table as a Go map, to measure hashGens
// against.
type mapGhost map[uint64]uint32

// The ghost's work per eviction at the steady state of a Map of 64 Ki
// entries: a hash remembered, the oldest forgotten, and a new key looked
// up (a miss).
func BenchmarkGhostTable(b *testing.B) {
	const n = 1 << 16
	seed := maphash.MakeSeed()
	hashes := make([]uint64, 4*n)
	for i := range hashes {
		hashes[i] = maphash.Comparable(seed, i)
	}
	b.Run("hashGens", func(b *testing.B) {
		var t hashGens
		i := 0
		step := func() {
			t.put(hashes[i%len(hashes)], uint32(i))
			if j, ok := t.find(hashes[(i+len(hashes)-n)%len(hashes)]); ok {
				t.remove(j)
			}
			t.find(hashes[(i+n)%len(hashes)])
			i++
		}
		for range 2 * n {
			step()
		}
		b.ResetTimer()
		for b.Loop() {
			step()
		}
	})
	b.Run("map", func(b *testing.B) {
		t := make(mapGhost)
		i := 0
		step := func() {
			t[hashes[i%len(hashes)]] = uint32(i)
			delete(t, hashes[(i+len(hashes)-n)%len(hashes)])
			_ = t[hashes[(i+n)%len(hashes)]]
			i++
		}
		for range 2 * n {
			step()
		}
		b.ResetTimer()
		for b.Loop() {
			step()
		}
	})
}
