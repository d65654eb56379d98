package files

import (
	"strconv"
	"testing"
)

// The cache stays within MaxEntries, and its count of held bytes follows
// the entries it keeps.
func TestCacheBounds(t *testing.T) {
	c := newCache(Options{MaxEntries: 64}.withDefaults())
	for i := range 1000 {
		e := &entry{key: "/" + strconv.Itoa(i), body: make([]byte, 10)}
		c.put(nil, e)
		if len(c.m) > 64 {
			t.Fatalf("after %d puts: %d entries, want <= 64", i+1, len(c.m))
		}
	}
	var held int64
	for _, e := range c.m {
		held += int64(len(e.body))
	}
	if held != c.held.Load() {
		t.Errorf("held = %d, entries hold %d", c.held.Load(), held)
	}
	// Replacing an entry swaps its bytes; a stale replacement is dropped.
	old := c.m["/999"]
	if old == nil {
		t.Fatal("the newest entry was evicted")
	}
	c.put(old, &entry{key: "/999", body: make([]byte, 100)})
	c.put(old, &entry{key: "/999", body: make([]byte, 1000)}) // old is no longer current
	if got := len(c.getString("/999").body); got != 100 {
		t.Errorf("entry holds %d bytes, want 100", got)
	}
	if c.held.Load() != held+90 {
		t.Errorf("held = %d, want %d", c.held.Load(), held+90)
	}
}
