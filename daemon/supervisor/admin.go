//go:build linux

package supervisor

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/sluice-server/sluice/admin"
	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/daemon"
)

// A Master is the admin API's Backend (admin.Backend) for its workers:
// the API runs in the master, which validates a config posted to it and
// reloads with it as SIGHUP does (new workers, the old ones draining),
// and sends an upstream change or a purge to every worker, answering
// once all applied it.
//
// An upstream change goes to the serving generation's workers; a worker
// that starts afterwards (a replacement, or one starting already) is
// sent the sets changed so far once it is ready, so that every worker
// follows. Draining workers keep their sets. A new config (a reload, or
// POST /load) starts its workers with its own sets: the changes made
// through the API before it are dropped, as they are in one process.

var _ admin.Backend = (*Master)(nil)

// loadWait bounds how long Load waits for the new workers to be healthy.
const loadWait = 2 * time.Minute

// Ready returns a channel closed once Run's first workers serve (for
// the new master of a binary upgrade, once it can take over).
func (m *Master) Ready() <-chan struct{} {
	m.init()
	return m.ready
}

// errNotRunning is the API's error once Run has returned.
var errNotRunning = errors.New("the master is not running")

// do runs f on Run's goroutine and waits until it has run; it returns
// errNotRunning if Run is not running.
func (m *Master) do(f func()) error {
	m.init()
	ran := make(chan struct{})
	select {
	case m.calls <- func() { f(); close(ran) }:
	case <-m.over:
		return errNotRunning
	}
	select {
	case <-ran:
		return nil
	case <-m.over:
		return errNotRunning
	}
}

// Running is admin.Backend.Running: the serving generation's config.
func (m *Master) Running() (name string, data []byte) {
	m.do(func() {
		if g := m.cur; g != nil {
			name, data = g.name, g.data
		} else if g := m.pending; g != nil {
			name, data = g.name, g.data
		}
	})
	return name, data
}

// Load is admin.Backend.Load: data is validated here (as sluice check
// does, with the command line's overrides), then loaded as a reload
// does; Load returns once the new workers serve, or why they do not.
func (m *Master) Load(data []byte) error {
	name, _ := m.Running()
	if name == "" {
		return errNotRunning
	}
	quiet := components.Context{Logger: slog.New(slog.DiscardHandler)}
	cfg, err := (&config.Loader{Context: quiet}).Parse(name, data)
	if err != nil {
		return err
	}
	if m.Prepare != nil {
		err = m.Prepare(cfg)
	}
	if err == nil {
		err = daemon.CheckUser(cfg.User, cfg.Group)
	}
	cfg.Close()
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	if err := m.do(func() {
		m.loadData = data
		m.loadWaiters = append(m.loadWaiters, done)
		m.reload()
	}); err != nil {
		return err
	}
	timer := time.NewTimer(loadWait)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return fmt.Errorf("the new workers did not serve within %v; the reload goes on", loadWait)
	case <-m.over:
		return errNotRunning
	}
}

// closedWait bounds how long a served load waits for the old workers
// to say they accept no more (msgClosed) before it is answered anyway.
const closedWait = 5 * time.Second

// closingWait is loads whose new workers serve, waiting for the old
// workers (left) to stop accepting.
type closingWait struct {
	waiters []chan error
	left    []*worker
}

// awaitClosed answers the loads ws once every one of olds has stopped
// accepting (or exited), or after closedWait: when POST /load answers,
// a new connection reaches the new config, never an old worker that has
// not yet begun to drain. It runs on Run's goroutine.
func (m *Master) awaitClosed(ws []chan error, olds []*worker) {
	if len(ws) == 0 {
		return
	}
	c := &closingWait{waiters: ws}
	for _, w := range olds {
		if w != nil {
			c.left = append(c.left, w)
		}
	}
	m.closing = append(m.closing, c)
	m.checkClosed()
	if len(c.left) == 0 {
		return
	}
	time.AfterFunc(closedWait, func() {
		m.do(func() {
			if !slices.Contains(m.closing, c) {
				return
			}
			m.log.Warn("old workers did not say they stopped accepting; answering the load", "workers", len(c.left), "after", closedWait)
			m.closing = slices.DeleteFunc(m.closing, func(o *closingWait) bool { return o == c })
			answerLoads(c.waiters, nil)
		})
	})
}

// checkClosed answers the loads whose old workers have all stopped
// accepting or exited. It runs on Run's goroutine.
func (m *Master) checkClosed() {
	m.closing = slices.DeleteFunc(m.closing, func(c *closingWait) bool {
		c.left = slices.DeleteFunc(c.left, func(w *worker) bool {
			if w.closed {
				return true
			}
			select {
			case <-w.exited:
				return true
			default:
				return false
			}
		})
		if len(c.left) > 0 {
			return false
		}
		answerLoads(c.waiters, nil)
		return true
	})
}

// answerLoads answers the Loads waiting on ws with err.
func answerLoads(ws []chan error, err error) {
	for _, w := range ws {
		w <- err
	}
}

// serving returns the workers an upstream change or a purge reaches:
// the ready ones of the serving generation, then, with all, those of a
// pending one and those draining.
func (m *Master) serving(all bool) []*worker {
	var out []*worker
	add := func(t *worker) {
		if t == nil || !t.ready || t.cmd == nil || (t.retiring && !all) {
			return
		}
		select {
		case <-t.exited:
			return
		default:
		}
		out = append(out, t)
	}
	gens := []*generation{m.cur}
	if all {
		gens = append(gens, m.pending)
	}
	for _, g := range gens {
		if g != nil {
			for _, t := range g.workers {
				add(t)
			}
		}
	}
	if all {
		for _, t := range m.old {
			add(t)
		}
	}
	return out
}

// fanOut sends msg to every target and collects their answers, for up
// to relayTimeout; it returns them and how many did not answer. A
// target that exits counts as answered, with gone set. It blocks: not
// for Run's goroutine.
func (m *Master) fanOut(r *relays, targets []*worker, msg message) (replies []relayReply, missing int) {
	missing = r.fanOut(targets, msg, relayTimeout, func(t *worker, err error) {
		m.log.Warn("a message did not reach a worker", "worker", t.id, "type", msg.Type, "error", err)
	}, func(a relayReply) { replies = append(replies, a) })
	return replies, missing
}

// Purge is admin.Backend.Purge: every worker's caches, current,
// starting or draining, are purged.
func (m *Master) Purge(p components.Purge) (purged, processes int, err error) {
	var targets []*worker
	if err := m.do(func() { targets = m.serving(true) }); err != nil {
		return 0, 0, err
	}
	replies, missing := m.fanOut(&m.purges, targets, message{Type: msgPurge, Purge: &p})
	for _, a := range replies {
		switch {
		case a.gone:
		case a.m.Error != "":
			m.log.Warn("a worker could not apply a purge", "worker", a.w.id, "error", a.m.Error)
			missing++
		default:
			purged += a.m.Purged
			processes++
		}
	}
	if missing > 0 {
		return purged, processes, fmt.Errorf("%d of %d workers did not confirm the purge within %v", missing, len(targets), relayTimeout)
	}
	return purged, processes, nil
}

// Upstreams is admin.Backend.Upstreams: the sets as one serving worker
// has them (each SetState's Worker says which); every serving worker has
// applied the same changes.
func (m *Master) Upstreams() ([]admin.SetState, error) {
	var targets []*worker
	if err := m.do(func() { targets = m.serving(false) }); err != nil {
		return nil, err
	}
	if len(targets) == 0 {
		return nil, errors.New("no worker serves yet")
	}
	replies, _ := m.fanOut(&m.upstreams, targets[:1], message{Type: msgUpstreams})
	if len(replies) == 0 || replies[0].gone {
		return nil, fmt.Errorf("worker %d did not answer within %v", targets[0].id, relayTimeout)
	}
	sets := replies[0].m.Sets
	if sets == nil {
		sets = []admin.SetState{}
	}
	for i := range sets {
		sets[i].Worker = targets[0].id
	}
	return sets, nil
}

// ChangeUpstream is admin.Backend.ChangeUpstream: every serving worker
// applies c; the master remembers the set's hosts for the workers that
// start later. When some workers did not apply it, the error says how
// many, beside the state of one that did.
func (m *Master) ChangeUpstream(name string, c admin.Change) (admin.SetState, error) {
	var targets []*worker
	if err := m.do(func() { targets = m.serving(false) }); err != nil {
		return admin.SetState{}, err
	}
	if len(targets) == 0 {
		return admin.SetState{}, errors.New("no worker serves yet")
	}
	replies, missing := m.fanOut(&m.upstreams, targets, message{Type: msgUpstream, Set: name, Change: &c})
	var state *admin.SetState
	var firstErr error
	for _, a := range replies {
		switch {
		case a.gone:
			missing++
		case a.m.Error != "":
			if firstErr == nil {
				firstErr = changeError(a.m)
			}
			missing++
		case state == nil && a.m.State != nil:
			state = a.m.State
			state.Worker = a.w.id
		}
	}
	if state == nil {
		if firstErr == nil {
			firstErr = fmt.Errorf("no worker applied the change within %v", relayTimeout)
		}
		return admin.SetState{}, firstErr
	}
	hosts := state.Specs()
	m.do(func() {
		if m.cur == nil || !containsAll(m.cur.workers, targets) {
			return // a reload took over meanwhile: its sets are its config's
		}
		if m.overrides == nil {
			m.overrides = map[string][]admin.HostSpec{}
		}
		m.overrides[name] = hosts
		m.overridesVersion++
		for _, w := range m.cur.workers {
			if w != nil && slices.Contains(targets, w) {
				w.overridesVersion = m.overridesVersion
			} else if w != nil {
				m.sendOverrides(w) // ready since the change was sent: it catches up
			}
		}
	})
	if missing > 0 {
		return *state, fmt.Errorf("%d of %d workers did not apply the change", missing, len(targets))
	}
	return *state, nil
}

// containsAll reports whether every target is one of ws.
func containsAll(ws, targets []*worker) bool {
	for _, t := range targets {
		found := false
		for _, w := range ws {
			found = found || w == t
		}
		if !found {
			return false
		}
	}
	return true
}

// changeError turns a worker's answer into ChangeUpstream's error.
func changeError(msg message) error {
	switch msg.ErrKind {
	case "noset":
		return admin.ErrNoSet
	case "change":
		return &admin.ChangeError{Msg: msg.Error}
	}
	return errors.New(msg.Error)
}

// sendOverrides sends w, which has just said it is ready, the upstream
// changes made since its setup was written.
func (m *Master) sendOverrides(w *worker) {
	if w.gen != m.cur || !w.ready || w.overridesVersion == m.overridesVersion {
		return
	}
	w.overridesVersion = m.overridesVersion
	sets := maps.Clone(m.overrides)
	go func() {
		for name, hosts := range sets {
			c := admin.Change{Replace: true, Hosts: hosts}
			if err := send(w.ctl, message{Type: msgUpstream, Set: name, Change: &c}, nil, time.Second); err != nil {
				m.log.Warn("the upstream changes did not reach a new worker", "worker", w.id, "error", err)
				return
			}
		}
	}()
}

// applyUpstream applies the master's msgUpstream to this worker's sets
// and answers it (with no answer for a change without an ID: the catch-up
// of a new worker).
func applyUpstream(ctl sender, m message) {
	state, err := admin.LocalSets().Apply(m.Set, *m.Change)
	if m.ID == 0 {
		return
	}
	reply := message{Type: msgUpstreamDone, ID: m.ID}
	var ce *admin.ChangeError
	switch {
	case errors.Is(err, admin.ErrNoSet):
		reply.Error, reply.ErrKind = err.Error(), "noset"
	case errors.As(err, &ce):
		reply.Error, reply.ErrKind = err.Error(), "change"
	case err != nil:
		reply.Error = err.Error()
	default:
		reply.State = &state
	}
	ctl(reply)
}

// sender sends a message to the master.
type sender func(message)

// applyOverrides applies a new worker's setup's upstream hosts.
func applyOverrides(sets map[string][]admin.HostSpec, log *slog.Logger) {
	for name, hosts := range sets {
		if _, err := admin.LocalSets().Apply(name, admin.Change{Replace: true, Hosts: hosts}); err != nil {
			log.Error("cannot apply an upstream set's hosts", "set", name, "error", err)
		}
	}
}
