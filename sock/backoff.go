package sock

import "time"

// Bounds of the accept back-off.
const (
	acceptDelayMin = 5 * time.Millisecond
	acceptDelayMax = time.Second
	// acceptCalm is how long accepts must go without an error before the
	// back-off is forgotten, and how often at most a failure is logged.
	acceptCalm = time.Second
)

// AcceptBackoff paces an accept loop through temporary errors, such as
// running out of file descriptors: the delay doubles from 5ms up to a
// second, and is forgotten only once accepts have gone a second without
// an error, so that a loop that keeps hitting the limit (each success
// using up the descriptor it freed) does not spin. A warning is due at
// most once a second; the errors in between are counted for it. Times are
// Unix nanoseconds (a server passes its coarse clock). The zero value is
// ready: no back-off. Not safe for concurrent use: each accept loop has
// its own.
type AcceptBackoff struct {
	delay      time.Duration // 0 while accepts succeed
	lastErr    int64         // when the last error happened
	lastLog    int64         // when a warning was last due; 0 for never
	suppressed int           // errors since that warning
}

// Failed records an error at now. It returns how long to wait before
// accepting again, and whether a warning is due; if so, suppressed counts
// the errors since the last warning, which went unlogged.
func (b *AcceptBackoff) Failed(now int64) (wait time.Duration, warn bool, suppressed int) {
	b.delay = min(max(2*b.delay, acceptDelayMin), acceptDelayMax)
	b.lastErr = now
	if b.lastLog != 0 && now-b.lastLog < int64(acceptCalm) {
		b.suppressed++
		return b.delay, false, 0
	}
	suppressed, b.suppressed, b.lastLog = b.suppressed, 0, now
	return b.delay, true, suppressed
}

// Succeeded records an accept at now. Once a second has passed since the
// last error, the back-off is forgotten and, if errors went unlogged since
// the last warning, it returns their count for a last line.
func (b *AcceptBackoff) Succeeded(now int64) (unlogged int) {
	if b.delay == 0 || now-b.lastErr < int64(acceptCalm) {
		return 0
	}
	unlogged = b.suppressed
	*b = AcceptBackoff{}
	return unlogged
}
