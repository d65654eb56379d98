//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package cache

import (
	"syscall"
	"unsafe"
)

// mapRegion reserves n bytes of anonymous memory outside the Go heap, or
// returns nil. Pages take memory when first written. Only on 64-bit
// platforms: a 32-bit address space has no room to reserve stores in.
func mapRegion(n int) []byte {
	if unsafe.Sizeof(uintptr(0)) < 8 || n <= 0 {
		return nil
	}
	r, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
	if err != nil {
		return nil
	}
	advise(r)
	return r
}

// unmapRegion gives a region of mapRegion back to the system.
func unmapRegion(r []byte) { syscall.Munmap(r) }
