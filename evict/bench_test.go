package evict

import (
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"
)

const benchKeys = 1 << 16

var benchKeyNames = func() []string {
	ks := make([]string, benchKeys)
	for i := range ks {
		ks[i] = "https://example.com/obj/" + strconv.Itoa(i)
	}
	return ks
}()

// A Get that hits, from every P: a read lock and an atomic counter.
func BenchmarkGetHit(b *testing.B) {
	m := New[string, int](1<<30, nil)
	for i := range 1024 {
		m.Set(benchKeyNames[i], i, 1024)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(1024)
		for pb.Next() {
			m.Get(benchKeyNames[i&1023])
			i++
		}
	})
}

// Sets of new keys into a full Map: each evicts one.
func BenchmarkSetEvict(b *testing.B) {
	m := New[string, int](benchKeys/2*1024, nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(benchKeys)
		for pb.Next() {
			m.Set(benchKeyNames[i%benchKeys], i, 1024)
			i++
		}
	})
}

// A Zipf (s = 1.0) trace over twice the keys the budget holds: Get, and
// Set on a miss.
func BenchmarkZipfGetSet(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	cdf := make([]float64, benchKeys)
	var t float64
	for i := range cdf {
		t += 1 / math.Pow(float64(i+1), 1.0)
		cdf[i] = t
	}
	trace := make([]int, 1<<20)
	for i := range trace {
		trace[i] = sort.SearchFloat64s(cdf, r.Float64()*t)
	}
	m := New[string, int](benchKeys/2*1024, nil)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(len(trace))
		for pb.Next() {
			k := benchKeyNames[trace[i&(len(trace)-1)]]
			if _, ok := m.Get(k); !ok {
				m.Set(k, i, 1024)
			}
			i++
		}
	})
}
