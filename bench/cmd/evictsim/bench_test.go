package main

import (
	"math/rand/v2"
	"strconv"
	"testing"

	lru2 "github.com/hashicorp/golang-lru/v2"
)

type hlru struct{ c *lru2.Cache[string, int64] }

func (h hlru) Get(k string) (int64, bool) { return h.c.Get(k) }
func (h hlru) Set(k string, v, size int64) bool {
	h.c.Add(k, v)
	return true
}

const benchKeys = 1 << 16

var keys = func() []string {
	ks := make([]string, benchKeys)
	for i := range ks {
		ks[i] = "https://example.com/obj/" + strconv.Itoa(i)
	}
	return ks
}()

func policies() []struct {
	name string
	mk   func() cache
} {
	// budget: half the keys at 1 KB each; hashicorp's LRU counts entries.
	const b = benchKeys / 2 * 1024
	return []struct {
		name string
		mk   func() cache
	}{
		{"S3-FIFO", func() cache { return newS3(b) }},
		{"LRU", func() cache { return newLRU(b) }},
		{"otter", func() cache { return newOtter(b) }},
		{"ristretto", func() cache { return newRistretto(b, false) }},
		{"hashicorp-lru", func() cache { c, _ := lru2.New[string, int64](benchKeys / 2); return hlru{c} }},
	}
}

// zipf-ish ranks: a precomputed trace so generation is outside the timer.
var trace = func() []int {
	r := rand.New(rand.NewPCG(3, 4))
	z := newZipf(benchKeys, 1.0, r)
	t := make([]int, 1<<20)
	for i := range t {
		t[i] = z.next()
	}
	return t
}()

func BenchmarkGetHit(b *testing.B) {
	for _, p := range policies() {
		b.Run(p.name, func(b *testing.B) {
			c := p.mk()
			for i := range 1024 {
				c.Set(keys[i], 1, 1024)
			}
			if s, ok := c.(interface{ sync() }); ok {
				s.sync()
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := rand.IntN(1024)
				for pb.Next() {
					c.Get(keys[i&1023])
					i++
				}
			})
		})
	}
}

func BenchmarkSetEvict(b *testing.B) {
	for _, p := range policies() {
		b.Run(p.name, func(b *testing.B) {
			c := p.mk()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := rand.IntN(benchKeys)
				for pb.Next() {
					c.Set(keys[i%benchKeys], 1, 1024)
					i++
				}
			})
		})
	}
}

// Zipf 1.0 trace over 2x the capacity: Get, Set on a miss.
func BenchmarkZipfGetSet(b *testing.B) {
	for _, p := range policies() {
		b.Run(p.name, func(b *testing.B) {
			c := p.mk()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := rand.IntN(len(trace))
				for pb.Next() {
					k := keys[trace[i&(len(trace)-1)]]
					if _, ok := c.Get(k); !ok {
						c.Set(k, 1, 1024)
					}
					i++
				}
			})
		})
	}
}
