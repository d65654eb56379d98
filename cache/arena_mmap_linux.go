package cache

import "syscall"

// mapNoReserve: a reservation of the whole budget is not counted against
// the system's commit limit until it is written.
const mapNoReserve = syscall.MAP_NORESERVE

// advise asks for transparent huge pages on the region (unless
// arenaSmallPages), where the system gives them on request: fewer TLB
// misses as bodies are copied in and sent.
func advise(r []byte) {
	if !arenaSmallPages {
		syscall.Madvise(r, syscall.MADV_HUGEPAGE)
	}
}
