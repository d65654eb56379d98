//go:build !race

package conditional_test

import (
	"testing"
	"time"

	"github.com/sluice-server/sluice/conditional"
	"github.com/sluice-server/sluice/engine"
)

// Evaluating a request's preconditions and If-Range allocates nothing
// when each field is sent once: the file server's hot path.
func TestPreconditionAllocs(t *testing.T) {
	const lm = "Wed, 21 Oct 2015 07:28:00 GMT"
	v := &conditional.Validators{ETag: `"v1"`, LastModified: lm, ModTime: time.Date(2015, 10, 21, 7, 28, 0, 0, time.UTC)}
	for _, fields := range [][]engine.Field{
		{{Name: []byte("If-None-Match"), Value: []byte(`"x", W/"v1"`)}},
		{{Name: []byte("If-Modified-Since"), Value: []byte(lm)}},
		{{Name: []byte("If-Modified-Since"), Value: []byte("Tue, 20 Oct 2015 07:28:00 GMT")}},
		{{Name: []byte("If-Match"), Value: []byte(`"v1"`)}, {Name: []byte("If-Range"), Value: []byte(lm)}},
	} {
		r := &engine.Request{Method: []byte("GET"), Fields: fields}
		allocs := testing.AllocsPerRun(100, func() {
			conditional.Precondition(r, v)
			conditional.RangeApplies(r, v)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations, want 0", fields[0].Name, allocs)
		}
	}
}
