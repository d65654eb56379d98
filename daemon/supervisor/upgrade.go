//go:build linux

package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/daemon"
)

// A binary upgrade (SIGUSR2, Master.Upgrade) hands the listening sockets
// from the running master to a new master process of the binary at the
// path the running one was started from. The new master inherits:
//
//	3      the upgrade channel: its end of a SOCK_SEQPACKET socketpair
//	       with the old master, one JSON message per packet; the new
//	       master sends msgReady once its first workers are healthy, or
//	       msgError before it exits for want of starting
//	4 + i  the listening socket of inheritance.Listeners[i]
//	4 + len(Listeners) + ...
//	       the UDP sockets of inheritance.UDP's groups, group after
//	       group, each's in its order in the group
//
// and the environment variable upgradeEnv, the JSON inheritance.
const (
	fdUpgrade   = 3
	fdInherited = 4
)

// upgradeEnv is the environment variable that makes a master the new
// one of an upgrade; the master unsets it at once, so that what it
// starts does not inherit it.
const upgradeEnv = "SLUICE_UPGRADE"

// inheritance is what an old master hands the new one.
type inheritance struct {
	NextID    int                 `json:"next_id"` // the last worker id given: the new master's continue from it
	Listeners []inheritedListener `json:"listeners"`
	UDP       []inheritedGroup    `json:"udp,omitempty"`
	Secret    bool                `json:"secret,omitempty"` // the QUIC secret follows on the upgrade channel (msgSecret)
}

// inheritedGroup is the UDP sockets of an address with http3 handed
// over (quic.go): the new master's workers join the old one's steering.
type inheritedGroup struct {
	Address config.Address    `json:"address"`
	Bound   string            `json:"bound"` // the TCP socket's, as bound
	N       int               `json:"n"`     // sockets, by index in the group
	Tags    map[uint32]uint32 `json:"tags"`  // the old master's workers' tags → their sockets' indices
}

// inheritedListener is one listening socket handed over.
type inheritedListener struct {
	Address config.Address `json:"address"` // as the old master's config wrote it
	Bound   string         `json:"bound"`   // as bound: a port 0 resolved
}

// upgrading is a binary upgrade under way, in the old master.
type upgrading struct {
	cmd    *exec.Cmd
	ctl    *net.UnixConn
	exited chan struct{} // closed when the new master has been waited for
	timer  *time.Timer   // the deadline for its workers to be healthy
	why    string        // what the new master said when it could not start
}

// Upgrade starts a binary upgrade (see docs/workers.md), on Run's
// goroutine; it returns at once, and requests pending together start one,
// as Reload's do. Safe for any goroutine; nothing happens once Run has
// returned.
func (m *Master) Upgrade() { m.ask(&m.wantUpgrade) }

// startedFrom returns the absolute path of the binary this process was
// started from, as its command line named it (os.Args[0]), for a binary
// upgrade to run what is at that path now, as nginx does. os.Executable
// would name the file this process runs, which an upgrade replaces.
func startedFrom() (string, error) {
	arg0 := os.Args[0]
	if strings.Contains(arg0, "/") {
		return filepath.Abs(arg0)
	}
	p, err := exec.LookPath(arg0)
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}

// upgradeCommand returns the command that starts the new master.
func (m *Master) upgradeCommand() (*exec.Cmd, error) {
	if m.UpgradeCommand != nil {
		return m.UpgradeCommand(), nil
	}
	if m.binary == "" {
		return nil, errors.New("the path this program was started from is unknown")
	}
	cmd := exec.Command(m.binary, os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	return cmd, nil
}

// startUpgrade starts the new master; handleUpgrade follows it.
func (m *Master) startUpgrade() {
	switch {
	case m.NoUpgrade != "":
		m.log.Error("binary upgrade refused: " + m.NoUpgrade)
		return
	case m.up != nil:
		m.log.Warn("binary upgrade already under way")
		return
	case m.cur == nil:
		m.log.Error("binary upgrade refused: the workers are not ready yet")
		return
	case m.pending != nil:
		m.log.Error("binary upgrade refused: a reload is under way; ask again once it is done")
		return
	}
	fail := func(err error) { m.log.Error("binary upgrade failed; the old master keeps serving", "error", err) }
	cmd, err := m.upgradeCommand()
	if err != nil {
		fail(err)
		return
	}
	mine, theirs, err := socketpair(syscall.SOCK_SEQPACKET, "upgrade")
	if err != nil {
		fail(err)
		return
	}
	defer theirs.Close()
	ctl, err := fileConn(mine)
	if err != nil {
		fail(err)
		return
	}
	inh := inheritance{NextID: m.nextID}
	cmd.ExtraFiles = []*os.File{theirs}
	for bound, a := range m.bound {
		inh.Listeners = append(inh.Listeners, inheritedListener{Address: a, Bound: strings.TrimPrefix(bound, a.Network+" ")})
	}
	slices.SortFunc(inh.Listeners, func(a, b inheritedListener) int { return strings.Compare(a.Bound, b.Bound) })
	for _, l := range inh.Listeners {
		cmd.ExtraFiles = append(cmd.ExtraFiles, m.lns[l.Address])
	}
	inh.UDP, cmd.ExtraFiles = m.handUDP(cmd.ExtraFiles)
	inh.Secret = true
	b, _ := json.Marshal(inh)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, upgradeEnv+"=") }), upgradeEnv+"="+string(b))
	if cmd.Stdin == nil {
		cmd.Stdin = os.Stdin
	}
	if cmd.Stdout == nil {
		cmd.Stdout = os.Stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	// During the hand-over the pid file names the new master, and the
	// old one is at PATH.oldbin.
	if m.pidFile != "" {
		if err := os.Rename(m.pidFile, m.pidFile+".oldbin"); err != nil {
			ctl.Close()
			fail(err)
			return
		}
	}
	if err := m.strays.start(cmd); err != nil {
		ctl.Close()
		m.restorePidFile()
		fail(err)
		return
	}
	up := &upgrading{cmd: cmd, ctl: ctl, exited: make(chan struct{})}
	m.up = up
	// The secret on the channel, not in the environment, which others
	// of the same user may read.
	if err := send(ctl, message{Type: msgSecret, Secret: m.secret()}, nil, time.Second); err != nil {
		m.log.Error("binary upgrade: cannot hand over the QUIC secret; the new workers' stateless resets will not match the old ones'", "error", err)
	}
	ctlDone := make(chan struct{})
	go func() {
		defer close(ctlDone)
		for {
			msg, f, err := receive(ctl)
			if f != nil {
				f.Close()
			}
			if err != nil {
				return
			}
			m.events <- event{up: up, kind: evUpgradeMessage, msg: msg}
		}
	}()
	go func() {
		err := cmd.Wait()
		m.strays.reaped(cmd.Process.Pid)
		close(up.exited)
		<-ctlDone // what it said before it exited comes first
		m.events <- event{up: up, kind: evUpgradeExit, err: err}
	}()
	deadline := m.cur.health.Timeout + startAllowance
	up.timer = time.AfterFunc(deadline, func() { m.events <- event{up: up, kind: evUpgradeTimeout} })
	m.log.Info("binary upgrade: new master started", "pid", cmd.Process.Pid, "binary", cmd.Path)
}

// handleUpgrade acts on an event of the upgrade under way.
func (m *Master) handleUpgrade(e event) {
	up := e.up
	if up != m.up {
		return // a finished upgrade's late news
	}
	switch e.kind {
	case evUpgradeMessage:
		switch e.msg.Type {
		case msgReady:
			m.handOver()
		case msgError:
			up.why = e.msg.Error
		}
	case evUpgradeExit:
		why := up.why
		if why == "" {
			why = "the new master exited"
			if e.err != nil {
				why += ": " + e.err.Error()
			}
		}
		m.upgradeFailed(why)
	case evUpgradeTimeout:
		up.cmd.Process.Signal(syscall.SIGKILL) // its workers follow it (Pdeathsig)
		m.upgradeFailed(fmt.Sprintf("the new master's workers were not healthy within %v; it was killed", m.cur.health.Timeout+startAllowance))
	}
}

// handOver ends this master's part: its workers drain, and Run returns.
func (m *Master) handOver() {
	up := m.up
	m.up = nil
	up.timer.Stop()
	// The channel stays open until this master ends: its end tells the
	// new master that the old workers are gone (their tags may go).
	m.handedCtl = up.ctl
	m.handedOver = true
	m.log.Info("binary upgrade: the new master's workers are healthy; the old workers drain", "new_master", up.cmd.Process.Pid)
	m.notify(func() error { return daemon.NotifyMainPID(up.cmd.Process.Pid) })
}

// upgradeFailed gives the upgrade up: the pid file names this master
// again.
func (m *Master) upgradeFailed(why string) {
	up := m.up
	m.up = nil
	up.timer.Stop()
	up.ctl.Close()
	m.restorePidFile()
	m.steer() // the new master's program, if it attached one, goes
	m.log.Error("binary upgrade failed; the old master keeps serving", "error", why)
}

// abortUpgrade stops the new master of an upgrade under way when this
// one stops: gracefully, killed if it is still there after the grace
// period and a margin.
func (m *Master) abortUpgrade() {
	up := m.up
	m.up = nil
	up.timer.Stop()
	up.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-up.exited:
	case <-time.After(m.grace() + killMargin):
		up.cmd.Process.Signal(syscall.SIGKILL)
		<-up.exited
	}
	up.ctl.Close()
	m.restorePidFile()
	m.steer()
	m.log.Info("binary upgrade abandoned: the old master stops")
}

// restorePidFile moves PATH.oldbin back to PATH after a failed upgrade.
func (m *Master) restorePidFile() {
	if m.pidFile == "" {
		return
	}
	if err := os.Rename(m.pidFile+".oldbin", m.pidFile); err != nil {
		m.log.Error("cannot restore the pid file", "error", err)
	}
}

// Upgrading reports whether this process is the new master of a binary
// upgrade, started by a running master to take over from it: the
// program must run a Master then (whatever the config's workers say),
// whose Run takes the sockets handed over and reports to the old master.
func Upgrading() bool {
	_, ok := os.LookupEnv(upgradeEnv)
	return ok
}

// inherit takes, in the new master of an upgrade, what the old one
// handed over: the upgrade channel and the listening sockets, which
// openListeners uses for the addresses they were opened for.
func (m *Master) inherit() error {
	env, ok := os.LookupEnv(upgradeEnv)
	if !ok {
		return nil
	}
	os.Unsetenv(upgradeEnv)
	var inh inheritance
	if err := json.Unmarshal([]byte(env), &inh); err != nil {
		return fmt.Errorf("%s: %w", upgradeEnv, err)
	}
	ctl, err := fileConn(os.NewFile(fdUpgrade, "upgrade"))
	if err != nil {
		return fmt.Errorf("the upgrade channel: %w", err)
	}
	m.upCtl = ctl
	m.nextID = inh.NextID
	m.inherited = map[config.Address]bool{}
	for i, l := range inh.Listeners {
		m.handed = append(m.handed, handedListener{l, os.NewFile(uintptr(fdInherited+i), "listener "+l.Bound)})
	}
	fd := fdInherited + len(inh.Listeners)
	for _, g := range inh.UDP {
		h := handedGroup{inheritedGroup: g}
		for range g.N {
			h.socks = append(h.socks, socketFile(fd, "udp "+g.Bound))
			fd++
		}
		m.handedUDP = append(m.handedUDP, h)
	}
	// An old master that hands over no secret steers no datagrams: its
	// workers bound their own UDP sockets, which a socket bound here
	// would join after them, at indices this master cannot know. This
	// one's workers do as they did, until a restart.
	m.noSteering = !inh.Secret
	if inh.Secret {
		ctl.SetReadDeadline(time.Now().Add(10 * time.Second)) // sent as the old master started this one
		msg, f, err := receive(ctl)
		if f != nil {
			f.Close()
		}
		ctl.SetReadDeadline(time.Time{})
		if err != nil || msg.Type != msgSecret || len(msg.Secret) != daemon.QUICSecretSize {
			return fmt.Errorf("the upgrade channel: no QUIC secret (%v)", err)
		}
		m.quicSecret = msg.Secret
	}
	return nil
}

// handedListener is a socket the old master handed over, not yet used.
type handedListener struct {
	inheritedListener
	f *os.File
}

// takeHanded returns the handed-over socket for a, if there is one, and
// the address it is bound to.
func (m *Master) takeHanded(a config.Address) (*os.File, string) {
	for i, h := range m.handed {
		if h.Address == a || h.Address.Network == a.Network && h.Bound == a.Addr {
			m.handed = slices.Delete(m.handed, i, i+1)
			return h.f, h.Bound
		}
	}
	return nil, ""
}

// closeHanded closes the handed-over sockets the config does not use.
func (m *Master) closeHanded() {
	for _, h := range m.handed {
		h.f.Close()
	}
	m.handed = nil
}

// tellOldMaster reports the new master's outcome to the old one: ready
// (err nil), or the error it exits with.
func (m *Master) tellOldMaster(err error) {
	if m.upCtl == nil {
		return
	}
	msg := message{Type: msgReady, PID: os.Getpid()}
	if err != nil {
		msg = message{Type: msgError, Error: err.Error()}
	}
	if err := send(m.upCtl, msg, nil, time.Second); err != nil && m.log != nil {
		m.log.Error("cannot tell the old master", "error", err)
	}
	if err == nil && m.hasForeignTags() {
		// The old master's workers drain: their tags keep their sockets
		// until it ends, which closes the channel.
		go m.awaitOldMaster(m.upCtl)
	} else {
		m.upCtl.Close()
	}
	m.upCtl = nil
	if err == nil {
		m.inherited = nil // the sockets are this master's from now on
	}
}
