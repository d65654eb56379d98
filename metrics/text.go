package metrics

import (
	"bytes"
	"strconv"
	"strings"
)

// WriteText writes snaps in the Prometheus text exposition format 0.0.4
// to b: each family once, with its HELP and TYPE, then its series of
// every snapshot in order, labelled worker="ID" for a snapshot with a
// Worker. Label values are escaped as the format requires.
func WriteText(b *bytes.Buffer, snaps []Snapshot) {
	var routes bool
	for i := range snaps {
		routes = routes || len(snaps[i].Routes) > 0
	}
	if routes {
		family(b, "sluice_route_responses_total", "counter", "Responses of a route, by status class.")
		for i := range snaps {
			s := &snaps[i]
			for _, r := range s.Routes {
				for c, n := range r.Classes {
					series(b, "sluice_route_responses_total", s.Worker, "route", r.Route, "class", ClassName(c))
					b.WriteString(strconv.FormatUint(n, 10))
					b.WriteByte('\n')
				}
			}
		}
		family(b, "sluice_route_request_duration_seconds", "histogram", "Time from a route taking a request to the end of its response (101 tunnels left out).")
		for i := range snaps {
			for _, r := range snaps[i].Routes {
				histogram(b, "sluice_route_request_duration_seconds", snaps[i].Worker, r.Duration, "route", r.Route)
			}
		}
	}
	writeUpstreams(b, snaps)
	writeSets(b, snaps)
	writeRuntime(b, snaps)
	writeProcess(b, snaps)
}

func writeUpstreams(b *bytes.Buffer, snaps []Snapshot) {
	var has bool
	for i := range snaps {
		has = has || len(snaps[i].Upstreams) > 0
	}
	if !has {
		return
	}
	family(b, "sluice_upstream_responses_total", "counter", "Responses of an upstream host, by status class.")
	for i := range snaps {
		for _, u := range snaps[i].Upstreams {
			for c, n := range u.Classes {
				series(b, "sluice_upstream_responses_total", snaps[i].Worker, "upstream", u.Upstream, "class", ClassName(c))
				b.WriteString(strconv.FormatUint(n, 10))
				b.WriteByte('\n')
			}
		}
	}
	family(b, "sluice_upstream_failures_total", "counter", "Attempts on an upstream host that got no response (refused, timed out, malformed).")
	for i := range snaps {
		for _, u := range snaps[i].Upstreams {
			series(b, "sluice_upstream_failures_total", snaps[i].Worker, "upstream", u.Upstream)
			b.WriteString(strconv.FormatUint(u.Failed, 10))
			b.WriteByte('\n')
		}
	}
	family(b, "sluice_upstream_header_duration_seconds", "histogram", "Time from an attempt's start to the upstream's response head.")
	for i := range snaps {
		for _, u := range snaps[i].Upstreams {
			histogram(b, "sluice_upstream_header_duration_seconds", snaps[i].Worker, u.Head, "upstream", u.Upstream)
		}
	}
	family(b, "sluice_upstream_response_duration_seconds", "histogram", "Time from an attempt's start to the end of the response passed on (tunnels left out).")
	for i := range snaps {
		for _, u := range snaps[i].Upstreams {
			histogram(b, "sluice_upstream_response_duration_seconds", snaps[i].Worker, u.Total, "upstream", u.Upstream)
		}
	}
}

func writeRuntime(b *bytes.Buffer, snaps []Snapshot) {
	family(b, "go_info", "gauge", "The Go version the binary was built with, value 1.")
	for i := range snaps {
		series(b, "go_info", snaps[i].Worker, "version", snaps[i].Runtime.Version)
		b.WriteString("1\n")
	}
	gauges := []struct {
		name, typ, help string
		value           func(r *Runtime) float64
	}{
		{"go_goroutines", "gauge", "Live goroutines.", func(r *Runtime) float64 { return float64(r.Goroutines) }},
		{"go_sched_gomaxprocs_threads", "gauge", "GOMAXPROCS: the threads that may run Go code at once.", func(r *Runtime) float64 { return float64(r.GOMAXPROCS) }},
		{"go_memory_classes_heap_objects_bytes", "gauge", "Bytes of live and not yet swept heap objects.", func(r *Runtime) float64 { return float64(r.HeapBytes) }},
		{"go_memory_classes_total_bytes", "gauge", "Bytes of memory the Go runtime mapped.", func(r *Runtime) float64 { return float64(r.TotalBytes) }},
		{"go_gc_heap_goal_bytes", "gauge", "The heap size the garbage collector aims at.", func(r *Runtime) float64 { return float64(r.GCGoal) }},
		{"go_gc_heap_allocs_objects_total", "counter", "Heap objects allocated.", func(r *Runtime) float64 { return float64(r.AllocsTotal) }},
		{"go_gc_cycles_total_gc_cycles_total", "counter", "Completed garbage collection cycles.", func(r *Runtime) float64 { return float64(r.GCCycles) }},
		{"go_cpu_classes_gc_total_cpu_seconds_total", "counter", "CPU seconds spent in garbage collection, estimated.", func(r *Runtime) float64 { return r.GCCPUSecs }},
	}
	for _, g := range gauges {
		family(b, g.name, g.typ, g.help)
		for i := range snaps {
			series(b, g.name, snaps[i].Worker)
			b.WriteString(formatFloat(g.value(&snaps[i].Runtime)))
			b.WriteByte('\n')
		}
	}
}

func writeProcess(b *bytes.Buffer, snaps []Snapshot) {
	gauges := []struct {
		name, typ, help string
		value           func(p *Process) float64
	}{
		{"process_start_time_seconds", "gauge", "When the process started, in seconds since the epoch.", func(p *Process) float64 { return p.StartTime }},
		{"process_cpu_seconds_total", "counter", "User and system CPU time, in seconds.", func(p *Process) float64 { return p.CPUSecs }},
		{"process_resident_memory_bytes", "gauge", "Resident memory, in bytes.", func(p *Process) float64 { return float64(p.Resident) }},
		{"process_virtual_memory_bytes", "gauge", "Virtual memory, in bytes.", func(p *Process) float64 { return float64(p.Virtual) }},
		{"process_open_fds", "gauge", "Open file descriptors.", func(p *Process) float64 { return float64(p.OpenFDs) }},
		{"process_max_fds", "gauge", "The limit on open file descriptors.", func(p *Process) float64 { return float64(p.MaxFDs) }},
		{"process_threads", "gauge", "Operating-system threads.", func(p *Process) float64 { return float64(p.Threads) }},
	}
	for _, g := range gauges {
		wrote := false
		for i := range snaps {
			v := g.value(&snaps[i].Process)
			if v < 0 { // not known on this platform
				continue
			}
			if !wrote {
				family(b, g.name, g.typ, g.help)
				wrote = true
			}
			series(b, g.name, snaps[i].Worker)
			b.WriteString(formatFloat(v))
			b.WriteByte('\n')
		}
	}
}

// histogram writes the _bucket, _sum and _count series of h.
func histogram(b *bytes.Buffer, name string, worker int, h HistogramSnapshot, labels ...string) {
	var cum uint64
	for i, n := range h.Counts {
		cum += n
		le := "+Inf"
		if i < len(Buckets) {
			le = formatFloat(Buckets[i].Seconds())
		}
		series(b, name+"_bucket", worker, append(labels, "le", le)...)
		b.WriteString(strconv.FormatUint(cum, 10))
		b.WriteByte('\n')
	}
	series(b, name+"_sum", worker, labels...)
	b.WriteString(formatFloat(h.Sum))
	b.WriteByte('\n')
	series(b, name+"_count", worker, labels...)
	b.WriteString(strconv.FormatUint(cum, 10))
	b.WriteByte('\n')
}

func family(b *bytes.Buffer, name, typ, help string) {
	b.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n")
}

// series writes a series' name and labels, name and value pairs, and the
// space before its value; worker="ID" first when worker is not 0.
func series(b *bytes.Buffer, name string, worker int, labels ...string) {
	b.WriteString(name)
	if worker == 0 && len(labels) == 0 {
		b.WriteByte(' ')
		return
	}
	b.WriteByte('{')
	sep := ""
	if worker != 0 {
		b.WriteString(`worker="` + strconv.Itoa(worker) + `"`)
		sep = ","
	}
	for i := 0; i+1 < len(labels); i += 2 {
		b.WriteString(sep + labels[i] + `="`)
		b.WriteString(EscapeLabel(labels[i+1]))
		b.WriteByte('"')
		sep = ","
	}
	b.WriteString("} ")
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// EscapeLabel escapes a label value for the text format: a backslash,
// a double quote and a line feed, the three it requires.
func EscapeLabel(v string) string { return labelEscaper.Replace(v) }

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
