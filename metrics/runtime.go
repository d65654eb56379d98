package metrics

import (
	"runtime"
	"runtime/metrics"
	"time"
)

// Runtime is the Go runtime's state, read with package runtime/metrics
// (the source client_golang's Go collector reads too).
type Runtime struct {
	Version     string  `json:"version"`      // runtime.Version()
	Goroutines  uint64  `json:"goroutines"`   // live goroutines
	GOMAXPROCS  uint64  `json:"gomaxprocs"`   // the current GOMAXPROCS
	HeapBytes   uint64  `json:"heap_bytes"`   // bytes of live and unswept heap objects
	TotalBytes  uint64  `json:"total_bytes"`  // bytes mapped by the runtime (all memory classes)
	AllocsTotal uint64  `json:"allocs_total"` // heap objects allocated since the start
	GCCycles    uint64  `json:"gc_cycles"`    // completed GC cycles
	GCGoal      uint64  `json:"gc_goal"`      // the heap size the GC aims at
	GCCPUSecs   float64 `json:"gc_cpu"`       // CPU seconds spent in GC, estimated
}

var runtimeSamples = []string{
	"/sched/goroutines:goroutines",
	"/sched/gomaxprocs:threads",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/total:bytes",
	"/gc/heap/allocs:objects",
	"/gc/cycles/total:gc-cycles",
	"/gc/heap/goal:bytes",
	"/cpu/classes/gc/total:cpu-seconds",
}

// readRuntime reads the runtime's state now.
func readRuntime() Runtime {
	s := make([]metrics.Sample, len(runtimeSamples))
	for i, name := range runtimeSamples {
		s[i].Name = name
	}
	metrics.Read(s)
	u := func(i int) uint64 {
		if s[i].Value.Kind() == metrics.KindUint64 {
			return s[i].Value.Uint64()
		}
		return 0
	}
	rt := Runtime{
		Version: runtime.Version(), Goroutines: u(0), GOMAXPROCS: u(1), HeapBytes: u(2),
		TotalBytes: u(3), AllocsTotal: u(4), GCCycles: u(5), GCGoal: u(6),
	}
	if s[7].Value.Kind() == metrics.KindFloat64 {
		rt.GCCPUSecs = s[7].Value.Float64()
	}
	return rt
}

// Process is the operating system's view of the process. Fields the
// platform does not give are -1 (Linux gives all of them).
type Process struct {
	StartTime float64 `json:"start"`    // seconds since the epoch
	CPUSecs   float64 `json:"cpu"`      // user and system CPU seconds
	Resident  int64   `json:"resident"` // resident memory, bytes
	Virtual   int64   `json:"virtual"`  // virtual memory, bytes
	OpenFDs   int64   `json:"fds"`      // open file descriptors
	MaxFDs    int64   `json:"max_fds"`  // the soft limit on descriptors
	Threads   int64   `json:"threads"`  // operating-system threads
}

// processStart is when the package was initialised: the process's start,
// to a few milliseconds.
var processStart = time.Now()
