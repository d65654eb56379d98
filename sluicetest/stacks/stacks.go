// Package stacks reads the stacks of a test process's goroutines: all
// of them, or grouped by where they wait, for a test that found the
// server stuck to log. It imports nothing of Sluice's, so that any
// package's tests, package engine's own included, may use it.
package stacks

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

// All returns the stacks of all the process's goroutines, as
// runtime.Stack writes them: one per goroutine, a blank line between.
func All() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Summary returns the process's goroutines grouped by where they are
// stopped, the largest group first, each as a count and one stack: what
// a test that found the server stuck logs, so that a failure in CI says
// which goroutines wait where without a dump of thousands.
func Summary() string {
	count := map[string]int{}
	for _, g := range strings.Split(All(), "\n\n") {
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
