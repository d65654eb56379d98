//go:build !amd64 || race

package cache

import "unsafe"

// copyNonTemporal copies n bytes from src to dst with copy: other
// processors have no store of the amd64 kind here, and the race
// detector sees copy's writes (the assembly's it would not).
func copyNonTemporal(dst, src *byte, n int) {
	copy(unsafe.Slice(dst, n), unsafe.Slice(src, n))
}
