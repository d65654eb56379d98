package bench

import (
	"slices"
	"testing"
)

// Each round starts one server further along, every server takes every
// place once in len rounds, and the slice given is left as it was.
func TestInTurn(t *testing.T) {
	s := []string{"sluice", "nginx", "h2o"}
	want := [][]string{
		{"sluice", "nginx", "h2o"},
		{"nginx", "h2o", "sluice"},
		{"h2o", "sluice", "nginx"},
		{"sluice", "nginx", "h2o"},
	}
	for i, w := range want {
		if got := inTurn(s, i+1); !slices.Equal(got, w) {
			t.Errorf("round %d: %v, want %v", i+1, got, w)
		}
	}
	if !slices.Equal(s, []string{"sluice", "nginx", "h2o"}) {
		t.Errorf("inTurn changed its argument: %v", s)
	}
	if got := inTurn([]string{"one"}, 5); !slices.Equal(got, []string{"one"}) {
		t.Errorf("one server: %v", got)
	}
	if got := inTurn([]string(nil), 2); len(got) != 0 {
		t.Errorf("no server: %v", got)
	}
}
