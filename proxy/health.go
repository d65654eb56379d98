package proxy

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
// failures within Window take it out of the rotation for DownFor. A
// failure is a connection refused or timed out, a response head that is
// late, malformed or missing (the connection closed first), and a
// response whose status Options.FailStatus lists (none by default); an
// upstream at max_conns has not failed.
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
// is sent "GET Path" on a connection of its own; Fall failed checks in a
// row mark it down, Rise good ones in a row up again. A check fails when
// it cannot connect, takes longer than Timeout, or answers another status
// than Expect. Without a Path there are no active checks.
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

// health is an upstream's health, shared by every Proxy that names the
// upstream (states), so that it outlives a config reload: the new
// config's Proxy takes it over before the old one is closed.
type health struct {
	refs int // Proxies holding it; guarded by statesMu

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
func (h *health) up(now instant) bool {
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
	h.downUntil.Store(int64(instantOf(now).add(p.DownFor)))
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

// checker runs the active health checks of p until stop is closed.
func (p *Proxy) checker(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(p.health.Interval)
	defer t.Stop()
	var wg sync.WaitGroup
	for {
		for _, u := range p.ups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok := p.check(u)
				switch u.health.checked(ok, &p.health) {
				case -1:
					p.log.Warn("proxy: upstream down: health check failed", "upstream", u.name, "checks", p.health.Fall)
				case +1:
					p.log.Info("proxy: upstream up again: health check passed", "upstream", u.name, "checks", p.health.Rise)
				}
			}()
		}
		wg.Wait()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// check sends one health check to u and reports whether it passed. The
// response head is read by the proxy's own parser, as strictly as any.
func (p *Proxy) check(u *upstream) bool {
	deadline := time.Now().Add(p.health.Timeout)
	d := net.Dialer{Deadline: deadline}
	nc, err := d.Dial(u.network, u.addr)
	if err != nil {
		return false
	}
	defer nc.Close()
	nc.SetDeadline(deadline)
	req := "GET " + p.health.Path + " HTTP/1.1\r\nHost: " + u.host + "\r\nUser-Agent: sluice-health-check\r\nConnection: close\r\n\r\n"
	if _, err := nc.Write([]byte(req)); err != nil {
		return false
	}
	uc := &upConn{nc: nc, buf: make([]byte, 4<<10)}
	var h responseHead
	for {
		if err := uc.readHead(&h, p.maxHead, p.maxFields); err != nil {
			return false
		}
		if h.status >= 200 {
			break
		}
	}
	if p.health.Expect != 0 {
		return h.status == p.health.Expect
	}
	return h.status >= 200 && h.status < 300
}
