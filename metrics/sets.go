package metrics

import (
	"bytes"
	"strconv"

	"github.com/sluice-server/sluice/upstream"
)

// SetSnapshot is an upstream set's hosts at one moment, their health and
// pool: what the sluice_upstream_up and the pool gauges show. Set is the
// set's name, Transport the transport serving it ("proxy", "fastcgi"),
// Queued the requests waiting in its max_conns queue.
type SetSnapshot struct {
	Set       string         `json:"set"`
	Transport string         `json:"transport"`
	Queued    int            `json:"queued"`
	Hosts     []HostSnapshot `json:"hosts"`
}

// readSets returns the upstream sets registered in this process
// (upstream.Sets), by name, with at most MaxUpstreams hosts in all: the
// hosts past that are left out.
func readSets() []SetSnapshot {
	var out []SetSnapshot
	n := 0
	for _, s := range upstream.Sets() {
		ss := SetSnapshot{Set: s.Name, Transport: s.Transport, Queued: s.Queued}
		for _, h := range s.Hosts {
			if n == MaxUpstreams {
				break
			}
			n++
			ss.Hosts = append(ss.Hosts, HostSnapshot{Host: h.Name, Up: h.Up, Draining: h.Draining, Weight: h.Weight, InFlight: h.InFlight, Open: h.Open, Idle: h.Idle})
		}
		out = append(out, ss)
	}
	return out
}

// HostSnapshot is one host of a set: its name as the transport writes
// it, whether the health checks hold it up, whether it is draining (in
// the set, taking no new request), its weight, its requests in flight
// and its connections open and idle.
type HostSnapshot struct {
	Host     string `json:"host"`
	Up       bool   `json:"up"`
	Draining bool   `json:"draining,omitempty"`
	Weight   int    `json:"weight"`
	InFlight int64  `json:"in_flight"`
	Open     int    `json:"open"`
	Idle     int    `json:"idle"`
}

func boolValue(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// writeSets writes the gauges of the upstream sets' hosts, labelled
// set="NAME",upstream="HOST" (and worker="ID"): each process has its own
// pools and its own view of the hosts' health.
func writeSets(b *bytes.Buffer, snaps []Snapshot) {
	var has bool
	for i := range snaps {
		has = has || len(snaps[i].Sets) > 0
	}
	if !has {
		return
	}
	gauges := []struct {
		name, help string
		value      func(h *HostSnapshot) string
	}{
		{"sluice_upstream_up", "1 while the health checks hold the upstream host up, 0 while it is marked down.", func(h *HostSnapshot) string { return boolValue(h.Up) }},
		{"sluice_upstream_draining", "1 while the host is draining: in its set, taking no new request.", func(h *HostSnapshot) string { return boolValue(h.Draining) }},
		{"sluice_upstream_weight", "The host's weight in its set's balancing.", func(h *HostSnapshot) string { return strconv.Itoa(h.Weight) }},
		{"sluice_upstream_requests_in_flight", "Requests on the host now.", func(h *HostSnapshot) string { return strconv.FormatInt(h.InFlight, 10) }},
		{"sluice_upstream_connections_open", "Connections to the host open now, busy and idle.", func(h *HostSnapshot) string { return strconv.Itoa(h.Open) }},
		{"sluice_upstream_connections_idle", "Connections to the host idle in its pool now.", func(h *HostSnapshot) string { return strconv.Itoa(h.Idle) }},
	}
	for _, g := range gauges {
		family(b, g.name, "gauge", g.help)
		for i := range snaps {
			for _, s := range snaps[i].Sets {
				for k := range s.Hosts {
					h := &s.Hosts[k]
					series(b, g.name, snaps[i].Worker, "set", s.Set, "upstream", h.Host)
					b.WriteString(g.value(h))
					b.WriteByte('\n')
				}
			}
		}
	}
	family(b, "sluice_upstream_set_queued_requests", "gauge", "Requests waiting in the set's max_conns queue for a connection to come free.")
	for i := range snaps {
		for _, s := range snaps[i].Sets {
			series(b, "sluice_upstream_set_queued_requests", snaps[i].Worker, "set", s.Set, "transport", s.Transport)
			b.WriteString(strconv.Itoa(s.Queued))
			b.WriteByte('\n')
		}
	}
}
