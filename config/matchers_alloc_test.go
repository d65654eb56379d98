//go:build !race

package config

import (
	"testing"

	"github.com/sluice-server/sluice/engine"
)

// A query condition on a query with nothing to decode costs no
// allocation per request (one with escapes decodes them).
func TestQueryMatcherAllocs(t *testing.T) {
	r := &engine.Request{Query: []byte("page=2&lang=en&debug[]=1")}
	for _, m := range []*queryMatcher{
		{"lang", valueTest{exact: "en"}},
		{"debug", valueTest{any: true}},
		{"missing", valueTest{absent: true}},
	} {
		if !m.Match(r) {
			t.Fatalf("%s does not hold for %q", m, r.Query)
		}
		if n := testing.AllocsPerRun(100, func() { m.Match(r) }); n != 0 {
			t.Errorf("%s: %v allocations per request, want 0", m, n)
		}
	}
}
