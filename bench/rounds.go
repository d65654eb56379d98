package bench

// inTurn returns s in the order round (counted from 1) measures it: each
// round starts one place further along, so that no server is always the
// first (or the last) of its round. The first run of a round tends to be
// the fastest (bench/builds.sh found the build measured first ahead a
// few per cent, whichever it was), and a fixed order gives that to the
// same server every round. s is not modified.
func inTurn[T any](s []T, round int) []T {
	if len(s) < 2 {
		return s
	}
	k := (round - 1) % len(s)
	out := make([]T, 0, len(s))
	return append(append(out, s[k:]...), s[:k]...)
}
