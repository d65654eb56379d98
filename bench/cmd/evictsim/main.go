// Command evictsim compares eviction policies for package evict's byte
// budget: it replays Zipf traces (skews 0.6 to 1.2) and a scan-heavy
// trace over objects of log-uniform sizes (256 B to 256 KB) through a
// byte-budgeted LRU, evict.Map (S3-FIFO), otter's W-TinyLFU and
// ristretto's TinyLFU admission with sampled LFU eviction, and
// prints the object and byte hit ratios after a warm-up tenth of each
// trace. Its benchmarks (go test -bench) compare their costs.
//
//	go -C bench run ./cmd/evictsim
//	go -C bench test -run '^$' -bench . -benchtime 100000x -cpu 1,2 ./cmd/evictsim
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/maypok86/otter/v2"
	"github.com/sluice-server/sluice/evict"
)

type cache interface {
	Get(string) (int64, bool)
	Set(string, int64, int64) bool
}

type otterC struct{ c *otter.Cache[string, int64] }

func (o otterC) Get(k string) (int64, bool) { return o.c.GetIfPresent(k) }
func (o otterC) Set(k string, v, size int64) bool {
	o.c.Set(k, size)
	return true
}

func newOtter(b int64) cache {
	return otterC{otter.Must(&otter.Options[string, int64]{
		MaximumWeight: uint64(b),
		Weigher:       func(k string, v int64) uint32 { return uint32(v) },
	})}
}

// ristrettoC applies Sets asynchronously, as ristretto does, unless wait
// is set: then each Set waits to be applied, so that a replay's hit ratio
// is not lowered by Sets still in its buffers.
type ristrettoC struct {
	c    *ristretto.Cache[string, int64]
	wait bool
}

func (r ristrettoC) Get(k string) (int64, bool) { return r.c.Get(k) }
func (r ristrettoC) Set(k string, v, size int64) bool {
	ok := r.c.Set(k, v, size)
	if r.wait {
		r.c.Wait()
	}
	return ok
}

// sync waits for the Sets made so far to be applied.
func (r ristrettoC) sync() { r.c.Wait() }

func newRistretto(b int64, wait bool) cache {
	c, err := ristretto.NewCache(&ristretto.Config[string, int64]{
		NumCounters:        1_000_000, // 10 per entry of the largest trace
		MaxCost:            b,
		BufferItems:        64,
		IgnoreInternalCost: true,
	})
	if err != nil {
		panic(err)
	}
	return ristrettoC{c, wait}
}

func newS3(b int64) cache { return evict.New[string, int64](b, nil) }

// zipf draws ranks 0..n-1 with P(i) ~ 1/(i+1)^s, by inverse CDF.
type zipf struct {
	cdf []float64
	r   *rand.Rand
}

func newZipf(n int, s float64, r *rand.Rand) *zipf {
	z := &zipf{cdf: make([]float64, n), r: r}
	var t float64
	for i := range n {
		t += 1 / math.Pow(float64(i+1), s)
		z.cdf[i] = t
	}
	for i := range z.cdf {
		z.cdf[i] /= t
	}
	return z
}

func (z *zipf) next() int {
	u := z.r.Float64()
	return sort.SearchFloat64s(z.cdf, u)
}

type req struct {
	key  string
	size int64
}

func main() {
	nKeys := flag.Int("keys", 100000, "distinct keys of the zipf part")
	nReq := flag.Int("req", 2000000, "requests per trace")
	flag.Parse()
	r := rand.New(rand.NewPCG(1, 2))
	keys := make([]string, *nKeys)
	sizes := make([]int64, *nKeys)
	var total int64
	perm := r.Perm(*nKeys) // popularity rank -> key id, so size and rank are independent
	for i := range keys {
		keys[i] = "https://example.com/obj/" + strconv.Itoa(perm[i])
		// log-uniform sizes, 256 B .. 256 KB
		sizes[i] = int64(math.Exp(math.Log(256) + r.Float64()*math.Log(1024)))
		total += sizes[i]
	}
	type trace struct {
		name string
		reqs []req
	}
	var traces []trace
	for _, s := range []float64{0.6, 0.8, 1.0, 1.2} {
		z := newZipf(*nKeys, s, r)
		reqs := make([]req, *nReq)
		for i := range reqs {
			k := z.next()
			reqs[i] = req{keys[k], sizes[k]}
		}
		traces = append(traces, trace{fmt.Sprintf("zipf %.1f", s), reqs})
	}
	{
		// scan-heavy: zipf 0.9 interleaved with scans of one-time keys:
		// 60,000 zipf requests then a scan of 40,000 keys never seen again.
		z := newZipf(*nKeys, 0.9, r)
		reqs := make([]req, 0, *nReq)
		scan := 0
		for len(reqs) < *nReq {
			for range 60000 {
				k := z.next()
				reqs = append(reqs, req{keys[k], sizes[k]})
			}
			for range 40000 {
				scan++
				sz := int64(math.Exp(math.Log(256) + r.Float64()*math.Log(1024)))
				reqs = append(reqs, req{"https://example.com/scan/" + strconv.Itoa(scan), sz})
			}
		}
		traces = append(traces, trace{"scan 40% + zipf 0.9", reqs})
	}
	policies := []struct {
		name string
		mk   func(int64) cache
	}{
		{"LRU", func(b int64) cache { return newLRU(b) }},
		{"S3-FIFO", newS3},
		{"W-TinyLFU (otter)", newOtter},
		{"TinyLFU (ristretto)", func(b int64) cache { return newRistretto(b, true) }},
	}
	fmt.Printf("%d keys, %d MB in all, %d requests per trace; object hit %% / byte hit %%\n", *nKeys, total>>20, *nReq)
	for _, frac := range []float64{0.01, 0.1} {
		budget := int64(float64(total) * frac)
		fmt.Printf("\nbudget %.0f%% of the zipf keys' bytes (%d MB)\n", frac*100, budget>>20)
		fmt.Printf("%-22s", "trace")
		for _, p := range policies {
			fmt.Printf(" | %-19s", p.name)
		}
		fmt.Println()
		for _, t := range traces {
			fmt.Printf("%-22s", t.name)
			for _, p := range policies {
				c := p.mk(budget)
				var hits, bhits, bytes int
				warm := len(t.reqs) / 10
				for i, q := range t.reqs {
					_, ok := c.Get(q.key)
					if !ok {
						c.Set(q.key, q.size, q.size)
					}
					if i < warm {
						continue
					}
					bytes += int(q.size)
					if ok {
						hits++
						bhits += int(q.size)
					}
				}
				n := len(t.reqs) - warm
				fmt.Printf(" | %6.2f / %6.2f     ", 100*float64(hits)/float64(n), 100*float64(bhits)/float64(bytes))
			}
			fmt.Println()
		}
	}
}
