package components

import (
	"testing"

	"github.com/sluice-server/sluice/cache"
)

// Caches of one name are told apart on the status page by a suffix no
// cache's own name can have.
func TestCacheStatusNames(t *testing.T) {
	var s Caches
	for _, name := range []string{"pages", "pages", "pages#2", "pages"} {
		x, err := cache.New(cache.Options{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		s.Add(x)
	}
	var got []string
	for _, c := range cacheStatus(&s) {
		got = append(got, c.Name)
	}
	want := []string{"pages", "pages (2)", "pages#2", "pages (3)"}
	if len(got) != len(want) {
		t.Fatalf("names %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("names %q, want %q", got, want)
		}
	}
}
