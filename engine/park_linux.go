package engine

import (
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// The park set is one epoll set for the process. A parked socket is in it
// with EPOLLIN|EPOLLRDHUP|EPOLLONESHOT (EPOLLHUP and EPOLLERR are implied),
// keyed by a slot number and the slot's generation, so it reports the
// first bytes, FIN or RST once and then stays quiet until it is taken out.
// Adding a socket that is readable already reports it at once, so bytes
// that arrive as a connection parks are not missed. The set's descriptor
// is watched by the runtime's poller (as the gone set's is), so its
// reader holds no thread while nothing happens.
//
// A socket is in the set exactly while its connection is parked: park
// adds it, and whoever claims the connection (the reader, or Expire)
// takes it out before using or closing it.

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
func (p *parkSet) run(rc syscall.RawConn) {
	events := make([]unix.EpollEvent, 128)
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
		}
	})
}

// wake hands the connection parked in slot (if it still is) to a runner,
// which goes on with its wait: it reads what arrived, or finds the peer
// gone.
func (p *parkSet) wake(slot, gen uint32) {
	p.mu.Lock()
	var c *conn
	if int(slot) < len(p.slots) && p.slots[slot].gen == gen {
		c = p.slots[slot].c
	}
	p.mu.Unlock()
	if c == nil || !c.wait.CompareAndSwap(waitParked, waitActive) {
		return // claimed by Expire meanwhile
	}
	c.unpark()
	c.resume = true
	c.sparse = c.th.Noticed()
	c.srv.startConn(c)
}

// park parks c (see park.go) and reports whether it did; if it did, the
// caller must leave c alone from then on. It does not where the park set
// cannot be had or the socket cannot join it, or if the timeout manager
// has just given up on c.
func (c *conn) park() bool {
	if c.rc == nil || !c.nb {
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
	// claim c as soon as its socket is in.
	c.moveMu.Lock()
	defer c.moveMu.Unlock()
	if c.interrupted.Load() {
		return false
	}
	if sc, ok := c.nc.(*sockConn); ok {
		sc.unpoll()
	}
	fd := -1
	c.rc.Control(func(f uintptr) { fd = int(f) })
	if fd < 0 {
		return false
	}
	slot, gen := p.take(c)
	c.parkSlot, c.parkFd = slot, int32(fd)
	c.srv.stats.parked.Add(1)
	c.wait.Store(waitParked)
	ev := unix.EpollEvent{Events: parkEvents, Fd: int32(slot), Pad: int32(gen)}
	if unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev) != nil {
		c.wait.Store(waitActive)
		c.srv.stats.parked.Add(-1)
		p.give(slot)
		return false
	}
	return true
}

// unpark takes the socket of c, just claimed, out of the park set.
func (c *conn) unpark() {
	p := parking.p.Load()
	unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, int(c.parkFd), nil)
	p.give(c.parkSlot)
	c.srv.stats.parked.Add(-1)
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
