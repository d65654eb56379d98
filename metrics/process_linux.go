package metrics

import (
	"bytes"
	"math"
	"os"
	"strconv"
	"syscall"
)

// clockTicks is USER_HZ, the unit of /proc/self/stat's times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// parseStat sets p's CPU time, threads and memory from b, the content of
// /proc/PID/stat, whose pages are pageSize bytes; it leaves p alone if b
// is not such a line. The command name, field 2, is in parentheses and
// may hold anything, parentheses and spaces included: the fields
// counted are those after its last ')'.
func parseStat(p *Process, b []byte, pageSize int64) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3, the state
	if len(f) < 22 {           // up to field 24, rss
		return
	}
	num := func(field int) int64 {
		n, err := strconv.ParseInt(string(f[field-3]), 10, 64)
		if err != nil || n < 0 {
			return -1
		}
		return n
	}
	utime, stime, threads, vsize, rss := num(14), num(15), num(20), num(23), num(24)
	if utime < 0 || stime < 0 || threads < 0 || vsize < 0 || rss < 0 || pageSize <= 0 || rss > math.MaxInt64/pageSize {
		return
	}
	p.CPUSecs = (float64(utime) + float64(stime)) / clockTicks
	p.Threads, p.Virtual, p.Resident = threads, vsize, rss*pageSize
}

// readProcess reads /proc/self/stat and /proc/self/fd.
func readProcess() Process {
	p := Process{StartTime: float64(processStart.UnixNano()) / 1e9, CPUSecs: -1, Resident: -1, Virtual: -1, OpenFDs: -1, MaxFDs: -1, Threads: -1}
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		parseStat(&p, b, int64(os.Getpagesize()))
	}
	if d, err := os.Open("/proc/self/fd"); err == nil {
		names, _ := d.Readdirnames(-1)
		d.Close()
		p.OpenFDs = int64(len(names)) - 1 // the one just opened to read it
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil {
		p.MaxFDs = int64(rl.Cur)
	}
	return p
}
