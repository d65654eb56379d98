package upstream

import (
	"testing"
	"time"
)

// The active checks count the failed checks, and the passed ones, in a
// row: a passed check ends a streak of failures (two failures, a pass and
// two failures again do not reach a Fall of 3), and a failed one ends a
// streak of passes (a pass, a failure and a pass do not reach a Rise of
// 2).
func TestActiveChecksCountInARow(t *testing.T) {
	g := newGroup(t, []string{"http://127.0.0.1:1"}, Config{Health: Health{Path: "/healthz", Rise: 2, Fall: 3}})
	h := g.Hosts()[0]
	results := make(chan bool)    // the result of the next check
	checking := make(chan int, 1) // a check has started: the one before it is recorded
	changes := make(chan int, 10)
	var n int
	g.StartChecks(time.Millisecond, func(*Host[*fakeConn]) bool {
		n++
		checking <- n
		return <-results
	}, func(_ *Host[*fakeConn], change int) { changes <- change })
	<-checking
	// check gives the result of one check and waits for the next to start,
	// by which time the result is recorded; it returns the host's state.
	check := func(ok bool) bool {
		results <- ok
		<-checking
		return h.Up(Now())
	}
	t.Cleanup(func() {
		go func() {
			for range checking {
			}
		}()
		close(results) // every check from now on fails, until Close stops them
		g.Close()
		close(checking)
	})
	for i, c := range []struct {
		ok, up bool
		change int
	}{
		{false, true, 0},
		{false, true, 0},
		{true, true, 0}, // ends the streak of failures
		{false, true, 0},
		{false, true, 0},
		{false, false, -1}, // the third in a row
		{true, false, 0},
		{false, false, 0},
		{true, false, 0}, // not two in a row
		{true, true, +1},
	} {
		if up := check(c.ok); up != c.up {
			t.Fatalf("check %d (ok %v): up %v, want %v", i+1, c.ok, up, c.up)
		}
		var got int
		select {
		case got = <-changes:
		default:
		}
		if got != c.change {
			t.Fatalf("check %d (ok %v): change reported %+d, want %+d", i+1, c.ok, got, c.change)
		}
	}
}
