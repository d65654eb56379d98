//go:build !linux

package metrics

// readProcess gives the start time alone off Linux.
func readProcess() Process {
	return Process{StartTime: float64(processStart.UnixNano()) / 1e9, CPUSecs: -1, Resident: -1, Virtual: -1, OpenFDs: -1, MaxFDs: -1, Threads: -1}
}
