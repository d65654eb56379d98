//go:build linux

package supervisor

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/admin"
	"github.com/sluice-server/sluice/certs"
	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/daemon"
	"github.com/sluice-server/sluice/sock"
)

// Master runs a config with worker processes: it reads and validates the
// config, opens every listen address once, and starts the config's
// number of workers, each a process of the same binary that inherits the
// listening sockets and serves them with a daemon.Server. The kernel
// spreads new connections over the workers through each socket's one
// accept queue; the master is not in the data path. It checks the
// workers' health, replaces those that die or stop answering, reloads
// by starting new workers and draining the old, hands its sockets over
// to a new master on a binary upgrade, and stops them all.
//
// Set the exported fields before Run. Reload, ReopenLogs and Upgrade are
// safe for concurrent use, and do nothing once Run has returned; Run
// stops when its context is done.
//
// Run makes the process the child subreaper of its descendants
// (PR_SET_CHILD_SUBREAPER), so that nothing a worker starts outlives it:
// a child of the process that Run did not start is reaped once it has
// exited, and killed first (and logged) if it is in a process group
// other than the process's own (a CGI program's child left by a worker
// that was killed, say). So a program that runs a Master must not start
// processes of its own.
type Master struct {
	// Read returns the config file's name (for messages and relative
	// paths) and its bytes. Run calls it once, every Reload again. The
	// bytes are what workers get, so that a file edited between the
	// master's check and a worker's start cannot split them.
	Read func() (name string, data []byte, err error)

	// Prepare, if set, adjusts each config the master loads (command-line
	// overrides of listen, workers, pid_file) before it is used.
	Prepare func(*config.Config) error

	// Grace bounds how long a worker's requests in flight get to finish
	// when it stops or drains. Zero means daemon.DefaultGrace.
	Grace time.Duration

	// Command returns the command that starts a worker; nil runs this
	// program's own binary (/proc/self/exe: the file this process runs,
	// even once an upgrade replaced it on disk) with the argument
	// WorkerCommand. Run sets its ExtraFiles, Stderr, and
	// SysProcAttr.Pdeathsig.
	Command func() *exec.Cmd

	// UpgradeCommand returns the command that starts a new master on a
	// binary upgrade (Upgrade, SIGUSR2); nil runs the binary at the path
	// this program was started from (os.Args[0], made absolute when Run
	// starts) with the same arguments. Run sets its ExtraFiles and
	// Env, and Stdin, Stdout and Stderr to this process's if nil.
	UpgradeCommand func() *exec.Cmd

	// QUICSecretFile, if set, is the file the workers' QUIC secret is
	// kept in across restarts (see daemon.LoadQUICSecret): read, or
	// made, when the master first needs the secret (workers to start
	// for a config with http3, or a binary upgrade to hand it to).
	// Where it cannot be, a warning is logged and the secret is random,
	// as without it. A new master of a binary upgrade takes the old
	// one's secret instead.
	QUICSecretFile string

	// NoUpgrade, if set, is why a binary upgrade cannot be had here
	// (under an init that ends with this process, say): Upgrade then
	// logs it as an error and does nothing else.
	NoUpgrade string

	// Listen opens the listening socket for an address of the config, at
	// Run and for the addresses a reload adds; nil means daemon.Listen.
	// A program handed sockets by a service manager gives them here
	// (daemon.Activation.Listen). The master does not remove the Unix
	// socket files of sockets Listen gave it: they are not its own.
	Listen func(config.Address) (net.Listener, error)

	// Stdout and Stderr are where the config's log goes when its output
	// is stdout or stderr, the workers' included; nil means os.Stdout
	// and os.Stderr.
	Stdout, Stderr io.Writer

	// Logger receives what is logged before the config's log is set up.
	// Nil means slog.Default().
	Logger *slog.Logger

	// Serving, if set, is called with the config's name and bytes each
	// time a generation of workers takes over serving (the first, and
	// each reload's), on Run's goroutine: it must not block.
	Serving func(name string, data []byte)

	// ResumeUpstreams, if set, are the hosts of upstream sets, by set,
	// that the first workers apply as they start, as if changed through
	// the admin API (sluice serve --resume).
	ResumeUpstreams map[string][]admin.HostSpec

	// Reload, ReopenLogs and Upgrade set their want and poke Run's loop, which
	// does what is wanted, once however often it was asked meanwhile:
	// a request is never dropped, and a burst of signals costs one
	// reload. poke has capacity 1; a poke pending already suffices.
	wantReload, wantReopen, wantUpgrade atomic.Bool
	poke                                chan struct{}
	events                              chan event
	initErr                             sync.Once

	log       *slog.Logger
	logw      *lineWriter // the config's log output, shared with the workers' relayed lines
	logFile   *reopenFile
	logConfig config.Log // what m.log was set up from

	lns        map[config.Address]*os.File  // the listening sockets, in the master
	groups     map[config.Address]*udpGroup // the UDP sockets of the addresses with http3 (quic.go)
	unsteered  map[config.Address]bool      // addresses whose group would not take the steering program
	quicSecret []byte                       // the workers' QUIC secret (secret): made once, kept across reloads, handed on by an upgrade
	noSteering bool                         // an upgrade from a master that did not steer: workers bind their own UDP sockets
	foreign    map[config.Address]bool      // sockets Listen gave: their Unix socket files are not ours to remove
	bound      map[string]config.Address    // "network addr" a socket is bound to → its key in lns (port 0 resolved)
	pidFile    string
	acme       certs.Issuer // obtains the workers' ACME certificates
	nextID     int
	cur        *generation // serving
	pending    *generation // a reload's, until its workers are healthy
	old        []*worker   // draining or stopping
	again      bool        // a reload asked for while one was pending
	stopErr    error

	lastCheck time.Time // of checkBeats, which tells a stalled master by it

	purges    relays // purges relayed between workers, under way
	upstreams relays // the admin API's upstream calls to workers, under way (admin.go)

	calls            chan func()                       // the admin API's work for Run's goroutine (admin.go)
	over             chan struct{}                     // closed when Run returns
	ready            chan struct{}                     // closed when the first workers serve (Ready)
	loadData         []byte                            // a config posted to the admin API, for the next load
	loadWaiters      []chan error                      // the admin API's loads, until a reload takes them
	closing          []*closingWait                    // loads served, waiting for the old workers to stop accepting (admin.go)
	overrides        map[string][]admin.HostSpec       // the serving generation's upstream sets changed through the API
	overridesVersion int                               // counts the changes to overrides
	rotators         map[string]*components.LogRotator // by path: rotate.go
	scrapes          relays                            // metrics relayed between workers, under way

	strays  strays         // its own children, and the strays re-parented to it
	sigchld chan os.Signal // SIGCHLD: a child changed state

	binary     string        // the path this program was started from (startedFrom)
	up         *upgrading    // a binary upgrade under way
	handedOver bool          // the upgrade's new master serves: this one leaves
	handedCtl  *net.UnixConn // the channel to that new master, closed when this one ends

	// As the new master of an upgrade, until its first workers are healthy:
	upCtl     *net.UnixConn           // the channel to the old master
	handed    []handedListener        // sockets handed over, not yet used
	handedUDP []handedGroup           // UDP groups handed over, not yet used (quic.go)
	inherited map[config.Address]bool // sockets the old master still serves: never unlinked
}

// generation is one config's set of workers.
type generation struct {
	name     string
	data     []byte
	addrs    []config.Address
	n        int
	health   config.Health
	workers  []*worker // by slot; nil while a restart waits
	restarts []int     // by slot
	failures []int     // by slot: consecutive short-lived runs
	opened   []config.Address
	h3       []config.Address // the addrs that serve HTTP/3, in order
	log      config.Log       // the master's log, once the generation serves
	pidFile  string
	acme     []*config.ACME // the certificates its workers serve
	waiters  []chan error   // the admin API's loads this generation answers
	user     string         // and group: who the workers run as
	group    string
	drain    time.Duration                     // how long its workers, once replaced, keep their busy connections
	drainMax uint64                            // the resident memory all draining workers may hold (drain_max_memory)
	logs     map[string]components.LogRotation // the access log files the master rotates (rotate.go)
}

// Run serves until ctx is done, then stops the workers gracefully and
// returns nil; after a binary upgrade handed over to a new master, it
// returns nil once its workers have drained. It returns a *daemon.LoadError if the config
// cannot be loaded, a *daemon.ListenError if an address cannot be
// listened on, and an error naming the worker's own when the first
// workers cannot start.
//
// A master started by another's binary upgrade (see Upgrade) takes the
// listening sockets it was handed, and tells the old master when its
// workers are healthy, or why it cannot start.
func (m *Master) Run(ctx context.Context) (err error) {
	m.init()
	defer close(m.over)
	m.sigchld = make(chan os.Signal, 1)
	signal.Notify(m.sigchld, syscall.SIGCHLD)
	defer signal.Stop(m.sigchld)
	adoptErr := m.strays.adopt()
	if err := m.inherit(); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			m.tellOldMaster(err)
		}
	}()
	m.binary, _ = startedFrom()
	first, err := m.load()
	if err != nil {
		m.closeHanded()
		return err
	}
	m.lns = map[config.Address]*os.File{}
	m.groups = map[config.Address]*udpGroup{}
	m.unsteered = map[config.Address]bool{}
	defer m.closeHandedUDP() // those of a binary upgrade the config does not use
	m.bound = map[string]config.Address{}
	m.foreign = map[config.Address]bool{}
	err = m.openListeners(first)
	m.closeHanded()
	if err != nil {
		m.closeLog()
		return err
	}
	if m.pidFile != "" {
		if err := daemon.WritePidFile(m.pidFile); err != nil {
			m.log.Error("cannot write the pid file", "error", err, daemon.FixAttr(daemon.PidFileFix(err)))
			m.closeListeners(nil)
			m.closeLog()
			return err
		}
	}
	m.log.Info("master started", "workers", first.n, "config", first.name)
	if adoptErr != nil {
		m.log.Warn("cannot adopt what the workers leave behind: a process a CGI program started may outlive its worker", "error", adoptErr)
	}
	m.pending = first
	m.overrides = maps.Clone(m.ResumeUpstreams)
	m.startGeneration(first)
	m.closeHandedUDP()

	interval := first.health.Interval
	check := time.NewTicker(interval)
	defer check.Stop()
	sweep := time.NewTicker(sweepEvery)
	defer sweep.Stop()
	var later <-chan time.Time // a sweep a SIGCHLD asked for, not yet due
	m.lastCheck = time.Now()
	for {
		if m.cur != nil && m.cur.health.Interval != interval { // a reload changed it
			interval = m.cur.health.Interval
			check.Reset(interval)
		}
		select {
		case <-ctx.Done():
			return m.shutdown(nil)
		case <-m.poke:
			if m.wantReopen.Swap(false) {
				m.reopen()
			}
			if m.wantReload.Swap(false) {
				m.reload()
			}
			if m.wantUpgrade.Swap(false) {
				m.startUpgrade()
			}
		case e := <-m.events:
			m.handle(e)
		case f := <-m.calls:
			f()
		case <-check.C:
			m.checkBeats()
			m.boundDrains()
			m.sendView()
			m.rotateLogs()
		case <-m.sigchld:
			if wait := m.strays.wait(time.Now(), true); wait <= 0 {
				m.strays.sweep(m.log)
			} else if later == nil {
				later = time.After(wait)
			}
		case <-later:
			later = nil
			m.strays.sweep(m.log)
		case <-sweep.C:
			if m.strays.wait(time.Now(), false) <= 0 {
				m.strays.sweep(m.log)
			}
		}
		if m.stopErr != nil || m.handedOver {
			return m.shutdown(m.stopErr)
		}
	}
}

func (m *Master) init() {
	m.initErr.Do(func() {
		m.poke = make(chan struct{}, 1)
		m.events = make(chan event, 64)
		m.calls = make(chan func())
		m.over = make(chan struct{})
		m.ready = make(chan struct{})
	})
}

// ask sets want and pokes Run's loop; it never blocks. A request made
// before Run's loop starts is done as it starts.
func (m *Master) ask(want *atomic.Bool) {
	m.init()
	want.Store(true)
	select {
	case m.poke <- struct{}{}:
	default: // a poke is pending: the loop sees want when it takes it
	}
}

// Reload reads the config again (see docs/workers.md), on Run's
// goroutine. It returns at once; requests that come before the loop
// takes the first are done once. Safe for any goroutine, a signal
// handler's included.
func (m *Master) Reload() { m.ask(&m.wantReload) }

// ReopenLogs reopens the master's log file and tells every worker to
// reopen theirs, on Run's goroutine; it returns at once, and requests
// pending together are done once, as Reload's are.
func (m *Master) ReopenLogs() { m.ask(&m.wantReopen) }

func (m *Master) grace() time.Duration {
	if m.Grace > 0 {
		return m.Grace
	}
	return daemon.DefaultGrace
}

// load reads the config, validates it and returns its generation.
func (m *Master) load() (*generation, error) {
	name, data, err := m.Read()
	if m.loadData != nil && m.cur != nil { // posted to the admin API
		name, data, err = m.cur.name, m.loadData, nil
		m.loadData = nil
	}
	if err != nil {
		return nil, &daemon.LoadError{Err: err}
	}
	cfg, err := (&config.Loader{}).Parse(name, data)
	if err != nil {
		return nil, &daemon.LoadError{Err: err}
	}
	defer cfg.Close()
	if m.Prepare != nil {
		if err := m.Prepare(cfg); err != nil {
			return nil, &daemon.LoadError{Err: err}
		}
	}
	if m.log == nil { // the first config sets up the master's log (a reload's: applyLog)
		if err := m.openLog(cfg.Log); err != nil {
			return nil, err
		}
		m.pidFile = cfg.PidFile
	}
	if err := daemon.CheckUser(cfg.User, cfg.Group); err != nil {
		m.log.Error("cannot serve as the config's user", "error", err)
		return nil, err // before starting workers that would all fail so
	}
	for _, w := range cfg.Warnings {
		if w.Line > 0 {
			m.log.Warn(w.Msg, "at", fmt.Sprintf("%s:%d:%d", w.File, w.Line, w.Col))
		} else {
			m.log.Warn(w.Msg)
		}
	}
	addrs := slices.Clone(cfg.Listen)
	for i, a := range addrs { // a socket already open for the address, as bound (a port 0 resolved)
		if k, ok := m.bound[a.Network+" "+a.Addr]; ok {
			addrs[i] = k
		}
	}
	var h3 []config.Address
	for i, a := range cfg.Listen {
		if servesHTTP3(cfg, a) {
			h3 = append(h3, addrs[i])
		}
	}
	n := cfg.Workers
	if n == config.WorkersAuto {
		n = runtime.NumCPU()
	}
	if n < 1 {
		n = 1 // a reload to workers: 0 keeps one worker until a restart
		m.log.Warn("workers: 0 takes effect on a restart; keeping 1 worker")
	}
	return &generation{
		name: name, data: data, addrs: addrs, n: n, h3: h3,
		log: cfg.Log, pidFile: cfg.PidFile,
		acme: cfg.ACMESections(), user: cfg.User, group: cfg.Group,
		logs:     cfg.LogRotations(),
		health:   cfg.Health.WithDefaults(),
		drain:    cmp.Or(cfg.DrainTimeout, config.DefaultDrainTimeout),
		drainMax: drainMaxMemory(cfg.DrainMaxMemory),
		workers:  make([]*worker, n),
		restarts: make([]int, n),
		failures: make([]int, n),
	}, nil
}

// openListeners opens g's addresses that are not open yet.
func (m *Master) openListeners(g *generation) error {
	for _, a := range g.addrs {
		if m.lns[a] != nil {
			continue
		}
		if f, bound := m.takeHanded(a); f != nil {
			m.lns[a] = f
			m.bound[a.Network+" "+bound] = a
			m.inherited[a] = true
			g.opened = append(g.opened, a)
			m.log.Info("listening on", "addr", bound, "inherited", true)
			continue
		}
		listen := daemon.Listen
		if m.Listen != nil {
			listen = m.Listen
			m.foreign[a] = true
		}
		ln, err := listen(a)
		if err == nil {
			var f *os.File
			f, err = sock.ListenerFile(ln)
			addr := ln.Addr().String()
			if ul, ok := ln.(*net.UnixListener); ok {
				ul.SetUnlinkOnClose(false) // the socket lives on in f; closeListeners removes the file
			}
			ln.Close()
			if err == nil {
				m.lns[a] = f
				m.bound[a.Network+" "+addr] = a
				g.opened = append(g.opened, a)
				m.log.Info("listening on", "addr", addr)
				continue
			}
		}
		for _, o := range g.opened {
			m.closeListener(o)
		}
		m.log.Error("cannot listen", "addr", a.String(), "error", err, daemon.FixAttr(daemon.ListenFix(a, err)))
		return &daemon.ListenError{Addr: a, Err: err}
	}
	return nil
}

// closeListeners closes the master's sockets for the addresses keep does
// not list (all of them for nil). It removes the files of Unix sockets
// but those another master serves: one the old master of an upgrade
// handed over and still serves, or all of them once this one handed
// over to a new master.
func (m *Master) closeListeners(keep []config.Address) {
	for a := range m.lns {
		if !slices.Contains(keep, a) {
			m.closeListener(a)
		}
	}
}

// closeListener closes the master's socket for a (see closeListeners).
func (m *Master) closeListener(a config.Address) {
	m.lns[a].Close()
	if a.Network == "unix" && !m.handedOver && !m.inherited[a] && !m.foreign[a] {
		os.Remove(a.Addr)
	}
	delete(m.lns, a)
	delete(m.foreign, a)
	for k, v := range m.bound {
		if v == a {
			delete(m.bound, k)
		}
	}
}

// startGeneration starts every slot of g.
func (m *Master) startGeneration(g *generation) {
	m.acme.Logger = m.log
	if len(g.acme) > 0 {
		owner, err := daemon.ACMEOwner(g.user, g.group) // the workers' user, if this master runs as root
		if err == nil {
			err = m.acme.Issue(g.acme, owner)
		}
		if err != nil {
			m.log.Error("cannot obtain ACME certificates", "error", err)
		}
	}
	for slot := range g.workers {
		m.startWorker(g, slot)
	}
}

// reload loads the config again and starts its workers; they take over
// once healthy (see handle).
func (m *Master) reload() {
	if m.up != nil {
		m.log.Error("reload refused: a binary upgrade is under way")
		m.loadData = nil
		answerLoads(m.loadWaiters, errors.New("reload refused: a binary upgrade is under way"))
		m.loadWaiters = nil
		return
	}
	if m.pending != nil {
		m.again = true
		m.log.Info("reload requested while one is under way; it follows")
		return
	}
	m.notify(daemon.NotifyReloading)
	g, err := m.load()
	if err != nil {
		var errs config.Errors
		if errors.As(err, &errs) {
			for _, e := range errs {
				m.log.Error("invalid config", "error", e.Error())
			}
		}
		m.log.Error("reload failed; the running workers keep serving", "error", err)
		m.notify(daemon.NotifyReady)
		answerLoads(m.loadWaiters, err)
		m.loadWaiters = nil
		return
	}
	if err := m.openListeners(g); err != nil {
		m.log.Error("reload failed; the running workers keep serving", "error", err)
		m.notify(daemon.NotifyReady)
		answerLoads(m.loadWaiters, err)
		m.loadWaiters = nil
		return
	}
	g.waiters, m.loadWaiters = m.loadWaiters, nil
	m.log.Info("reloading", "config", g.name, "workers", g.n)
	m.pending = g
	m.startGeneration(g)
}

// promote makes the pending generation current once all its workers are
// healthy; the old ones drain.
func (m *Master) promote() {
	g := m.pending
	for _, w := range g.workers {
		if w == nil || !w.healthy {
			return
		}
	}
	old := m.cur
	m.cur, m.pending = g, nil
	m.steer() // new connections to the new workers; the old keep theirs
	if m.Serving != nil {
		m.Serving(g.name, g.data)
	}
	if old == nil {
		m.log.Info("workers ready", "workers", g.n)
		close(m.ready)
		if m.upCtl == nil { // a new master of an upgrade is the old one's until it hands over
			m.notify(daemon.NotifyReady)
		}
		m.tellOldMaster(nil)
	} else {
		for _, w := range old.workers {
			if w != nil {
				// The new config's bound: the operator just set it.
				m.retire(w, msgDrain, g.drain)
			}
		}
		m.overrides = nil // the new config's sets are its own
		m.overridesVersion++
		m.awaitClosed(g.waiters, old.workers)
		m.closeListeners(g.addrs)
		m.acme.Retain(g.acme)
		m.applyLog(g.log)
		m.applyPidFile(g.pidFile)
		m.log.Info("reloaded", "config", g.name, "workers", g.n)
		m.notify(daemon.NotifyReady)
	}
	if m.again {
		m.again = false
		m.reload()
	}
}

// abort gives up the pending generation after one of its workers failed.
func (m *Master) abort(w *worker, why string) {
	g := m.pending
	m.pending = nil
	for _, o := range g.workers {
		if o != nil && o != w {
			// A new worker may be serving already (it accepts on the
			// shared sockets before its probe): it drains, finishing its
			// requests, rather than being killed with them.
			if o.ctl != nil {
				m.retire(o, msgDrain, g.drain)
				continue
			}
			o.retiring = true
			o.kill()
			m.old = append(m.old, o)
		}
	}
	for _, a := range g.opened {
		if m.cur == nil || !slices.Contains(m.cur.addrs, a) {
			m.closeListener(a)
		}
	}
	m.steer()
	if m.cur == nil {
		m.stopErr = fmt.Errorf("worker %d could not start: %s", w.id, why)
		m.log.Error("workers cannot start", "worker", w.id, "error", why)
		return
	}
	m.log.Error("reload failed; the running workers keep serving", "worker", w.id, "error", why)
	answerLoads(g.waiters, fmt.Errorf("a new worker could not start: %s; the running workers keep serving", why))
	m.acme.Retain(m.cur.acme)
	m.notify(daemon.NotifyReady)
	if m.again {
		m.again = false
		m.reload()
	}
}

// retire tells w to stop (msgStop) or drain (msgDrain), and kills it if
// it is still there after the grace period and a margin. A drain with a
// bound (hard) keeps the worker's busy connections (tunnels, streams,
// long downloads) for up to hard, its idle ones for the grace period.
func (m *Master) retire(w *worker, how string, hard time.Duration) {
	if w.retiring {
		return
	}
	w.retiring = true
	w.draining = how == msgDrain
	m.old = append(m.old, w)
	msg := message{Type: how, Grace: m.grace()}
	if how == msgDrain {
		msg.Hard = hard
	}
	if err := send(w.ctl, msg, nil, time.Second); err != nil {
		w.kill()
		return
	}
	time.AfterFunc(max(m.grace(), msg.Hard)+killMargin, w.kill)
}

// endDrain tells w, a worker draining, to stop: what it still holds gets
// the grace period, not the rest of drain_timeout; it is killed if it is
// still there after that and a margin.
func (m *Master) endDrain(w *worker) {
	w.draining = false
	send(w.ctl, message{Type: msgStop, Grace: m.grace()}, nil, time.Second)
	time.AfterFunc(m.grace()+killMargin, w.kill)
}

// killMargin is how long past the grace period a stopping worker has to
// exit before it is killed.
const killMargin = 5 * time.Second

// shutdown stops every worker gracefully and waits for them, then closes
// the listeners, the pid file and the log.
func (m *Master) shutdown(failure error) error {
	var all []*worker
	for _, g := range []*generation{m.cur, m.pending} {
		if g != nil {
			for _, w := range g.workers {
				if w != nil {
					all = append(all, w)
				}
			}
		}
	}
	how := msgStop
	switch {
	case m.handedOver:
		how = msgDrain // the new master's workers accept on the same sockets
	case failure == nil:
		m.log.Info("shutting down", "grace", m.grace())
	}
	if !m.handedOver {
		m.notify(daemon.NotifyStopping)
	}
	if m.up != nil {
		m.abortUpgrade()
	}
	var hard time.Duration
	if m.handedOver && m.cur != nil {
		// The new master's workers take the new connections; these keep
		// what they hold as after a reload.
		hard = m.cur.drain
	}
	for _, w := range all {
		m.retire(w, how, hard)
	}
	if how == msgStop {
		// Workers draining after a reload stop too: what they still
		// hold gets the grace period, not the rest of drain_timeout.
		for _, w := range m.old {
			if w.draining {
				m.endDrain(w)
			}
		}
	}
	if !m.handedOver {
		// The workers close their copies of the listening sockets as
		// they begin to stop; the master's own would keep them
		// listening, and the kernel queueing connections no one will
		// accept, for the whole grace period. Closed now, new
		// connections are refused at once, as the docs promise. (A
		// master that handed over keeps them for the new master's
		// workers until the end, as before.)
		m.closeListeners(nil)
	}
	for len(m.old) > 0 {
		w := m.old[0]
		<-w.exited
		m.old = slices.DeleteFunc(m.old, func(o *worker) bool { return o == w })
	}
	m.strays.finish(m.log)
	m.acme.Close()
	m.closeListeners(nil)
	m.closeGroups()
	if m.handedCtl != nil {
		m.handedCtl.Close()
	}
	if m.pidFile != "" {
		daemon.RemovePidFile(m.pidFile)
		daemon.RemovePidFile(m.pidFile + ".oldbin")
	}
	m.log.Info("stopped")
	m.closeLog()
	return failure
}

// reopen reopens the master's log and the workers'.
func (m *Master) reopen() {
	if m.logFile != nil {
		if err := m.logFile.Reopen(); err != nil {
			m.log.Error("cannot reopen the log", "error", err, daemon.FixAttr(config.FileFix(err)))
		}
	}
	for _, g := range []*generation{m.cur, m.pending} {
		if g == nil {
			continue
		}
		for _, w := range g.workers {
			if w != nil && !w.retiring {
				send(w.ctl, message{Type: msgReopen}, nil, time.Second)
			}
		}
	}
	m.log.Info("log files reopened")
}

// notify tells the service manager (see daemon.Notify), logging a
// failure.
func (m *Master) notify(send func() error) {
	if err := send(); err != nil {
		m.log.Warn("cannot notify the service manager", "error", err)
	}
}

// workerEnv is the environment of a worker: the master's, without what
// is the master's alone (the service manager's notification socket and
// socket activation's variables).
func workerEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "NOTIFY_SOCKET", "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES":
			return true
		}
		return false
	})
}

// command returns the command for a worker.
func (m *Master) command() (*exec.Cmd, error) {
	if m.Command != nil {
		return m.Command(), nil
	}
	cmd := exec.Command("/proc/self/exe", WorkerCommand)
	cmd.Args[0] = os.Args[0]
	return cmd, nil
}

// relay copies a worker's log lines to the master's log output, each
// marked with the worker's id: worker=ID at the end of a text line, a
// "worker" member first in a JSON one.
func (m *Master) relay(id int, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "{") {
			line = `{"worker":` + strconv.Itoa(id) + "," + line[1:]
		} else {
			line += " worker=" + strconv.Itoa(id)
		}
		m.logw.WriteLine(line)
	}
}

// marshalSetup encodes su for the setup pipe.
func marshalSetup(su setup) []byte {
	b, _ := json.Marshal(su)
	return b
}

// applyPidFile moves the pid file to name, as a reload asks: the new
// one is written before the old one is removed.
func (m *Master) applyPidFile(name string) {
	m.pidFile = daemon.SwitchPidFile(m.pidFile, name, m.log)
}
