package upstream

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of PassiveHealth and Health.
const (
	DefaultPassiveFailures = 3
	DefaultPassiveWindow   = 10 * time.Second
	DefaultPassiveDownFor  = 10 * time.Second
	DefaultHealthInterval  = 5 * time.Second
	DefaultHealthTimeout   = 2 * time.Second
	DefaultHealthRise      = 2
	DefaultHealthFall      = 3
)

// PassiveHealth marks an upstream down when requests to it fail: Failures
// failures within Window take it out of the rotation for DownFor. What a
// failure is, the transport's caller says (Host.Failed): for the proxy a
// connection refused or timed out, a response head that is late,
// malformed or missing (the connection closed first), and a response
// whose status its fail_status lists; an upstream at max_conns has not
// failed, nor one whose client went away, or whose request carried what
// made its response refused. Failed requests never mark down the last
// host of a Group that is up, and a Group whose hosts are all marked down
// by them tries them all the same (Attempts): only the active checks take
// a Group's last host out. The zero value is filled with the defaults by
// the caller.
type PassiveHealth struct {
	// Failures within Window that mark the upstream down (default 3;
	// -1 turns passive checks off).
	Failures int `yaml:"failures"`
	// Window is the span the failures are counted over (default 10s).
	Window time.Duration `yaml:"window"`
	// DownFor is how long the upstream is then left out (default 10s).
	DownFor time.Duration `yaml:"down_for"`
}

// Health configures active health checks: every Interval each upstream
// is sent "GET Path" on a connection of its own (Group.StartChecks runs
// the transport's check); Fall failed checks in a row mark it down, Rise
// good ones in a row up again. A check fails when it cannot connect,
// takes longer than Timeout, or answers another status than Expect.
// Without a Path there are no active checks.
type Health struct {
	// Path is the path checked ("/healthz"); empty: no active checks.
	Path string `yaml:"path"`
	// Interval between two checks of an upstream (default 5s).
	Interval time.Duration `yaml:"interval"`
	// Timeout bounds one check (default 2s).
	Timeout time.Duration `yaml:"timeout"`
	// Expect is the status a healthy upstream answers; 0: any 2xx.
	Expect int `yaml:"expect"`
	// Rise is how many good checks in a row bring a down upstream back
	// (default 2).
	Rise int `yaml:"rise"`
	// Fall is how many failed checks in a row mark an upstream down
	// (default 3).
	Fall int `yaml:"fall"`
}

// Passes reports whether status is what a healthy upstream answers a
// check with: Expect, or any 2xx when Expect is 0.
func (h Health) Passes(status int) bool {
	if h.Expect != 0 {
		return status == h.Expect
	}
	return status >= 200 && status < 300
}

// DialCheck connects to an upstream for one active check, on a
// connection of its own (outside the pool and max_conns), with the
// connection's deadline set to Timeout from now: the whole check,
// connecting included, is bounded by it. The caller closes it.
func (h Health) DialCheck(network, addr string) (net.Conn, error) {
	deadline := time.Now().Add(h.Timeout)
	d := net.Dialer{Deadline: deadline}
	nc, err := d.Dial(network, addr)
	if err != nil {
		return nil, err
	}
	nc.SetDeadline(deadline)
	return nc, nil
}

// health is an upstream's health, shared by every Group that names the
// upstream (states), so that it outlives a config reload: the new
// config's Group takes it over before the old one is closed.
type health struct {
	refs int // Groups holding it; guarded by statesMu

	downUntil   atomic.Int64 // passive: the instant until which it is down
	activelyOff atomic.Bool  // active: the last checks failed

	mu    sync.Mutex
	fails []time.Time // passive: recent failures, oldest first
	good  int         // active: checks in a row that passed
	bad   int         // active: checks in a row that failed
}

var (
	statesMu sync.Mutex
	states   = map[string]*health{}
)

// acquireHealth returns the shared health of the upstream called name.
func acquireHealth(name string) *health {
	statesMu.Lock()
	defer statesMu.Unlock()
	h := states[name]
	if h == nil {
		h = &health{}
		states[name] = h
	}
	h.refs++
	return h
}

// releaseHealth lets go of the health of name; the last release forgets it.
func releaseHealth(name string) {
	statesMu.Lock()
	defer statesMu.Unlock()
	if h := states[name]; h != nil {
		if h.refs--; h.refs <= 0 {
			delete(states, name)
		}
	}
}

// up reports whether the upstream may be sent requests at now.
func (h *health) up(now Instant) bool {
	return !h.activelyOff.Load() && int64(now) >= h.downUntil.Load()
}

// failed records a failed request at now under passive checks p, and
// marks the upstream down when the window holds p.Failures of them. It
// reports whether it did.
func (h *health) failed(now time.Time, p *PassiveHealth) bool {
	if p.Failures <= 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	cut := now.Add(-p.Window)
	kept := h.fails[:0]
	for _, t := range h.fails {
		if t.After(cut) {
			kept = append(kept, t)
		}
	}
	h.fails = append(kept, now)
	if len(h.fails) < p.Failures {
		return false
	}
	h.fails = h.fails[:0]
	h.downUntil.Store(int64(InstantOf(now).Add(p.DownFor)))
	return true
}

// checked records the result of an active check under hc, and reports a
// change of state: +1 up again, -1 down, 0 none.
func (h *health) checked(ok bool, hc *Health) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ok {
		h.good, h.bad = h.good+1, 0
		if h.activelyOff.Load() && h.good >= hc.Rise {
			h.activelyOff.Store(false)
			h.downUntil.Store(0) // passive marks end too: it answers again
			return +1
		}
		return 0
	}
	h.bad, h.good = h.bad+1, 0
	if !h.activelyOff.Load() && h.bad >= hc.Fall {
		h.activelyOff.Store(true)
		return -1
	}
	return 0
}

// Up reports whether h may be sent requests at now: not marked down by
// the passive checks (Failed) nor by the active ones.
func (h *Host[C]) Up(now Instant) bool { return h.health.up(now) }

// Failed records a failed request to h at now under passive checks p,
// and marks h down when p's window holds p.Failures of them. It reports
// whether it did. (Attempts calls it only when another host of its
// Group is up: see Attempts.Failed.)
func (h *Host[C]) Failed(now time.Time, p *PassiveHealth) bool { return h.health.failed(now, p) }
