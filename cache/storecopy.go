package cache

import "unsafe"

// minNonTemporal is the shortest copy storeCopy makes around the
// processor's caches.
const minNonTemporal = 1 << 10

// storeCopy copies src into dst, which is at least as long, as copy
// does, and returns len(src). The bytes go into the store's memory,
// which a miss fills long after it was last used: most of a copy of
// minNonTemporal bytes or more goes around the processor's caches
// (copyNonTemporal), so that it neither reads the lines it overwrites
// from memory first nor evicts the lines the request's own work is
// using. The next reader of the bytes is a hit, seconds later if ever.
func storeCopy(dst, src []byte) int {
	n := len(src)
	if n < minNonTemporal {
		return copy(dst, src)
	}
	// The head up to a 64-byte line and the tail past the last whole
	// one are copied as usual.
	head := int(-uintptr(unsafe.Pointer(unsafe.SliceData(dst))) & 63)
	copy(dst[:head], src[:head])
	body := (n - head) &^ 63
	copyNonTemporal(&dst[head], &src[head], body)
	copy(dst[head+body:n], src[head+body:])
	return n
}
