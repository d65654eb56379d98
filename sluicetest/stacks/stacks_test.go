package stacks

import (
	"strings"
	"testing"
)

// Summary puts goroutines stopped at one place in one group, and
// keeps the names of the functions and methods they are stopped in.
func TestSummary(t *testing.T) {
	const n = 25
	stop := make(chan struct{})
	started := make(chan struct{}, n)
	for range n {
		go parkedForSummaryTest(started, stop)
	}
	for range n {
		<-started
	}
	defer close(stop)
	sum := Summary()
	var found bool
	for _, group := range strings.Split(sum, "\n\n") {
		if strings.Contains(group, "parkedForSummaryTest") {
			if !strings.HasPrefix(group, "25 goroutine(s) [chan receive]") {
				t.Errorf("group of the test's goroutines: %q\nin:\n%s", group, sum)
			}
			found = true
		}
	}
	if !strings.Contains(sum, "testing.(*T).Run\n") {
		t.Errorf("a method's name is lost (want testing.(*T).Run) in:\n%s", sum)
	}
	if !found {
		t.Errorf("no group of the test's goroutines in:\n%s", sum)
	}
}

func parkedForSummaryTest(started chan<- struct{}, stop <-chan struct{}) {
	started <- struct{}{}
	<-stop
}
