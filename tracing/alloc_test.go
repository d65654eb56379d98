//go:build !race

package tracing

import (
	"testing"

	"github.com/sluice-server/sluice/pipe"
)

// Tracing off costs a component nothing but a nil check: the hooks
// allocate nothing (and read no clock) for a request that is not traced.
func TestHooksOffAllocs(t *testing.T) {
	hooks := pipe.Pipe(func(c *pipe.Conn) bool {
		sp := StartUpstream(c, "proxy", "u")
		sp.Attempt("u", nil)
		sp.End(200, nil)
		StartCache(c).EndCache("MISS")
		return true
	})
	h := pipe.Handler(hooks)
	req := newReq()
	w := &discard{}
	if allocs := testing.AllocsPerRun(1000, func() { h.Serve(w, req) }); allocs != 0 {
		t.Errorf("%v allocations per untraced request, want 0", allocs)
	}
}
