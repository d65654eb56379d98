//go:build linux

package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/components"
)

// Each worker has its own caches in memory, and a purge (cache_purge)
// reaches the one worker whose connection carried it. That worker
// applies it, then sends it to the master (msgPurge), which sends it to
// every other worker, current, starting or draining, and answers the
// first worker (msgPurged) once all have applied it, or when
// relayTimeout is over; only then is the purge answered, so that a
// request after it, whichever worker takes it, misses.

// relayTimeout bounds how long the master waits for the workers to apply
// a purge, and workerPurgeWait how long a worker waits for the master.
const (
	relayTimeout    = 5 * time.Second
	workerPurgeWait = relayTimeout + 2*time.Second
)

// maxPurgePart bounds the JSON of the Purge of one control packet; a
// larger purge is relayed in parts. cache_purge refuses URLs and
// prefixes over components.MaxPurgeItem bytes, whose JSON (at most six
// bytes for one) fits a part.
const maxPurgePart = maxMessage - 4096

// purgeClient is a worker's relay of its purges through the master
// (components.PurgeRelay). Safe for concurrent use.
type purgeClient struct {
	ctl *net.UnixConn
	waiters
}

func newPurgeClient(ctl *net.UnixConn) *purgeClient {
	return &purgeClient{ctl: ctl}
}

// relay is the worker's components.PurgeRelay.
func (c *purgeClient) relay(p components.Purge) (purged, processes int, err error) {
	for i, part := range splitPurge(p) {
		n, k, err := c.one(part)
		purged += n
		if i == 0 || k < processes {
			processes = k
		}
		if err != nil {
			return purged, processes, err
		}
	}
	return purged, processes, nil
}

func (c *purgeClient) one(p components.Purge) (int, int, error) {
	ch := make(chan message, 1)
	id, remove := c.add(ch)
	defer remove()
	if err := send(c.ctl, message{Type: msgPurge, ID: id, Purge: &p}, nil, time.Second); err != nil {
		return 0, 0, fmt.Errorf("sending the purge to the master: %w", err)
	}
	timer := time.NewTimer(workerPurgeWait)
	defer timer.Stop()
	select {
	case m := <-ch:
		if m.Error != "" {
			return m.Purged, m.Processes, errors.New(m.Error)
		}
		return m.Purged, m.Processes, nil
	case <-timer.C:
		return 0, 0, fmt.Errorf("the master did not answer the purge within %v", workerPurgeWait)
	}
}

// applyPurge applies the master's msgPurge to caches and answers it.
func applyPurge(ctl *net.UnixConn, caches *atomic.Pointer[components.Caches], m message) {
	reply := message{Type: msgPurged, ID: m.ID}
	n, err := caches.Load().Apply(*m.Purge)
	reply.Purged = n
	if err != nil {
		reply.Error = err.Error()
	}
	send(ctl, reply, nil, time.Second)
}

// splitPurge cuts p into parts whose JSON fits maxPurgePart.
func splitPurge(p components.Purge) []components.Purge {
	if b, _ := json.Marshal(p); len(b) <= maxPurgePart {
		return []components.Purge{p}
	}
	var parts []components.Purge
	empty := components.Purge{Cache: p.Cache, Host: p.Host}
	b, _ := json.Marshal(empty)
	base := len(b) + len(`,"urls":[],"prefixes":[],"tags":[]`)
	cur, size := empty, base
	add := func(list func(*components.Purge) *[]string, s string) {
		b, _ := json.Marshal(s)
		if size+len(b)+1 > maxPurgePart && size > base {
			parts = append(parts, cur)
			cur, size = empty, base
		}
		l := list(&cur)
		*l = append(*l, s)
		size += len(b) + 1
	}
	for _, u := range p.URLs {
		add(func(p *components.Purge) *[]string { return &p.URLs }, u)
	}
	for _, u := range p.Prefixes {
		add(func(p *components.Purge) *[]string { return &p.Prefixes }, u)
	}
	for _, t := range p.Tags {
		add(func(p *components.Purge) *[]string { return &p.Tags }, t)
	}
	return append(parts, cur)
}

// relayPurge sends the purge w asked for (msg) to the other workers and
// answers w when they have applied it. It runs on Run's goroutine; the
// waiting does not.
func (m *Master) relayPurge(w *worker, msg message) {
	if msg.Purge == nil {
		return
	}
	targets := m.others(w)
	go func() {
		reply := message{Type: msgPurged, ID: msg.ID}
		missing := m.purges.fanOut(targets, message{Type: msgPurge, Purge: msg.Purge}, relayTimeout, func(t *worker, err error) {
			m.log.Warn("a purge did not reach a worker", "worker", t.id, "error", err)
		}, func(a relayReply) {
			if !a.gone && a.m.Error == "" {
				reply.Purged += a.m.Purged
				reply.Processes++
			}
			if a.m.Error != "" {
				m.log.Warn("a worker could not apply a purge", "worker", a.w.id, "error", a.m.Error)
			}
		})
		if missing > 0 {
			reply.Error = fmt.Sprintf("%d of %d other workers did not confirm the purge within %v", missing, len(targets), relayTimeout)
		}
		if err := send(w.ctl, reply, nil, time.Second); err != nil {
			m.log.Warn("a purge's answer did not reach its worker", "worker", w.id, "error", err)
		}
	}()
}
