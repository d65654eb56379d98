package evict

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// audit records every onEvict call by value id, to check that each
// stored value leaves the Map at most once, and by the right door.
type audit struct {
	mu    sync.Mutex
	calls map[int]int // value id -> onEvict calls
	keyOK bool        // every call's key matched its value's
}

func newAudit() *audit { return &audit{calls: make(map[int]int), keyOK: true} }

type val struct {
	key string
	id  int
}

func (a *audit) onEvict(k string, v val) {
	a.mu.Lock()
	a.calls[v.id]++
	if k != v.key {
		a.keyOK = false
	}
	a.mu.Unlock()
}

// contents walks m with Range and returns its entries and their sizes'
// sum, taking each value's size from sizes.
func contents(m *Map[string, val], sizes map[int]int64) (map[string]val, int64) {
	got := make(map[string]val)
	var sum int64
	m.Range(func(k string, v val) bool {
		got[k] = v
		sum += sizes[v.id]
		return true
	})
	return got, sum
}

func TestSetGetDelete(t *testing.T) {
	a := newAudit()
	m := New[string, val](100, a.onEvict)
	if !m.Set("a", val{"a", 1}, 10) || !m.Set("b", val{"b", 2}, 20) {
		t.Fatal("Set within the budget returned false")
	}
	if v, ok := m.Get("a"); !ok || v.id != 1 {
		t.Errorf("Get(a) = %v, %v; want 1, true", v, ok)
	}
	if _, ok := m.Get("c"); ok {
		t.Error("Get(c) found a value never set")
	}
	if m.Len() != 2 || m.Size() != 30 {
		t.Errorf("Len, Size = %d, %d; want 2, 30", m.Len(), m.Size())
	}
	// Replacing calls onEvict with the old value and recounts the size.
	m.Set("a", val{"a", 3}, 15)
	if v, _ := m.Get("a"); v.id != 3 || m.Size() != 35 || m.Len() != 2 || a.calls[1] != 1 {
		t.Errorf("after replacing a: Get = %v, Size %d, Len %d, onEvict(old) %d times; want 3, 35, 2, 1", v, m.Size(), m.Len(), a.calls[1])
	}
	// Delete returns the value and does not call onEvict.
	if v, ok := m.Delete("b"); !ok || v.id != 2 {
		t.Errorf("Delete(b) = %v, %v; want 2, true", v, ok)
	}
	if _, ok := m.Delete("b"); ok {
		t.Error("Delete(b) twice found it twice")
	}
	if a.calls[2] != 0 || m.Size() != 15 || m.Len() != 1 {
		t.Errorf("after Delete: onEvict(b) %d times, Size %d, Len %d; want 0, 15, 1", a.calls[2], m.Size(), m.Len())
	}
	// Too big for the budget: false, and the old value under the key is
	// gone (handed to onEvict), not left to be served.
	if m.Set("a", val{"a", 4}, 101) {
		t.Error("Set over the budget returned true")
	}
	if _, ok := m.Get("a"); ok || a.calls[3] != 1 || m.Size() != 0 || m.Len() != 0 {
		t.Errorf("after an oversize Set: found %v, onEvict(old) %d times, Size %d, Len %d", ok, a.calls[3], m.Size(), m.Len())
	}
	if m.Evictions() != 0 {
		t.Errorf("Evictions = %d after replacements and deletes only, want 0", m.Evictions())
	}
	// Exactly the budget fits; a negative size counts as 0.
	if !m.Set("full", val{"full", 5}, 100) || !m.Set("neg", val{"neg", 6}, -7) || m.Size() != 100 || m.Len() != 2 {
		t.Errorf("Set of the whole budget and of a negative size: Size %d, Len %d; want 100, 2", m.Size(), m.Len())
	}
	if !a.keyOK {
		t.Error("onEvict got a key that was not its value's")
	}
}

// Sets of random sizes over random keys: after each, Size is at most the
// budget and equals what Range finds; every value set is in the Map,
// or was handed to onEvict exactly once.
func TestBudgetAndOnEvictOnce(t *testing.T) {
	const budget = 10_000
	a := newAudit()
	m := New[string, val](budget, a.onEvict)
	r := rand.New(rand.NewPCG(1, 1))
	sizes := make(map[int]int64)
	for id := range 20_000 {
		k := "k" + strconv.Itoa(int(r.ExpFloat64()*300)) // reuse keys: replacements too
		size := r.Int64N(budget / 5)
		sizes[id] = size
		m.Set(k, val{k, id}, size)
		if m.Size() > budget {
			t.Fatalf("Size %d > budget %d after Set %d", m.Size(), budget, id)
		}
		if r.IntN(10) == 0 {
			m.Get(k)
		}
	}
	got, sum := contents(m, sizes)
	if sum != m.Size() || len(got) != m.Len() {
		t.Errorf("Range finds %d entries of %d bytes; Len, Size = %d, %d", len(got), sum, m.Len(), m.Size())
	}
	present := make(map[int]bool)
	for _, v := range got {
		present[v.id] = true
	}
	for id := range sizes {
		n := a.calls[id]
		if present[id] && n != 0 || !present[id] && n != 1 {
			t.Fatalf("value %d: in the Map %v, onEvict called %d times", id, present[id], n)
		}
	}
	if m.Evictions() == 0 {
		t.Error("no evictions counted")
	}
	if !a.keyOK {
		t.Error("onEvict got a key that was not its value's")
	}
}

// Many goroutines Set, Get and Delete at once (run it with -race): the
// budget holds at every moment a watcher looks, and each value leaves
// once.
func TestConcurrentBudget(t *testing.T) {
	const budget, workers, perWorker = 50_000, 8, 5_000
	a := newAudit()
	m := New[string, val](budget, a.onEvict)
	var (
		wg      sync.WaitGroup
		smu     sync.Mutex
		sizes   = make(map[int]int64)
		deleted = make(map[int]int)
		done    = make(chan struct{})
		over    = make(chan int64, 1)
	)
	go func() {
		for {
			select {
			case <-done:
				close(over)
				return
			default:
			}
			if s := m.Size(); s > budget {
				over <- s
				close(over)
				return
			}
			runtime.Gosched()
		}
	}()
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 2))
			for i := range perWorker {
				id := w*perWorker + i
				k := "k" + strconv.Itoa(r.IntN(2_000))
				size := r.Int64N(2_000)
				smu.Lock()
				sizes[id] = size
				smu.Unlock()
				m.Set(k, val{k, id}, size)
				switch r.IntN(8) {
				case 0:
					if v, ok := m.Delete(k); ok {
						smu.Lock()
						deleted[v.id]++
						smu.Unlock()
					}
				case 1, 2, 3:
					m.Get(k)
				}
			}
		})
	}
	wg.Wait()
	close(done)
	if s, ok := <-over; ok {
		t.Fatalf("Size %d > budget %d while Sets ran", s, budget)
	}
	got, sum := contents(m, sizes)
	if sum != m.Size() || len(got) != m.Len() || m.Size() > budget {
		t.Errorf("Range finds %d entries of %d bytes; Len, Size = %d, %d", len(got), sum, m.Len(), m.Size())
	}
	present := make(map[int]bool)
	for _, v := range got {
		present[v.id] = true
	}
	for id := range sizes {
		n := a.calls[id] + deleted[id]
		if present[id] {
			n++
		}
		if n != 1 {
			t.Fatalf("value %d: present %v, onEvict %d, deleted %d: left the Map %d times", id, present[id], a.calls[id], deleted[id], n)
		}
	}
	if !a.keyOK {
		t.Error("onEvict got a key that was not its value's")
	}
}

// onEvict runs with no lock held: it may use the Map.
func TestOnEvictMayUseMap(t *testing.T) {
	var m *Map[int, int]
	var seen []int
	m = New(3, func(k, v int) {
		m.Get(k)
		m.Set(-k-1, v, 0) // a tombstone of no size
		seen = append(seen, k)
	})
	for k := range 5 {
		m.Set(k, k, 1)
	}
	if len(seen) != 2 || m.Size() != 3 {
		t.Errorf("evicted %v, Size %d; want 2 evicted, Size 3", seen, m.Size())
	}
	for _, k := range seen {
		if v, ok := m.Get(-k - 1); !ok || v != k {
			t.Errorf("the tombstone onEvict set for %d: %v, %v", k, v, ok)
		}
	}
}

func TestRange(t *testing.T) {
	m := New[string, int](1<<20, nil)
	for i := range 100 {
		m.Set(fmt.Sprintf("/a/%d", i), i, 1)
		m.Set(fmt.Sprintf("/b/%d", i), i, 1)
	}
	// A purge by prefix: Delete inside fn.
	n := 0
	m.Range(func(k string, v int) bool {
		if strings.HasPrefix(k, "/a/") {
			if _, ok := m.Delete(k); !ok {
				t.Errorf("Delete(%q) inside Range found nothing", k)
			}
			n++
		}
		return true
	})
	if n != 100 || m.Len() != 100 || m.Size() != 100 {
		t.Errorf("purged %d; Len, Size = %d, %d; want 100, 100, 100", n, m.Len(), m.Size())
	}
	// An entry deleted before its turn is not visited; a value replaced
	// is visited with its new value.
	seen := make(map[string]int)
	first := ""
	m.Range(func(k string, v int) bool {
		if first == "" {
			first = k
			for i := range 100 {
				if kk := fmt.Sprintf("/b/%d", i); kk != k {
					if i%2 == 0 {
						m.Delete(kk)
					} else {
						m.Set(kk, -1, 1)
					}
				}
			}
		}
		seen[k] = v
		return true
	})
	for k, v := range seen {
		i, _ := strconv.Atoi(strings.TrimPrefix(k, "/b/"))
		switch {
		case k == first:
		case i%2 == 0:
			t.Errorf("Range visited %s after it was deleted", k)
		case v != -1:
			t.Errorf("Range visited %s = %d, not its new value -1", k, v)
		}
	}
	if want := 50 + int(first[len(first)-1]-'0'+1)%2; len(seen) != want {
		t.Errorf("Range visited %d entries, want %d (the odd ones and %s)", len(seen), want, first)
	}
	// Stopping early.
	n = 0
	m.Range(func(string, int) bool { n++; return n < 3 })
	if n != 3 {
		t.Errorf("Range went on after false: %d calls, want 3", n)
	}
}

// The policy keeps what is read over a scan of keys read once: with an
// LRU or a FIFO the scan would flush the hot set.
func TestScanResistance(t *testing.T) {
	const budget = 1000
	m := New[int, int](budget, nil)
	hot := budget / 2
	for k := range hot {
		m.Set(k, k, 1)
	}
	for range 3 {
		for k := range hot {
			m.Get(k)
		}
	}
	for k := range 10 * budget { // a scan of keys never read
		m.Set(1_000_000+k, k, 1)
		if k%100 == 0 {
			for h := range hot {
				m.Get(h)
			}
		}
	}
	kept := 0
	for k := range hot {
		if _, ok := m.Get(k); ok {
			kept++
		}
	}
	if kept < hot*9/10 {
		t.Errorf("a scan of %d keys read once left %d of %d hot keys", 10*budget, kept, hot)
	}
}

// A key evicted unread from the small queue and set again soon after is
// remembered by the ghost and goes to the main queue.
func TestGhostAdmitsToMain(t *testing.T) {
	m := New[int, int](100, nil)
	for k := range 200 {
		m.Set(k, k, 1)
	}
	if _, ok := m.Get(0); ok {
		t.Fatal("key 0 still present after 200 one-time keys")
	}
	m.Set(0, 0, 1)
	m.mu.RLock()
	q := m.items.find(0, maphash.Comparable(m.seed, 0)).queue
	m.mu.RUnlock()
	if q != inMain {
		t.Errorf("key 0 set again went to queue %d, want the main queue", q)
	}
	m.Set(1000, 1000, 1)
	m.mu.RLock()
	q = m.items.find(1000, maphash.Comparable(m.seed, 1000)).queue
	m.mu.RUnlock()
	if q != inSmall {
		t.Errorf("a new key went to queue %d, want the small queue", q)
	}
}

// An entry too big for the small queue's share is still kept after it
// is set (it is evicted later, not by its own Set).
func TestBigEntryKept(t *testing.T) {
	m := New[int, int](100, nil)
	for k := range 90 {
		m.Set(k, k, 1)
	}
	m.Set(-1, -1, 60)
	if _, ok := m.Get(-1); !ok || m.Size() > 100 {
		t.Errorf("a 60-byte entry in a 100-byte Map: kept %v, Size %d", ok, m.Size())
	}
	// Replacing an entry by a bigger one keeps it too.
	m.Set(5, 5, 1)
	m.Set(5, 50, 90)
	if v, ok := m.Get(5); !ok || v != 50 || m.Size() > 100 {
		t.Errorf("an entry grown to 90 bytes: %v, %v, Size %d", v, ok, m.Size())
	}
}

// A churn of a million distinct keys: Size stays within the budget and
// the heap afterwards holds the Map, not the million keys.
func TestChurnMillionKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("a million Sets")
	}
	const budget = 1 << 20 // 1 MB of 100-byte entries: about 10,000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := New[string, []byte](budget, nil)
	for i := range 1_000_000 {
		k := "https://example.com/churn/" + strconv.Itoa(i)
		m.Set(k, nil, 100)
		if i%3 == 0 {
			m.Get(k)
		}
		if m.Size() > budget {
			t.Fatalf("Size %d > budget after %d keys", m.Size(), i)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("after 1,000,000 keys: Len %d, Size %d, Evictions %d, heap grown by %d bytes (%d per entry)",
		m.Len(), m.Size(), m.Evictions(), grown, grown/int64(max(m.Len(), 1)))
	if m.Len() != budget/100 || m.Evictions() != 1_000_000-uint64(m.Len()) {
		t.Errorf("Len %d, Evictions %d; want %d, %d", m.Len(), m.Evictions(), budget/100, 1_000_000-budget/100)
	}
	// About 10,000 entries of a key, an entry and a map slot, and a ghost
	// of as many hashes: a few MB at most, where a million keys would be
	// over 100 MB.
	if grown > 8<<20 {
		t.Errorf("heap grew by %d bytes for a Map of %d entries", grown, m.Len())
	}
	runtime.KeepAlive(m)
}

// Entries let go of are reused by later Sets, but never while a Range
// holds them: a walk under a churn of evictions visits each key at most
// once, with its own value, and every entry present throughout.
func TestRangeUnderChurn(t *testing.T) {
	const n = 256
	m := New[string, val](n, nil)
	key := func(i int) string { return "/k/" + strconv.Itoa(i) }
	for i := range n {
		m.Set(key(i), val{key(i), i}, 1)
	}
	next := n
	seen, deleted := make(map[string]bool), make(map[string]bool)
	m.Range(func(k string, v val) bool {
		if seen[k] {
			t.Errorf("Range visited %s twice", k)
		}
		seen[k] = true
		if v.key != k {
			t.Errorf("Range visited %s with the value of %s", k, v.key)
		}
		if deleted[k] {
			t.Errorf("Range visited %s, deleted before its turn", k)
		}
		if len(seen) <= 8 {
			// k set anew after a key not visited yet is deleted: an entry
			// reused now could be the deleted key's, which the walk holds.
			m.Delete(k)
			for i := range n {
				if u := key(i); !seen[u] && !deleted[u] {
					if _, ok := m.Delete(u); ok {
						deleted[u] = true
						break
					}
				}
			}
			m.Set(k, val{k, -1}, 1)
		}
		for range 4 { // new keys, each evicting one
			m.Set(key(next), val{key(next), next}, 1)
			next++
		}
		return true
	})
	if len(seen) == 0 || len(seen) > n {
		t.Errorf("Range visited %d keys of %d", len(seen), n)
	}
	// Reuse resumes once the walk is over: Sets still store what they set.
	for i := next; i < next+2*n; i++ {
		m.Set(key(i), val{key(i), i}, 1)
		if v, ok := m.Get(key(i)); !ok || v.id != i {
			t.Fatalf("Get(%s) = %v, %v after its Set", key(i), v, ok)
		}
	}
	if m.Len() != n || m.Size() != n {
		t.Errorf("Len, Size = %d, %d; want %d, %d", m.Len(), m.Size(), n, n)
	}
}
