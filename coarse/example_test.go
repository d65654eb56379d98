package coarse_test

import (
	"fmt"
	"time"

	"github.com/sluice-server/sluice/coarse"
)

// A request that starts watching its client only when its upstream is
// slow: the timer is stopped, at no cost, when the answer comes first.
func ExampleTimer() {
	var slow coarse.Timer
	watched := make(chan struct{})
	slow.Start(500*time.Millisecond, func() { close(watched) })

	answer := make(chan string, 1)
	answer <- "200 OK" // the upstream answered at once
	select {
	case a := <-answer:
		if slow.Stop() {
			fmt.Println(a, "before the watch began")
		}
	case <-watched:
		fmt.Println("slow: watching the client")
	}
	// Output: 200 OK before the watch began
}
