//go:build linux

package supervisor

import (
	"bytes"
	"os"
	"strconv"
)

// residentBytes returns the resident set size of process pid, from
// /proc/PID/statm (its second field, in pages), or 0 when it cannot be
// read (the process is gone). The master reads it for each worker when
// it sends the status view, so that what a draining worker holds is
// counted on the status page.
func residentBytes(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	fields := bytes.Fields(b)
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(string(fields[1]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}
