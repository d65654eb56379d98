package engine

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/sluice-server/sluice/sock"
	"golang.org/x/sys/unix"
)

// The park set is one epoll set for the process. A parked socket is in it
// with EPOLLIN|EPOLLRDHUP|EPOLLET (EPOLLHUP and EPOLLERR are implied),
// keyed by a slot number and the slot's generation: edge-triggered, it
// reports an arrival of bytes, or a FIN or RST, once. Adding a socket that
// is readable already reports it at once. The set's descriptor is watched
// by the runtime's poller (as the gone set's is), so its reader holds no
// thread while nothing happens.
//
// A connection takes a slot when it first parks and keeps it, and its
// socket stays in the set, until it closes (closing the socket takes it
// out) or goes to wait in the runtime's poller (see leaveParkSet): a
// connection that parks between requests, as at 10,000 busy connections,
// costs no system call to park again, and none to wake. Two things make
// that safe with an edge-triggered socket, which reports nothing for
// bytes that were there before it last reported:
//
//   - Bytes that come while the connection is not parked (after the read
//     that found the socket drained, before the park) find it active: the
//     reader sets parkPending, which the connection looks at as it parks;
//     if set, it is handed on as if woken. The reader sets the note before
//     it looks at the connection's state again, and the connection parks
//     before it looks at the note, so one of the two hands it on. A note
//     of bytes the connection read anyway costs one wake that reads
//     nothing and parks again. Only an owner clears the note: the
//     connection before a read, the reader once it claimed the
//     connection, the parking goroutine once it took it back. Once
//     parked, the connection may be claimed, served and active again
//     before the goroutine that parked it looks at the note, which is then
//     the new owner's: clearing it there lost a request's wake for good.
//   - A FIN or RST that came with the bytes that woke it is reported in
//     the same event, and would not be again: the reader records it
//     (parkPeerDone), and the connection does not park again but reads on
//     to the end of its input.
//
// A connection that waited in the runtime's poller moves to a new
// descriptor as it parks (see sock.Conn.Unpoll) and joins the set anew.
//
// Whoever claims a parked connection (the reader, or Expire) owns it
// next; an event that comes for a connection Expire claimed finds it no
// longer parked.

// parkEvents is the set of events a parked socket waits for.
const parkEvents = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET

// parkSet is the process's park set.
type parkSet struct {
	f    *os.File // the set's descriptor, kept from its finalizer
	epfd int

	mu    sync.Mutex
	slots []parkSlot // by slot number
	free  []uint32   // slot numbers not in use
}

// parkSlot is one parked connection's entry; gen tells its successive
// occupants, and an occupant's successive additions to the set, apart, so
// that an event read just before a slot changed hands, or its socket left
// the set, is recognised as stale.
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
			n, err := sock.EpollReady(int(fd), events)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				return false // wait for the poller
			}
			now := monoNow()
			for _, ev := range events[:n] {
				p.wake(uint32(ev.Fd), uint32(ev.Pad), ev.Events, now)
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
// gone. A connection that is not parked is told that bytes came
// (parkPending), unless it parked meanwhile: then it is claimed after all.
// now is when the reader read the event (monoNow), one clock reading for
// all the events it read at once.
func (p *parkSet) wake(slot, gen, events uint32, now int64) {
	p.mu.Lock()
	var c *conn
	if int(slot) < len(p.slots) && p.slots[slot].gen == gen {
		c = p.slots[slot].c
	}
	p.mu.Unlock()
	if c == nil {
		return // closed
	}
	if events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		c.parkFlags.Or(parkPeerDone)
	}
	for !c.wait.CompareAndSwap(waitParked, waitActive) {
		// Active (or claimed by Expire): the connection looks at the
		// flag as it parks, after it set waitParked; if it did that
		// before the flag was set, it is claimed here.
		c.parkFlags.Or(parkPending)
		if c.wait.Load() != waitParked {
			return
		}
	}
	c.parkFlags.And(^uint32(parkPending))
	c.sparse = now-c.parkedAt >= c.srv.sparseAfter.Load()
	c.resumeOnRunner()
}

// resumeOnRunner hands c, just claimed from the park set by its caller,
// to a runner, which goes on with its wait (run with resume set). The
// caller must leave c alone from then on.
func (c *conn) resumeOnRunner() {
	c.unpark()
	c.resume = true
	c.srv.startConn(c)
}

// park parks c (see park.go) and reports whether it did; if it did, the
// caller must leave c alone from then on. It does not where the park set
// cannot be had or the socket cannot join it, if the peer has closed its
// side (c must read to the end of its input), or if the timeout manager
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
	// parked, its socket in the set, and claims it. The set's reader may
	// claim c as soon as it is parked.
	c.moveMu.Lock()
	defer c.moveMu.Unlock()
	if c.interrupted.Load() || c.parkFlags.Load()&parkPeerDone != 0 {
		return false
	}
	if sc := c.sockConn(); sc != nil && sc.Polled() {
		// unpoll closes the descriptor the socket is in the set under,
		// and in the gone set.
		p.forget(c)
		c.leaveGoneSet()
		sc.Unpoll()
	}
	if !c.hasSlot {
		c.parkSlot = p.take(c)
		c.hasSlot = true
	}
	c.parkedAt = monoNow()
	if c.parkFd >= 0 {
		// In the set already, under the descriptor it has now (one
		// that changes leaves the set first; see forget): parking is a
		// store, and a look at what the reader saw while c was active.
		c.srv.stats.parked.Add(1)
		c.wait.Store(waitParked)
		if h := c.srv.parkedHook; h != nil {
			h(c)
		}
		// From the store on, the reader may claim c and hand it to a
		// runner, which serves it and may be active again, with a note
		// of its own, by the time this goroutine looks: the note is
		// only looked at here, and cleared only by whoever takes c back.
		if c.parkFlags.Load()&parkPending != 0 && c.wait.CompareAndSwap(waitParked, waitActive) {
			// Bytes came after the read that found the socket drained:
			// go on as the reader would have, on a runner.
			c.parkFlags.And(^uint32(parkPending))
			c.resumeOnRunner()
		}
		return true
	}
	fd := -1
	c.peer.Control(func(f uintptr) { fd = int(f) })
	if fd < 0 {
		return false
	}
	c.srv.stats.parked.Add(1)
	c.parkFd = int32(fd)
	c.parkFlags.And(^uint32(parkPending)) // adding the socket reports what is there
	// A new generation: an event of the socket's last time in the set,
	// which the reader may hold still, is stale, so that only this
	// addition's events can claim c.
	c.parkGen = p.renew(c.parkSlot)
	c.wait.Store(waitParked)
	ev := unix.EpollEvent{Events: parkEvents, Fd: int32(c.parkSlot), Pad: int32(c.parkGen)}
	parkCtls.Add(1)
	if sock.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev) != nil {
		// No event names this generation, and Expire waits for
		// moveMu: c is still this goroutine's.
		c.wait.Store(waitActive)
		c.srv.stats.parked.Add(-1)
		c.parkFd = -1
		return false
	}
	return true
}

// sockConn returns the engine's socket c is served on, beneath TLS if
// c is a TLS connection, or nil if it is not one of the engine's.
func (c *conn) sockConn() *sock.Conn {
	nc := c.nc
	if c.sock != nil {
		nc = c.sock.Conn
	}
	sc, _ := nc.(*sock.Conn)
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
	sc, ok := c.nc.(*sock.Conn)
	if !ok || sc.Polled() {
		return false, false
	}
	c.rc.Control(func(fd uintptr) { read = c.rawRead(fd) })
	return read, !read && c.park()
}

// unpark accounts for c, just claimed, leaving the park set: its socket
// stays in it.
func (c *conn) unpark() {
	c.srv.stats.parked.Add(-1)
}

// leaveParkSet takes c's socket out of the park set, if it is in it, as c
// goes to wait in the runtime's poller: there the set would report every
// request to its reader for nothing. Called by c's goroutine.
func (c *conn) leaveParkSet() {
	if c.parkFd >= 0 {
		parking.p.Load().forget(c)
	}
}

// forget deletes c's socket from the set, before the descriptor it is in
// the set under closes or as c leaves the set.
func (p *parkSet) forget(c *conn) {
	if c.parkFd < 0 {
		return
	}
	parkCtls.Add(1)
	sock.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, int(c.parkFd), nil)
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

// take returns a free slot for c, in a new generation, so that an event
// of its last occupant is stale; c takes the generation its socket joins
// the set under when it joins (renew).
func (p *parkSet) take(c *conn) (slot uint32) {
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
	return slot
}

// renew gives slot a new generation and returns it.
func (p *parkSet) renew(slot uint32) uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &p.slots[slot]
	s.gen++
	return s.gen
}

// give frees slot.
func (p *parkSet) give(slot uint32) {
	p.mu.Lock()
	p.slots[slot].c = nil
	p.free = append(p.free, slot)
	p.mu.Unlock()
}
