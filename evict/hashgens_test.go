package evict

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// checkOps applies ops to a hashGens and to a Go map alike and reports
// the first difference. Each op is a hash (few distinct ones, crowded
// into few home slots, 0 among them) and what to do with it.
func checkOps(t *testing.T, ops []uint16) {
	t.Helper()
	var g hashGens
	want := make(map[uint64]uint32)
	for n, op := range ops {
		// Hashes that share their low bits, and wrap around the table.
		h := uint64(op>>2&63) << 58 >> 58 * 0x10001
		if op>>2&63 == 63 {
			h = 0
		}
		if op>>2&63 == 62 {
			h = ^uint64(0)
		}
		gen := uint32(n)
		switch op & 3 {
		case 0, 1:
			g.put(h, gen)
			want[h] = gen
		case 2:
			i, ok := g.find(h)
			if _, wok := want[h]; ok != wok {
				t.Fatalf("op %d: find(%#x) = %v, want %v", n, h, ok, wok)
			}
			if ok {
				g.remove(i)
				delete(want, h)
			}
		case 3:
			i, ok := g.find(h)
			wg, wok := want[h]
			if ok != wok || ok && g.gen(i) != wg {
				t.Fatalf("op %d: find(%#x) = %v, %d; want %v, %d", n, h, ok, g.gen(i), wok, wg)
			}
		}
		n := g.n
		if g.zero {
			n++
		}
		if n != len(want) {
			t.Fatalf("op %d: %d hashes, want %d", n, n, len(want))
		}
	}
	for h, wg := range want {
		if i, ok := g.find(h); !ok || g.gen(i) != wg {
			t.Fatalf("at the end: find(%#x) = %v, %d; want true, %d", h, ok, g.gen(i), wg)
		}
	}
}

// hashGens finds, sets and removes as a Go map does, through growth,
// collisions and removals that move hashes back.
func TestHashGensAsMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		ops := make([]uint16, 2000)
		for i := range ops {
			ops[i] = uint16(r.Uint32())
		}
		checkOps(t, ops)
	}
}

func FuzzHashGens(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 250, 251, 252, 253, 254, 255})
	f.Fuzz(func(t *testing.T, b []byte) {
		ops := make([]uint16, len(b)/2)
		for i := range ops {
			ops[i] = binary.LittleEndian.Uint16(b[2*i:])
		}
		checkOps(t, ops)
	})
}
