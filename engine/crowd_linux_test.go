package engine

import (
	"fmt"
	"testing"

	"github.com/sluice-server/sluice/sock"
)

// inPoller returns a condition that holds once every socket of scs
// waits in the runtime's poller.
func inPoller(scs []*sock.Conn) func() bool {
	return func() bool {
		for _, sc := range scs {
			if !sc.Polled() {
				return false
			}
		}
		return true
	}
}

// A connection that takes turns with many others (crowdEnter or more
// wakes of others between two of its own) parks again after every answer,
// so that the park set's reader answers the crowd in the order it spoke;
// once only a few take turns (fewer than crowdStay between two wakes) they
// wait in the runtime's poller again. The clients here speak one at a
// time, in turn, so the count each connection sees is exact. No idle
// notice comes and no wake is late (sparse), so only the crowd rule parks
// a connection that has been woken.
func TestCrowdedConnectionsParkAfterEveryAnswer(t *testing.T) {
	const n = crowdEnter + 8
	s, cs, server := parkingServer(t, n, nil)

	// The first round's wakes see fewer than n-1 others (the count starts
	// as each connection opens); from the second on each sees n-1.
	for round := range 4 {
		for i, ic := range cs {
			ic.get(t, fmt.Sprintf("/c%d/r%d", i, round))
		}
		if round >= 1 {
			waitForParked(t, s, n)
			for i, sc := range server {
				if sc.Polled() {
					t.Fatalf("round %d: connection %d waits in the runtime's poller, one of a crowd of %d", round, i, n)
				}
			}
		}
	}

	// Four of them go on, the others fall silent: after a wake that saw
	// the rest of the crowd, each of the four sees three others.
	few := cs[:4]
	for round := range 3 {
		for i, ic := range few {
			ic.get(t, fmt.Sprintf("/c%d/few%d", i, round))
		}
	}
	waitFor(t, "the four to wait in the runtime's poller", inPoller(server[:4]))
	waitForParked(t, s, n-4)
	for round := range 2 {
		for i, ic := range few {
			ic.get(t, fmt.Sprintf("/c%d/more%d", i, round))
		}
	}
	if !inPoller(server[:4])() {
		t.Error("a connection of four taking turns parked again")
	}
	for i, ic := range cs {
		ic.get(t, fmt.Sprintf("/c%d/last", i))
	}
	if got := s.OpenConns(); got != n {
		t.Errorf("%d connections open, want %d", got, n)
	}
}

// A few connections taking turns never count as a crowd: they wait for
// their requests in the runtime's poller, as busy connections do.
func TestFewConnectionsWaitInThePoller(t *testing.T) {
	const n = crowdStay
	parks := make(chan bool, 16*n) // whether a connection parking was crowded
	_, cs, server := parkingServer(t, n, func(c *conn) { parks <- c.crowded })
	var crowdedParks int
	for round := range 5 {
		for i, ic := range cs {
			ic.get(t, fmt.Sprintf("/c%d/r%d", i, round))
		}
	}
	waitFor(t, "every connection to wait in the runtime's poller", inPoller(server))
	for len(parks) > 0 {
		if <-parks {
			crowdedParks++
		}
	}
	if crowdedParks > 0 {
		t.Errorf("%d parks of a crowded connection among %d taking turns", crowdedParks, n)
	}
}
