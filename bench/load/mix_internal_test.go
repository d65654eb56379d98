package load

import (
	"math/rand/v2"
	"testing"
)

// Drawing a mixed request allocates nothing once the worker's buffers
// have grown.
func TestAppendRequestAllocatesNothing(t *testing.T) {
	r := &run{}
	tail := []byte(" HTTP/1.1\r\nHost: x\r\n\r\n")
	r.mix = []mixTarget{{head: []byte("GET /a"), tail: tail, upTo: 1}, {head: []byte("GET /d/"), tail: tail, ids: 10000, upTo: 3, class: 1}}
	r.weights = 3
	w := &worker{r: r, rng: rand.New(rand.NewPCG(1, 0))}
	step := func() {
		w.buf, w.batch = w.buf[:0], w.batch[:0]
		for range 16 {
			w.appendRequest()
		}
	}
	step()
	if n := testing.AllocsPerRun(100, step); n != 0 {
		t.Errorf("%v allocations per batch of 16, want 0", n)
	}
}
