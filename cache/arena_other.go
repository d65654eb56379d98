//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package cache

// mapRegion maps no memory here: the arena takes its chunks from the Go
// heap.
func mapRegion(int) []byte { return nil }

func unmapRegion([]byte) {}
