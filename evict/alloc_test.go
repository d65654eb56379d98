//go:build !race

package evict

import (
	"strconv"
	"testing"
)

// A Set of a new key into a full Map, which evicts one, allocates
// nothing at the steady state: the entry it lets go of is the next
// one's.
func TestSetEvictAllocs(t *testing.T) {
	const n = 1 << 12
	keys := make([]string, 4*n)
	for i := range keys {
		keys[i] = "https://example.com/obj/" + strconv.Itoa(i)
	}
	m := New[string, *int](n*100, func(string, *int) {})
	v := new(int)
	i := 0
	set := func() {
		m.Set(keys[i%len(keys)], v, 100)
		i++
	}
	for range 2 * len(keys) {
		set()
	}
	allocs := testing.AllocsPerRun(10000, set)
	t.Logf("%v allocations per Set", allocs)
	if allocs > 0.01 {
		t.Errorf("a Set that evicts allocates %v, want 0", allocs)
	}
}
