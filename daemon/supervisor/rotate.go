//go:build linux

package supervisor

import (
	"time"

	"github.com/sluice-server/sluice/components"
)

// rotateLogs rotates the access log files of the serving generation that
// have reached their max_size, and has the workers reopen them. The
// workers all append to one file and rotate nothing (their Logs are
// built with a Context that has Workers): the master alone renames it,
// at each health check.
func (m *Master) rotateLogs() {
	var logs map[string]components.LogRotation
	if m.cur != nil {
		logs = m.cur.logs
	}
	for path := range m.rotators {
		if _, ok := logs[path]; !ok {
			delete(m.rotators, path)
		}
	}
	rotated := false
	for path, rot := range logs {
		r := m.rotators[path]
		if r == nil || r.Rotation() != rot {
			if m.rotators == nil {
				m.rotators = map[string]*components.LogRotator{}
			}
			r = components.NewLogRotator(path, rot)
			m.rotators[path] = r
		}
		done, err := r.Check()
		if err != nil {
			m.log.Error("cannot rotate a log file", "file", path, "error", err)
		}
		if done {
			m.log.Info("log file rotated", "file", path)
			rotated = true
		}
	}
	if rotated {
		m.tellWorkers(message{Type: msgReopen})
	}
}

// tellWorkers sends m to every worker of the serving and the pending
// generation that is not retiring.
func (m *Master) tellWorkers(msg message) {
	for _, g := range []*generation{m.cur, m.pending} {
		if g == nil {
			continue
		}
		for _, w := range g.workers {
			if w != nil && !w.retiring {
				send(w.ctl, msg, nil, time.Second)
			}
		}
	}
}
