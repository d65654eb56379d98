//go:build linux

package supervisor

import (
	"slices"
	"syscall"
)

// drainMaxMemory is the bound on draining workers' memory that
// drain_max_memory sets (configured, in bytes), or, when it is 0, a
// quarter of the machine's memory: room for several generations of
// workers holding tunnels, while the serving workers, the page cache and
// the rest of the machine keep three quarters whatever reloads do. It
// is 1 GiB when the machine's memory cannot be read.
func drainMaxMemory(configured int64) uint64 {
	if configured > 0 {
		return uint64(configured)
	}
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil || si.Totalram == 0 {
		return 1 << 30
	}
	return uint64(si.Totalram) * uint64(si.Unit) / 4
}

// boundDrains ends the oldest drains while the workers draining hold
// more resident memory, together, than the current generation's
// drain_max_memory: such a worker is told to stop, as at a shutdown, so
// its connections get the grace period. It runs at every health check.
func (m *Master) boundDrains() {
	if m.cur == nil {
		return
	}
	type held struct {
		w   *worker
		rss uint64
	}
	var draining []held
	var total uint64
	for _, w := range m.old {
		if w.draining && w.cmd != nil {
			rss := residentBytes(w.cmd.Process.Pid)
			draining = append(draining, held{w, rss})
			total += rss
		}
	}
	if total <= m.cur.drainMax {
		return
	}
	slices.SortFunc(draining, func(a, b held) int { return a.w.id - b.w.id }) // the oldest first
	for _, d := range draining {
		if total <= m.cur.drainMax {
			break
		}
		m.log.Warn("draining workers hold more memory than drain_max_memory; ending the oldest drain",
			"worker", d.w.id, "pid", d.w.cmd.Process.Pid, "connections", d.w.stats.Open,
			"worker_bytes", d.rss, "draining_bytes", total, "drain_max_memory", m.cur.drainMax)
		m.endDrain(d.w)
		total -= d.rss
	}
}
