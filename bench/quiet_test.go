package bench

import (
	"os/exec"
	"testing"
	"time"
)

// TestOthersCPU: the CPU of other processes is the machine's busy time
// less this run's, per second of the run, in cores.
func TestOthersCPU(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b cpuTicks
		wall time.Duration
		want float64
	}{
		{"only this run", cpuTicks{1000, 50}, cpuTicks{1400, 450}, 2 * time.Second, 0},
		{"another process at half a core", cpuTicks{1000, 50}, cpuTicks{1500, 450}, 2 * time.Second, 0.5},
		{"this run's own count ahead of the machine's", cpuTicks{1000, 50}, cpuTicks{1390, 450}, 2 * time.Second, 0},
		{"no time", cpuTicks{1000, 50}, cpuTicks{1000, 50}, 0, -1},
	} {
		if got := othersCPU(c.a, c.b, c.wall, userHZ); got != c.want {
			t.Errorf("%s: othersCPU = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestReadCPUTicksCountsReapedChildren: a child's CPU time joins this
// process tree's once the child has been waited for, and the machine's
// busy time grows by at least as much.
func TestReadCPUTicksCountsReapedChildren(t *testing.T) {
	a, ok := readCPUTicks()
	if !ok {
		t.Skip("no /proc/stat or /proc/self/stat here")
	}
	// A child that spins for about half a second of CPU.
	cmd := exec.Command("sh", "-c", `end=$(( $(date +%s%N) + 500000000 )); while [ "$(date +%s%N)" -lt "$end" ]; do :; done`)
	if err := cmd.Run(); err != nil {
		t.Skip("sh cannot run here:", err)
	}
	b, ok := readCPUTicks()
	if !ok {
		t.Fatal("readCPUTicks failed the second time")
	}
	// The child's own CPU time, as the kernel reported it when it was
	// reaped: on a loaded machine half a second of wall time may be
	// much less CPU, so the count to find is the child's, not 0.5 s.
	ps := cmd.ProcessState
	child := uint64((ps.UserTime() + ps.SystemTime()) * userHZ / time.Second)
	if child < 5 {
		t.Skipf("the child got only %d ticks of CPU: the machine is too busy to tell", child)
	}
	// Each is counted to a tick: a few ticks of slack.
	if grew := b.tree - a.tree; grew+3 < child {
		t.Errorf("the tree's CPU grew by %d ticks over a child that ran for %d", grew, child)
	}
	// The two are sampled apart, each to a tick: a few ticks of slack.
	if b.busy-a.busy+5 < b.tree-a.tree {
		t.Errorf("the machine's busy time grew by %d ticks, well under the tree's %d", b.busy-a.busy, b.tree-a.tree)
	}
}
