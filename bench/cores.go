package bench

import (
	"os"
	"slices"
	"strconv"
	"strings"
)

// coreTimes is the time a set of CPUs spent, in clock ticks, from their
// lines of /proc/stat: idle (idle and iowait), stolen by the hypervisor,
// and in all.
type coreTimes struct {
	idle, steal, total uint64
}

// cpuList parses a taskset CPU list ("1", "0,2", "0-3,6") into CPU
// numbers; nil if it is malformed.
func cpuList(s string) []int {
	var cpus []int
	for _, f := range splitList(s) {
		lo, hi, isRange := strings.Cut(f, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// readCoreTimes sums the /proc/stat times of cpus.
func readCoreTimes(cpus []int) (coreTimes, bool) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return coreTimes{}, false
	}
	return parseCoreTimes(string(stat), cpus)
}

// parseCoreTimes is readCoreTimes on the text of /proc/stat. It fails if
// a CPU of cpus has no line, or cpus is empty.
func parseCoreTimes(stat string, cpus []int) (coreTimes, bool) {
	var t coreTimes
	found := 0
	for line := range strings.SplitSeq(stat, "\n") {
		f := strings.Fields(line)
		// cpuN user nice system idle iowait irq softirq steal guest
		// guest_nice; guest time is already counted in user.
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil || !slices.Contains(cpus, n) {
			continue
		}
		var v [8]uint64
		for i := range v {
			if v[i], err = strconv.ParseUint(f[1+i], 10, 64); err != nil {
				return coreTimes{}, false
			}
			t.total += v[i]
		}
		t.idle += v[3] + v[4]
		t.steal += v[7]
		found++
	}
	return t, found > 0 && found == len(cpus)
}

// busyPercent is the share, in percent, of the time between a and b that
// the CPUs ran and were not idle: any process's work and the kernel's
// (softirq included), over the time not stolen by the hypervisor. It is
// -1 if no time passed.
func busyPercent(a, b coreTimes) float64 {
	if b.total < a.total || b.idle < a.idle || b.steal < a.steal {
		return -1
	}
	ran := (b.total - a.total) - (b.steal - a.steal)
	if ran == 0 {
		return -1
	}
	return 100 * float64(ran-(b.idle-a.idle)) / float64(ran)
}
