package cache

import "unsafe"

// minNonTemporal is the shortest copy storeCopy makes around the
// processor's caches.
const minNonTemporal = 1 << 10

// storeCopy copies src into dst, which must be at least as long (it
// panics, having written nothing, if not), and returns len(src). The
// bytes go into the store's memory, which a miss fills long after it was
// last used: most of a copy of minNonTemporal bytes or more goes around
// the processor's caches (copyNonTemporal), so that it neither reads the
// lines it overwrites from memory first nor evicts the lines the
// request's own work is using. Most later readers of the bytes are hits,
// seconds later; the requests reading along a fetch read them from
// memory rather than from the cache.
func storeCopy(dst, src []byte) int {
	n := len(src)
	if len(dst) < n {
		panic("cache: storeCopy into a shorter slice")
	}
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
