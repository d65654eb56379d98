package engine

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// The park set is one epoll set for the process. A parked socket is in it
// with EPOLLIN|EPOLLRDHUP|EPOLLONESHOT (EPOLLHUP and EPOLLERR are implied),
// keyed by a slot number and the slot's generation, so it reports the
// first bytes, FIN or RST once and then stays quiet. Adding a socket that
// is readable already, or re-arming one, reports it at once, so bytes that
// arrive as a connection parks are not missed. The set's descriptor is
// watched by the runtime's poller (as the gone set's is), so its reader
// holds no thread while nothing happens.
//
// A connection takes a slot when it first parks and keeps it, and its
// socket stays in the set, until it closes: once reported, a socket is
// disarmed, not removed, and the next park re-arms it (EPOLL_CTL_MOD), so
// a connection that parks between requests costs one system call per
// park. Closing the socket takes it out of the set. Only when a
// connection that waited in the runtime's poller parks does its socket
// move to a new descriptor (see sockConn.unpoll); its entry under the old
// one is deleted first, and it joins the set anew.
//
// A socket is armed while its connection is parked, and after Expire
// claims it until it is closed: whoever claims the connection (the reader,
// or Expire) owns it next, and an event that comes for a connection Expire
// claimed finds it no longer parked.

// parkEvents is the set of events a parked socket waits for.
const parkEvents = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT

// parkSet is the process's park set.
type parkSet struct {
	f    *os.File // the set's descriptor, kept from its finalizer
	epfd int

	mu    sync.Mutex
	slots []parkSlot // by slot number
	free  []uint32   // slot numbers not in use
}

// parkSlot is one parked connection's entry; gen tells its successive
// occupants apart, so that an event read just before a slot changed hands
// is recognised as stale.
type parkSlot struct {
	c   *conn
	gen uint32
}

var parking struct {
	mu sync.Mutex
	p  atomic.Pointer[parkSet]
}

// parkSetOrNil returns the park set, making it on first use, or nil if it
// cannot be made (out of descriptors, say; a later call tries again).
func parkSetOrNil() *parkSet {
	if p := parking.p.Load(); p != nil {
		return p
	}
	parking.mu.Lock()
	defer parking.mu.Unlock()
	if p := parking.p.Load(); p != nil {
		return p
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	// Non-blocking, so os.NewFile registers it with the runtime's poller.
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil
	}
	f := os.NewFile(uintptr(epfd), "park set")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil
	}
	p := &parkSet{f: f, epfd: epfd}
	parking.p.Store(p)
	go p.run(rc)
	return p
}

// run reads the set's events for as long as the process lives.
//
// It reads them 32 at a time, and after a full batch yields before reading
// the next, so that the runners it just handed connections to run first
// and return to the idle stack (see goroutines.go): when requests come
// faster than the server answers them, as at 10,000 busy connections, the
// set holds many ready sockets, and handing them all on at once would take
// a runner for each, most of them new goroutines whose stacks grow by
// copying, to exit when the idle stack is full. A yielding goroutine waits
// in the scheduler's global queue, which a processor looks at when its
// own queue is empty or after 61 other goroutines, so a batch smaller
// than that runs before the next is read.
func (p *parkSet) run(rc syscall.RawConn) {
	events := make([]unix.EpollEvent, 32)
	rc.Read(func(fd uintptr) bool {
		for {
			n, err := unix.EpollWait(int(fd), events, 0)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				return false // wait for the poller
			}
			for _, ev := range events[:n] {
				p.wake(uint32(ev.Fd), uint32(ev.Pad))
			}
			if n < len(events) {
				return false
			}
			runtime.Gosched()
		}
	})
}

// parkCtls counts epoll_ctl calls on the park set, for tests.
var parkCtls atomic.Int64

// wake hands the connection parked in slot (if it still is) to a runner,
// which goes on with its wait: it reads what arrived, or finds the peer
// gone. Its socket stays in the set, disarmed.
func (p *parkSet) wake(slot, gen uint32) {
	p.mu.Lock()
	var c *conn
	if int(slot) < len(p.slots) && p.slots[slot].gen == gen {
		c = p.slots[slot].c
	}
	p.mu.Unlock()
	if c == nil || !c.wait.CompareAndSwap(waitParked, waitActive) {
		return // claimed by Expire meanwhile, or closed
	}
	c.unpark()
	c.resume = true
	c.sparse = monoNow()-c.parkedAt >= c.srv.sparseAfter.Load()
	c.srv.startConn(c)
}

// park parks c (see park.go) and reports whether it did; if it did, the
// caller must leave c alone from then on. It does not where the park set
// cannot be had or the socket cannot join it, or if the timeout manager
// has just given up on c.
func (c *conn) park() bool {
	if c.peer == nil || !c.nb {
		return false
	}
	p := parkSetOrNil()
	if p == nil {
		return false
	}
	if h := c.srv.parkHook; h != nil {
		h(c)
	}
	// Expire holds moveMu while it decides: either it came first (and
	// set interrupted, and a deadline the wait will see), or it finds c
	// parked, its socket armed, and claims it. The set's reader may
	// claim c as soon as its socket is armed.
	c.moveMu.Lock()
	defer c.moveMu.Unlock()
	if c.interrupted.Load() {
		return false
	}
	if sc := c.sockConn(); sc != nil && sc.polled.Load() != nil {
		// unpoll closes the descriptor the socket is in the set under.
		p.forget(c)
		sc.unpoll()
	}
	fd := -1
	c.peer.Control(func(f uintptr) { fd = int(f) })
	if fd < 0 {
		return false
	}
	if !c.hasSlot {
		c.parkSlot, c.parkGen = p.take(c)
		c.hasSlot = true
	}
	op := unix.EPOLL_CTL_ADD
	if c.parkFd == int32(fd) {
		op = unix.EPOLL_CTL_MOD // in the set, disarmed since it last woke
	}
	c.parkFd = int32(fd)
	c.parkedAt = monoNow()
	c.srv.stats.parked.Add(1)
	c.wait.Store(waitParked)
	ev := unix.EpollEvent{Events: parkEvents, Fd: int32(c.parkSlot), Pad: int32(c.parkGen)}
	parkCtls.Add(1)
	if unix.EpollCtl(p.epfd, op, fd, &ev) != nil {
		c.wait.Store(waitActive)
		c.srv.stats.parked.Add(-1)
		c.parkFd = -1
		return false
	}
	return true
}

// sockConn returns the engine's socket c is served on, beneath TLS if
// c is a TLS connection, or nil if it is not one of the engine's.
func (c *conn) sockConn() *sockConn {
	nc := c.nc
	if c.sock != nil {
		nc = c.sock.Conn
	}
	sc, _ := nc.(*sockConn)
	return sc
}

// firstRead is the first wait of a new connection: it reads what has come,
// and if the request is not in yet the connection waits for it parked,
// where a socket of the engine's listener costs one system call to join
// (epoll_ctl; none to leave, as it closes or parks again), rather than in
// the runtime's poller (fcntl, an os.File and its pollDesc, and epoll_ctl
// to join and to leave): a listener that does not defer accepting until a
// request is in (TCP_DEFER_ACCEPT; see deferaccept.go) accepts most
// connections before, and a deferring one accepts a connection without
// one after a second. read reports that the read found
// bytes, the end of input or an error (see idleOutcome); parked, that c
// is parked and the caller must leave it alone. If neither, the wait goes
// on in the runtime's poller.
func (c *conn) firstRead() (read, parked bool) {
	sc, ok := c.nc.(*sockConn)
	if !ok || sc.polled.Load() != nil {
		return false, false
	}
	c.rc.Control(func(fd uintptr) { read = c.rawRead(fd) })
	return read, !read && c.park()
}

// unpark accounts for c, just claimed, leaving the park set: its socket,
// disarmed or about to close, stays in it.
func (c *conn) unpark() {
	c.srv.stats.parked.Add(-1)
}

// forget deletes c's socket from the set, where it is disarmed, before
// the descriptor it is in the set under closes.
func (p *parkSet) forget(c *conn) {
	if c.parkFd < 0 {
		return
	}
	parkCtls.Add(1)
	unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, int(c.parkFd), nil)
	c.parkFd = -1
}

// leavePark gives back c's slot in the park set, if it has one, once its
// socket is closed (and so out of the set). Called as c ends.
func (c *conn) leavePark() {
	if !c.hasSlot {
		return
	}
	c.hasSlot = false
	c.parkFd = -1
	parking.p.Load().give(c.parkSlot)
}

// take returns a free slot for c, and its generation.
func (p *parkSet) take(c *conn) (slot, gen uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		slot = p.free[n-1]
		p.free = p.free[:n-1]
	} else {
		slot = uint32(len(p.slots))
		p.slots = append(p.slots, parkSlot{})
	}
	s := &p.slots[slot]
	s.c = c
	s.gen++
	return slot, s.gen
}

// give frees slot.
func (p *parkSet) give(slot uint32) {
	p.mu.Lock()
	p.slots[slot].c = nil
	p.free = append(p.free, slot)
	p.mu.Unlock()
}
