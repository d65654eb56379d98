// Package metrics counts what Prometheus scrapes from Sluice beyond the
// server-wide counters of the status source: each route's requests by
// status class and their latency, and the Go runtime and the process
// (memory, CPU, descriptors). It writes them in the Prometheus text
// exposition format 0.0.4, by hand.
//
// # Counting
//
// A Registry holds a Route per route label; Route.Component is the pipe
// that counts a route's requests. Counting takes no lock and allocates
// nothing: the counters are atomic, and a latency goes into one of a
// fixed set of buckets (Buckets). The labels are few by construction:
// a route's label is its name or its position in the config, never a
// request's path, and a Registry holds at most MaxRoutes of them (the
// routes past that share the label OtherRoute).
//
// # Exposition
//
// Take reads a Snapshot of a Registry, the runtime and the process;
// WriteText writes the snapshots of one or more processes (a master's
// workers, each labelled worker="ID") as one valid exposition.
package metrics
