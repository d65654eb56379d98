package sluicetest

import (
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
)

// stackNoise is what differs between goroutines stopped at the same
// place: a call's arguments, program-counter offsets, how long a
// goroutine has waited, and which goroutine made it.
var stackNoise = regexp.MustCompile(`(?m)\([^()\n]*\)$| \+0x[0-9a-f]+$|, \d+ minutes| in goroutine \d+$`)

// Goroutines returns the process's goroutines grouped by where they are
// stopped, the largest group first, each as a count and one stack: what
// a test that found the server stuck logs, so that a failure in CI says
// which goroutines wait where without a dump of thousands.
func Goroutines() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := map[string]int{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		state, stack, _ := strings.Cut(strings.TrimSpace(g), "\n")
		if i := strings.IndexByte(state, '['); i >= 0 {
			state = state[i:] // past "goroutine N "
		}
		key := stackNoise.ReplaceAllString(state, "") + "\n" + stackNoise.ReplaceAllString(stack, "")
		count[key]++
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := count[b] - count[a]; c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%d goroutine(s) %s\n\n", count[k], k)
	}
	return b.String()
}
