package evict_test

import (
	"fmt"

	"github.com/sluice-server/sluice/evict"
)

// A Map of response bodies with a 10-byte budget: the third Set evicts
// the entry that was never read, and onEvict sees it.
func Example() {
	m := evict.New(10, func(k string, v []byte) {
		fmt.Printf("evicted %s (%d bytes)\n", k, len(v))
	})
	m.Set("/a", []byte("aaaa"), 4)
	m.Set("/b", []byte("bbbb"), 4)
	m.Get("/a") // read: /a is kept over /b
	m.Set("/c", []byte("cccc"), 4)

	_, okA := m.Get("/a")
	_, okB := m.Get("/b")
	fmt.Println(okA, okB, m.Len(), m.Size(), m.Evictions())
	// Output:
	// evicted /b (4 bytes)
	// true false 2 8 1
}
