package components

import (
	"bytes"
	"fmt"
	"time"
)

// Workers is what a worker process knows of its master's workers (see
// package daemon/supervisor), for the status page: its own id, and every
// worker's status as the master last heard from it. The master sends it
// to each worker at every health check, so it is up to one
// health.interval old.
type Workers struct {
	Self int            // the id of the worker asked
	All  []WorkerStatus // every worker the master runs, by id
}

// WorkerStatus is one worker process of a master.
type WorkerStatus struct {
	// ID is the master's number for the worker (worker=ID in the log);
	// each process started gets the next.
	ID int `json:"id"`
	// PID is its process id.
	PID int `json:"pid"`
	// Started is when the master started it.
	Started time.Time `json:"started"`
	// State is "starting" (not yet healthy), "serving", "draining"
	// (replaced by a reload or an upgrade, it accepts nothing new and
	// keeps what it holds: Connections, until drain_timeout), or
	// "stopping" (shutting down).
	State string `json:"state"`
	// Restarts counts the processes its slot had before it under the
	// config it serves: workers that crashed or failed a health check.
	Restarts int `json:"restarts"`
	// Connections is the number of its open connections, and Requests
	// the requests its engine read (the master's health probes, one per
	// health.interval, included), at its last heartbeat.
	Connections int64  `json:"connections"`
	Requests    uint64 `json:"requests"`
	// Memory is the process's resident set size in bytes, as the
	// master read it when it last sent the view (0 when it could not):
	// what a draining worker still holds is counted here.
	Memory uint64 `json:"memory_bytes"`
}

// workersPrometheus writes the sluice_worker_* series, one per worker
// and labelled worker="ID".
func workersPrometheus(b *bytes.Buffer, ws []WorkerStatus) {
	if len(ws) == 0 {
		return
	}
	series := []struct {
		name, typ, help string
		value           func(w *WorkerStatus) string
	}{
		{"sluice_worker_info", "gauge", "A worker process: its pid and state, value 1.", nil},
		{"sluice_worker_start_time_seconds", "gauge", "When the master started the worker, in seconds since the epoch.", func(w *WorkerStatus) string {
			return fmt.Sprintf("%.3f", float64(w.Started.UnixMilli())/1000)
		}},
		{"sluice_worker_restarts", "gauge", "Processes the worker's slot had before it (crashed or unhealthy).", func(w *WorkerStatus) string { return fmt.Sprint(w.Restarts) }},
		{"sluice_worker_connections_open", "gauge", "The worker's open connections.", func(w *WorkerStatus) string { return fmt.Sprint(w.Connections) }},
		{"sluice_worker_requests_total", "counter", "Requests the worker's engine read, health probes included.", func(w *WorkerStatus) string { return fmt.Sprint(w.Requests) }},
		{"sluice_worker_resident_memory_bytes", "gauge", "The worker process's resident set size.", func(w *WorkerStatus) string { return fmt.Sprint(w.Memory) }},
	}
	for _, s := range series {
		promMetric(b, s.name, s.typ, s.help)
		for i := range ws {
			w := &ws[i]
			if s.value == nil {
				fmt.Fprintf(b, "%s{worker=\"%d\",pid=\"%d\",state=%q} 1\n", s.name, w.ID, w.PID, w.State)
			} else {
				fmt.Fprintf(b, "%s{worker=\"%d\"} %s\n", s.name, w.ID, s.value(w))
			}
		}
	}
}

// workersHTML writes a table of the workers.
func workersHTML(b *bytes.Buffer, ws []WorkerStatus) {
	if len(ws) == 0 {
		return
	}
	b.WriteString("<h2>Workers</h2>\n<table>\n<tr><th>Worker</th><th>PID</th><th>Started</th><th>State</th><th>Restarts</th><th>Connections</th><th>Requests</th><th>Memory</th></tr>\n")
	for _, w := range ws {
		fmt.Fprintf(b, "<tr><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%.1f MiB</td></tr>\n",
			w.ID, w.PID, w.Started.UTC().Format(time.RFC3339), w.State, w.Restarts, w.Connections, w.Requests, float64(w.Memory)/(1<<20))
	}
	b.WriteString("</table>\n")
}
