//go:build !race

package upstream

import "testing"

// A request's attempts on a host with an idle connection allocate
// nothing: Begin, Next, the pool's Get and Keep, Start and Done.
func TestAttemptsAllocateNothing(t *testing.T) {
	g := newGroup(t, []string{"http://127.0.0.1:71", "http://127.0.0.1:72"}, Config{MaxConns: 4, MaxIdleConns: 4, Queue: 4})
	for _, h := range g.Hosts() {
		if _, _, err := h.Get(Now(), false); err != nil {
			t.Fatal(err)
		}
		h.Keep(&fakeConn{id: h.Index()}, Now())
	}
	allocs := testing.AllocsPerRun(1000, func() {
		a := g.Begin(true, 1)
		h, c := next(&a)
		if h == nil || c == nil {
			t.Fatal("no host")
		}
		if !h.HandOff(c) {
			h.Keep(c, Now())
		}
		a.Done()
	})
	if allocs != 0 {
		t.Errorf("a request's attempts allocate %v times, want 0", allocs)
	}
}
