package cache

import (
	"net/http"
	"testing"
)

func TestSmoke(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	o.set(respond(&o, 200, "hello", "Cache-Control: max-age=60"))
	r1, b1 := h.get(t, "/a")
	r2, b2 := h.get(t, "/a")
	t.Logf("%v %q %v", r1.Header, b1, r1.StatusCode)
	t.Logf("%v %q", r2.Header, b2)
	if o.n.Load() != 1 || b1 != b2 || r2.StatusCode != http.StatusOK {
		t.Fatalf("origin saw %d", o.n.Load())
	}
}
