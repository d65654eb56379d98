//go:build linux

package supervisor

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/admin"
	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
)

// worker is one worker process, as the master sees it. Its fields are
// Run's, but for exited and the process, which its goroutines share.
type worker struct {
	id       int
	tag      uint32 // of its QUIC connection IDs (quic.go)
	gen      *generation
	slot     int
	cmd      *exec.Cmd
	ctl      *net.UnixConn
	started  time.Time
	restarts int           // its slot's restarts before it
	exited   chan struct{} // closed when the process has been waited for
	killOne  sync.Once

	ready    bool // said it serves
	healthy  bool // answered a probe
	retiring bool // told to stop or drain
	closed   bool // said it accepts no new connection (msgClosed)
	draining bool // told to drain: it keeps what it holds

	overridesVersion int // the master's overridesVersion it has applied (admin.go)
	lastBeat         time.Time
	stats            Stats
	err              string // what it said when it could not start
}

// event is what a worker's goroutines, or an upgrade's, report to Run.
type event struct {
	w    *worker
	up   *upgrading
	kind eventKind
	msg  message
	err  error
}

type eventKind int

const (
	evMessage   eventKind = iota // msg from the control channel
	evHealthy                    // the first probe was answered
	evUnhealthy                  // a probe failed: err
	evExit                       // the process ended: err
	evRestart                    // a slot's back-off is over

	evUpgradeMessage // msg from the new master of an upgrade
	evUpgradeExit    // the new master ended before the hand-over: err
	evUpgradeTimeout // the new master's workers were not healthy in time
)

// kill ends the process at once (SIGKILL).
func (w *worker) kill() {
	w.killOne.Do(func() {
		if w.cmd != nil && w.cmd.Process != nil {
			w.cmd.Process.Signal(syscall.SIGKILL)
		}
	})
}

// startWorker starts a process for slot of g.
func (m *Master) startWorker(g *generation, slot int) {
	m.nextID++
	w := &worker{id: m.nextID, tag: m.newTag(), gen: g, slot: slot, restarts: g.restarts[slot], exited: make(chan struct{})}
	g.workers[slot] = w
	err := m.spawn(w)
	m.steer()
	if err != nil {
		m.log.Error("cannot start a worker", "worker", w.id, "error", err)
		close(w.exited)
		go func() { m.events <- event{w: w, kind: evExit, err: err} }()
	}
}

func (m *Master) spawn(w *worker) error {
	g := w.gen
	cmd, err := m.command()
	if err != nil {
		return err
	}
	mine, theirs, err := socketpair(syscall.SOCK_SEQPACKET, "control")
	if err != nil {
		return err
	}
	defer theirs.Close()
	ctl, err := fileConn(mine)
	if err != nil {
		return err
	}
	setupR, setupW, err := os.Pipe()
	if err != nil {
		ctl.Close()
		return err
	}
	defer setupR.Close()
	logR, logW, err := os.Pipe()
	if err != nil {
		ctl.Close()
		setupW.Close()
		return err
	}
	defer logW.Close()
	udp, err := m.udpSockets(w)
	if err != nil {
		ctl.Close()
		setupW.Close()
		logR.Close()
		return fmt.Errorf("HTTP/3 (UDP): %w", err)
	}
	cmd.ExtraFiles = []*os.File{theirs, setupR}
	for _, a := range g.addrs {
		cmd.ExtraFiles = append(cmd.ExtraFiles, m.lns[a])
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, udp...)
	var h3 []config.Address
	if udp != nil {
		h3 = g.h3
	}
	var secret []byte
	if len(g.h3) > 0 {
		secret = m.secret()
	}
	cmd.Stdout = m.Stdout
	if cmd.Stdout == nil {
		cmd.Stdout = os.Stdout
	}
	cmd.Stderr = logW
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = workerEnv(cmd.Env)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Workers never outlive the master: the kernel kills them when it
	// dies, and they exit when their control channel reads EOF.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := m.strays.start(cmd); err != nil {
		ctl.Close()
		setupW.Close()
		logR.Close()
		m.releaseUDP(w)
		return err
	}
	w.cmd, w.ctl, w.started = cmd, ctl, time.Now()
	var overrides map[string][]admin.HostSpec
	if g == m.cur || m.cur == nil { // the first generation starts with ResumeUpstreams
		overrides = maps.Clone(m.overrides)
	}
	w.overridesVersion = m.overridesVersion
	go func() {
		setupW.Write(marshalSetup(setup{
			ID: w.id, Name: g.name, Config: g.data, Addrs: g.addrs,
			Health: g.health, Grace: m.grace(), N: g.n, Upstreams: overrides,
			H3Addrs: h3, Tag: w.tag, QUICSecret: secret,
		}))
		setupW.Close()
	}()
	go m.relay(w.id, logR)
	go func() { // the control channel
		for {
			msg, f, err := receive(ctl)
			if f != nil {
				f.Close()
			}
			if err != nil {
				return
			}
			m.events <- event{w: w, kind: evMessage, msg: msg}
		}
	}()
	go func() { // the process
		err := cmd.Wait()
		m.strays.reaped(cmd.Process.Pid)
		logR.Close()
		ctl.Close()
		close(w.exited)
		m.events <- event{w: w, kind: evExit, err: err}
	}()
	m.log.Info("worker started", "worker", w.id, "pid", cmd.Process.Pid)
	return nil
}

// probe sends w a connection over its control channel and a request on
// it, and waits up to timeout for the response's status line: the
// worker's engine must be serving, not only its control goroutine.
func probe(w *worker, timeout time.Duration) error {
	mine, theirs, err := socketpair(syscall.SOCK_STREAM, "probe")
	if err != nil {
		return err
	}
	err = send(w.ctl, message{Type: msgProbe}, theirs, timeout)
	theirs.Close()
	if err != nil {
		mine.Close()
		return fmt.Errorf("sending the probe: %w", err)
	}
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, probeRequest); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("no answer to the probe within %v: %w", timeout, err)
	}
	if !strings.HasPrefix(line, "HTTP/1.1 ") {
		return fmt.Errorf("probe answered %q", line)
	}
	return nil
}

// probeRequest is the probe: asterisk-form, so that no route's
// components run for it (the router answers).
const probeRequest = "OPTIONS * HTTP/1.1\r\nHost: sluice-health-probe\r\nUser-Agent: sluice-health-probe\r\nConnection: close\r\n\r\n"

// prober probes w every interval until it exits, reporting the first
// success and any failure. A probe that took a quarter more than its
// timeout to fail was not timed by the worker alone: the master was not
// running (stopped, or starved of CPU) while it waited, so it is tried
// again once before the worker is blamed.
func (m *Master) prober(w *worker, interval, timeout time.Duration) {
	first := true
	for {
		start := time.Now()
		err := probe(w, timeout)
		if took := time.Since(start); err != nil && took > timeout+timeout/4 {
			m.log.Warn("a health probe outlasted its timeout while the master was not running; probing again", "worker", w.id, "took", took.Round(time.Millisecond))
			err = probe(w, timeout)
		}
		select {
		case <-w.exited:
			return
		default:
		}
		switch {
		case err != nil:
			m.events <- event{w: w, kind: evUnhealthy, err: err}
			return
		case first:
			first = false
			m.events <- event{w: w, kind: evHealthy}
		}
		select {
		case <-w.exited:
			return
		case <-time.After(interval):
		}
	}
}

// handle acts on a worker's event.
func (m *Master) handle(e event) {
	if e.up != nil {
		m.handleUpgrade(e)
		return
	}
	w := e.w
	switch e.kind {
	case evMessage:
		switch e.msg.Type {
		case msgReady:
			w.ready, w.lastBeat = true, time.Now()
			go m.prober(w, w.gen.health.Interval, w.gen.health.Timeout)
			m.sendOverrides(w)
		case msgBeat:
			w.lastBeat = time.Now()
			if e.msg.Stats != nil {
				w.stats = *e.msg.Stats
			}
		case msgError:
			w.err = e.msg.Error
		case msgClosed:
			w.closed = true
			m.checkClosed()
		case msgPurge:
			m.relayPurge(w, e.msg)
		case msgPurged:
			m.purges.deliver(w, e.msg)
		case msgUpstreamDone, msgUpstreamsDone:
			m.upstreams.deliver(w, e.msg)
		case msgScrape:
			m.relayScrape(w, e.msg)
		case msgScraped:
			m.scrapes.deliver(w, e.msg)
		}
	case evHealthy:
		w.healthy = true
		w.gen.failures[w.slot] = 0
		if m.pending == w.gen {
			m.promote()
		}
	case evUnhealthy:
		if w.retiring {
			return
		}
		m.log.Error("worker failed its health check; killing it", "worker", w.id, "pid", w.cmd.Process.Pid, "error", e.err)
		w.kill()
	case evExit:
		m.releaseUDP(w) // its socket goes to the next worker; its connections, to a stateless reset
		m.exited(w, e.err)
		m.steer()
		m.checkClosed()
	case evRestart:
		g := w.gen
		if (g == m.cur || g == m.pending) && g.workers[w.slot] == nil {
			m.startWorker(g, w.slot)
		}
	}
}

// exited handles the end of w's process: a retiring worker is done; a
// serving one is replaced, at once the first time, then after a back-off.
func (m *Master) exited(w *worker, err error) {
	why := w.err
	if why == "" && err != nil {
		why = err.Error()
	} else if why == "" {
		why = "exited"
	}
	if w.retiring {
		m.old = slices.DeleteFunc(m.old, func(o *worker) bool { return o == w })
		m.log.Info("worker stopped", "worker", w.id)
		return
	}
	g := w.gen
	if g != m.cur && g != m.pending || g.workers[w.slot] != w {
		return
	}
	g.workers[w.slot] = nil
	if g == m.pending && !w.healthy {
		m.abort(w, why)
		return
	}
	g.restarts[w.slot]++
	g.failures[w.slot]++
	delay := backoff(g.failures[w.slot])
	attrs := []any{"worker", w.id, "error", why, "restarts", g.restarts[w.slot], "restart_in", delay}
	if g.failures[w.slot] >= crashLoop {
		m.log.Error("worker crash loop: it keeps failing before it is healthy", attrs...)
	} else {
		m.log.Error("worker exited; replacing it", attrs...)
	}
	next := &worker{gen: g, slot: w.slot}
	time.AfterFunc(delay, func() { m.events <- event{w: next, kind: evRestart} })
}

// crashLoop is how many failures in a row, each before the worker became
// healthy, make a crash loop in the log.
const crashLoop = 3

// backoff is the wait before the n-th restart in a row of a worker that
// failed before it became healthy: none the first time, then 100ms
// doubling up to 30s.
func backoff(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	d := 100 * time.Millisecond << min(n-2, 9)
	return min(d, 30*time.Second)
}

// checkBeats kills the workers whose heartbeats stopped for longer than
// the health timeout, and those not ready that long after their start
// (plus the time a config may take to build).
//
// If the master itself did not run for a while (its previous check was
// longer ago than stallAfter: it was stopped, or starved of CPU), the
// heartbeats it did not read say nothing of the workers: their clocks
// start again from now, and none is killed for that gap.
func (m *Master) checkBeats() {
	now := time.Now()
	gap := now.Sub(m.lastCheck)
	m.lastCheck = now
	stalled := gap > m.stallAfter()
	if stalled {
		m.log.Warn("the master did not run for a while; the workers' health clocks start again", "gap", gap.Round(time.Millisecond))
	}
	for _, g := range []*generation{m.cur, m.pending} {
		if g == nil {
			continue
		}
		for _, w := range g.workers {
			if w == nil || w.retiring || w.cmd == nil {
				continue
			}
			switch {
			case stalled && w.ready:
				w.lastBeat = now
			case stalled:
				w.started = w.started.Add(gap)
			case w.ready && now.Sub(w.lastBeat) > g.health.Timeout:
				m.log.Error("worker missed its heartbeats; killing it", "worker", w.id, "pid", w.cmd.Process.Pid, "last", w.lastBeat.Format(time.RFC3339Nano))
				w.kill()
			case !w.ready && now.Sub(w.started) > g.health.Timeout+startAllowance:
				m.log.Error("worker not ready in time; killing it", "worker", w.id, "pid", w.cmd.Process.Pid)
				w.err = "not ready in time"
				w.kill()
			}
		}
	}
}

// startAllowance is how long a worker may take to build its config and
// say it serves, beyond the health timeout.
const startAllowance = 30 * time.Second

// stallAfter is how long the master may go between two health checks
// before checkBeats takes it that the master, not its workers, stopped:
// a check interval and a quarter of the health timeout, far beyond a
// timer's jitter. The checks keep the serving generation's interval, or
// the first one's while none serves (see Run).
func (m *Master) stallAfter() time.Duration {
	g := m.cur
	if g == nil {
		g = m.pending
	}
	h := config.Health{}.WithDefaults()
	if g != nil {
		h = g.health
	}
	return h.Interval + h.Timeout/4
}

// sendView sends every ready worker the status of all workers (for the
// status page, components.Workers): those serving, those starting, and
// those draining or stopping.
func (m *Master) sendView() {
	var all []*worker
	for _, g := range []*generation{m.cur, m.pending} {
		if g != nil {
			for _, w := range g.workers {
				if w != nil && !w.retiring && w.cmd != nil {
					all = append(all, w)
				}
			}
		}
	}
	for _, w := range m.old {
		if w.cmd != nil {
			all = append(all, w)
		}
	}
	slices.SortFunc(all, func(a, b *worker) int { return a.id - b.id })
	view := make([]components.WorkerStatus, 0, len(all))
	for _, w := range all {
		state := "serving"
		switch {
		case w.retiring && w.draining:
			state = "draining"
		case w.retiring:
			state = "stopping"
		case !w.healthy:
			state = "starting"
		}
		view = append(view, components.WorkerStatus{
			ID: w.id, PID: w.cmd.Process.Pid, Started: w.started, State: state,
			Restarts: w.restarts, Connections: w.stats.Open, Requests: w.stats.Requests,
			Memory: residentBytes(w.cmd.Process.Pid),
		})
	}
	msg := message{Type: msgView, Workers: view}
	for _, w := range all {
		if w.ready {
			// Not on Run's goroutine: a stopped worker's full socket
			// buffer must not hold the master up.
			go send(w.ctl, msg, nil, time.Second)
		}
	}
}
