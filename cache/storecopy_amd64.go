//go:build amd64 && !race

package cache

// copyNonTemporal copies n bytes, a multiple of 64, from src to dst,
// which is 64-byte aligned, with non-temporal stores (SSE2's MOVNTDQ,
// which every amd64 processor has), fenced (SFENCE) before it returns:
// the lines go to memory without being read first or kept in the caches.
//
//go:noescape
func copyNonTemporal(dst, src *byte, n int)
