//go:build linux

package supervisor

import (
	"crypto/rand"
	"encoding/binary"
	"maps"
	"net"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/daemon"
	"github.com/sluice-server/sluice/quicsteer"
	"github.com/sluice-server/sluice/sock"
)

// HTTP/3 with workers (docs/http3.md, "Workers"). The master holds, for
// each address with http3, a SO_REUSEPORT group of UDP sockets, and
// hands each worker one of them; each worker makes its QUIC connection
// IDs with a tag of its own (quicsteer.Generator), and the master keeps
// a classic BPF program attached to the group that sends each datagram
// to the socket of the worker whose tag its connection ID carries, and
// a client's first datagrams (or a gone worker's) to the serving
// generation's sockets. A socket's index in the group is the order in
// which it joined it, and closing one moves the last into its place: so
// the master never closes a socket of a group while it steers it, and
// reuses a socket whose worker has exited for the next worker; a group
// is closed whole when no worker holds any of it and the serving
// configs no longer list the address. The workers share the master's
// QUIC secret (Master.secret), so any of them ends a connection it
// does not know with a stateless reset.

// udpGroup is the master's UDP sockets for one address with http3.
type udpGroup struct {
	socks   []*os.File        // by index in the group
	owners  []*worker         // by index: the worker it was handed to, or nil
	foreign map[uint32]uint32 // tags of an old master's workers (binary upgrade) → their indices
}

// servesHTTP3 reports whether the config's listen entry a serves HTTP/3
// (as the daemon decides it: a TLS TCP listener with http3).
func servesHTTP3(cfg *config.Config, a config.Address) bool {
	o := cfg.ListenOptions[a]
	return o != nil && o.TLS != nil && o.HTTP3 != nil && a.Network == "tcp"
}

// secret returns the workers' QUIC secret, made at the first call: the
// one kept in QUICSecretFile, or 32 random bytes. A new master of a
// binary upgrade has the old one's.
func (m *Master) secret() []byte {
	if m.quicSecret != nil {
		return m.quicSecret
	}
	if m.QUICSecretFile != "" {
		m.quicSecret = daemon.KeptQUICSecret(m.QUICSecretFile, m.log)
	}
	if m.quicSecret == nil {
		m.quicSecret = make([]byte, daemon.QUICSecretSize)
		rand.Read(m.quicSecret)
	}
	return m.quicSecret
}

// newTag returns a tag for a new worker's connection IDs, unlike any a
// live worker (or an old master's) uses.
func (m *Master) newTag() uint32 {
	for {
		var b [4]byte
		rand.Read(b[:])
		tag := binary.BigEndian.Uint32(b[:])
		if tag != 0 && !m.tagInUse(tag) {
			return tag
		}
	}
}

func (m *Master) tagInUse(tag uint32) bool {
	for _, g := range m.groups {
		if _, ok := g.foreign[tag]; ok {
			return true
		}
		for _, w := range g.owners {
			if w != nil && w.tag == tag {
				return true
			}
		}
	}
	return false
}

// udpSockets returns the UDP sockets to hand w, one per address of its
// generation's h3, in order, each taken for w in its group (a free one,
// or a new one joining the group). It returns nil for all if an address
// cannot be steered (the worker binds its own then).
func (m *Master) udpSockets(w *worker) ([]*os.File, error) {
	var files []*os.File
	for _, a := range w.gen.h3 {
		g, err := m.group(a)
		if err != nil {
			m.releaseUDP(w)
			return nil, err
		}
		if g == nil {
			m.releaseUDP(w)
			return nil, nil
		}
		i := slices.Index(g.owners, nil)
		for i >= 0 && g.foreignIndex(uint32(i)) {
			j := slices.Index(g.owners[i+1:], nil)
			if j < 0 {
				i = -1
			} else {
				i += 1 + j
			}
		}
		if i < 0 {
			f, err := m.bindUDP(a)
			if err != nil {
				m.releaseUDP(w)
				return nil, err
			}
			g.socks = append(g.socks, f)
			g.owners = append(g.owners, nil)
			i = len(g.socks) - 1
		}
		g.owners[i] = w
		files = append(files, g.socks[i])
	}
	return files, nil
}

func (g *udpGroup) foreignIndex(i uint32) bool {
	for _, j := range g.foreign {
		if j == i {
			return true
		}
	}
	return false
}

// group returns the group of a, opening its first socket and attaching
// a program if it is new; nil if the kernel will not take the program,
// which is logged, and remembered for a.
func (m *Master) group(a config.Address) (*udpGroup, error) {
	if g := m.groups[a]; g != nil {
		return g, nil
	}
	if m.unsteered[a] || m.noSteering {
		return nil, nil
	}
	if g := m.takeHandedUDP(a); g != nil {
		m.groups[a] = g
		return g, nil
	}
	f, err := m.bindUDP(a)
	if err != nil {
		return nil, err
	}
	g := &udpGroup{socks: []*os.File{f}, owners: []*worker{nil}}
	if err := attachTable(f, quicsteer.Table{}); err != nil {
		f.Close()
		m.unsteered[a] = true
		m.log.Warn("HTTP/3 datagrams cannot be steered to their workers: each worker binds its own UDP socket, and a client that changes address loses its connection", "addr", a.String(), "error", err)
		return nil, nil
	}
	m.groups[a] = g
	return g, nil
}

// bindUDP binds a new UDP socket of a's group: a's host, the port the
// master's TCP socket for a is bound to, SO_REUSEPORT.
func (m *Master) bindUDP(a config.Address) (*os.File, error) {
	host, _, err := net.SplitHostPort(a.Addr)
	if err != nil {
		return nil, err
	}
	port := ""
	for bound, k := range m.bound {
		if k == a {
			_, port, err = net.SplitHostPort(strings.TrimPrefix(bound, a.Network+" "))
			if err != nil {
				return nil, err
			}
		}
	}
	if port == "" {
		_, port, _ = net.SplitHostPort(a.Addr)
	}
	pc, err := sock.ListenPacketShared("udp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, err
	}
	defer pc.Close()
	return udpFile(pc.(*net.UDPConn))
}

// udpFile returns a duplicate of c's socket as a file whose Fd method
// (which os/exec calls to hand it to a worker, and send to pass it to a
// new master) leaves the socket non-blocking. The flag belongs to the
// socket, shared by every process that holds it: UDPConn.File's file
// would clear it at each Fd, under the worker already reading the
// socket, whose recvmmsg would then wait for a whole batch of datagrams
// (a draining worker never read its clients' last ones) and ignore the
// deadline with which quic-go ends its read loop (so its transport never
// closed: the worker stayed until drain_timeout).
func udpFile(c *net.UDPConn) (*os.File, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	dup := -1
	var derr error
	if err := rc.Control(func(fd uintptr) {
		dup, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 3)
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, os.NewSyscallError("fcntl", derr)
	}
	return socketFile(dup, "udp "+c.LocalAddr().String()), nil
}

// socketFile makes fd, a UDP socket of a group, a file that the master
// neither polls (it never reads the socket; polled, each datagram would
// wake it) nor lets Fd make blocking (see udpFile). os.NewFile polls a
// non-blocking descriptor, and Fd would then clear the flag: so it is
// cleared while the file is made, and set again, as package sock does
// for TCP.
func socketFile(fd int, name string) *os.File {
	unix.SetNonblock(fd, false)
	f := os.NewFile(uintptr(fd), name)
	unix.SetNonblock(fd, true)
	return f
}

// attachTable attaches t's program to the group of socket f.
func attachTable(f *os.File, t quicsteer.Table) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return quicsteer.Attach(rc, t)
}

// releaseUDP gives back the sockets w held, for the next worker.
func (m *Master) releaseUDP(w *worker) {
	for _, g := range m.groups {
		for i, o := range g.owners {
			if o == w {
				g.owners[i] = nil
			}
		}
	}
}

// steer attaches to each group the program of the moment: every live
// worker's tag to its socket, new connections to the serving
// generation's (the pending one's while none serves). A group no worker
// holds and no serving config lists is closed.
//
// While a binary upgrade is under way, and once it has handed over,
// the new master steers, the old workers' tags among its own; a failed
// upgrade gives the steering back (upgradeFailed).
func (m *Master) steer() {
	if m.handedOver || m.up != nil {
		return
	}
	cur := m.cur
	if cur == nil {
		cur = m.pending
	}
	for a, g := range m.groups {
		t := quicsteer.Table{Owners: map[uint32]uint32{}}
		used := false
		for tag, i := range g.foreign {
			t.Owners[tag] = i
			used = true
		}
		for i, w := range g.owners {
			if w == nil {
				continue
			}
			used = true
			t.Owners[w.tag] = uint32(i)
			if w.gen == cur {
				t.Current = append(t.Current, uint32(i))
			}
		}
		listed := false
		for _, gen := range []*generation{m.cur, m.pending} {
			if gen != nil && slices.Contains(gen.h3, a) {
				listed = true
			}
		}
		if !used && !listed {
			for _, f := range g.socks {
				f.Close()
			}
			delete(m.groups, a)
			continue
		}
		if err := attachTable(g.socks[0], t); err != nil {
			m.log.Error("cannot steer HTTP/3 datagrams to their workers", "addr", a.String(), "error", err)
		}
	}
}

// closeGroups closes every UDP group (the master stops).
func (m *Master) closeGroups() {
	for a, g := range m.groups {
		for _, f := range g.socks {
			f.Close()
		}
		delete(m.groups, a)
	}
}

// handedGroup is a UDP group an old master handed over, not yet used.
type handedGroup struct {
	inheritedGroup
	socks []*os.File
}

// handUDP describes m's UDP groups for a binary upgrade's new master and
// appends their sockets to files, group after group, by index.
func (m *Master) handUDP(files []*os.File) ([]inheritedGroup, []*os.File) {
	addrs := slices.SortedFunc(maps.Keys(m.groups), func(a, b config.Address) int { return strings.Compare(a.String(), b.String()) })
	var out []inheritedGroup
	for _, a := range addrs {
		g := m.groups[a]
		ig := inheritedGroup{Address: a, N: len(g.socks), Tags: maps.Clone(g.foreign)}
		if ig.Tags == nil {
			ig.Tags = map[uint32]uint32{}
		}
		for bound, k := range m.bound {
			if k == a {
				ig.Bound = strings.TrimPrefix(bound, a.Network+" ")
			}
		}
		for i, w := range g.owners {
			if w != nil {
				ig.Tags[w.tag] = uint32(i)
			}
		}
		out = append(out, ig)
		files = append(files, g.socks...)
	}
	return out, files
}

// takeHandedUDP returns the UDP group an old master handed over for a,
// if there is one: its sockets keep their indices, and its workers'
// tags their sockets.
func (m *Master) takeHandedUDP(a config.Address) *udpGroup {
	for i, h := range m.handedUDP {
		if h.Address == a || h.Address.Network == a.Network && h.Bound == a.Addr {
			m.handedUDP = slices.Delete(m.handedUDP, i, i+1)
			return &udpGroup{socks: h.socks, owners: make([]*worker, len(h.socks)), foreign: h.Tags}
		}
	}
	return nil
}

// closeHandedUDP closes the handed-over UDP groups no config took.
func (m *Master) closeHandedUDP() {
	for _, h := range m.handedUDP {
		for _, f := range h.socks {
			f.Close()
		}
	}
	m.handedUDP = nil
}

func (m *Master) hasForeignTags() bool {
	for _, g := range m.groups {
		if len(g.foreign) > 0 {
			return true
		}
	}
	return false
}

// awaitOldMaster waits, in the new master of an upgrade, for the old
// master to end (its end of c closes), then drops its workers' tags
// from the steering on Run's goroutine.
func (m *Master) awaitOldMaster(c *net.UnixConn) {
	defer c.Close()
	for {
		if _, f, err := receive(c); err != nil {
			break
		} else if f != nil {
			f.Close()
		}
	}
	select {
	case m.calls <- func() {
		for _, g := range m.groups {
			g.foreign = nil
		}
		m.log.Info("the old master has ended: HTTP/3 datagrams of its workers' connections go to the serving workers")
		m.steer()
	}:
	case <-m.over:
	}
}
