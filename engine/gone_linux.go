package engine

import (
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/sluice-server/sluice/sock"
	"golang.org/x/sys/unix"
)

// On Linux connections are watched for gone notices in one epoll set, the
// process's, for all connections: sockets are added to it with
// EPOLLRDHUP|EPOLLET only (EPOLLHUP and EPOLLERR are implied), so it
// reports a peer's FIN or RST and never the bytes that arrive. The set's
// descriptor is itself watched by the runtime's poller, so waiting for it
// holds no thread, and nothing in it touches the socket's own read lock: a
// handler may read the request body meanwhile. The set and the goroutine
// reading it start with the first Gone call in the process.
//
// A connection's socket joins the set with its first watch and stays in
// it until the connection closes (closing the socket takes it out) or its
// descriptor changes (see leaveGoneSet), so a connection whose every
// request is watched costs one epoll_ctl in all, not two per request.
// Edge-triggered, the set reports a FIN or RST once, whether a request is
// watched then or not: the reader latches it (peerWatch.done), and a
// watch that starts later sees it at once. Adding a socket whose peer is
// gone already reports it at once.

// goneEvents is the set of events a watched socket waits for.
const goneEvents = unix.EPOLLRDHUP | unix.EPOLLET

// peerWatch is a connection's socket in the gone set; the zero value is
// none. Its fields are guarded by the goneWatch's mu.
type peerWatch struct {
	id   uint32 // key in gonePoller.watches, 0 while not in the set
	fd   int    // the descriptor the socket is in the set under
	done bool   // the set reported the peer's FIN or RST
}

// gonePoller is the process's gone set.
type gonePoller struct {
	f       *os.File // the set's descriptor, kept from its finalizer
	epfd    int
	mu      sync.Mutex
	next    uint32
	watches map[uint32]*goneWatch
}

var gonePoll struct {
	once sync.Once
	p    *gonePoller // nil if the set could not be made
}

// goneCtls counts epoll_ctl calls on the gone set, for tests.
var goneCtls atomic.Int64

// goneSet returns the gone set, making it on first use, or nil.
func goneSet() *gonePoller {
	gonePoll.once.Do(func() {
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return
		}
		// Non-blocking, so os.NewFile registers it with the runtime's
		// poller.
		if err := unix.SetNonblock(epfd, true); err != nil {
			unix.Close(epfd)
			return
		}
		f := os.NewFile(uintptr(epfd), "gone set")
		rc, err := f.SyscallConn()
		if err != nil {
			f.Close()
			return
		}
		p := &gonePoller{f: f, epfd: epfd, watches: map[uint32]*goneWatch{}}
		gonePoll.p = p
		go p.run(rc)
	})
	return gonePoll.p
}

// run reads the set's events for as long as the process lives.
func (p *gonePoller) run(rc syscall.RawConn) {
	events := make([]unix.EpollEvent, 64)
	rc.Read(func(fd uintptr) bool {
		for {
			n, err := sock.EpollReady(int(fd), events)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				return false // wait for the poller
			}
			for _, ev := range events[:n] {
				p.notify(uint32(ev.Fd))
			}
			if n < len(events) {
				return false
			}
		}
	})
}

// notify records that the peer of the socket registered as id has gone,
// if it is still registered, and closes the Gone channel of the request
// watched on it, if any.
func (p *gonePoller) notify(id uint32) {
	p.mu.Lock()
	w := p.watches[id]
	p.mu.Unlock()
	if w == nil {
		return
	}
	w.mu.Lock()
	if w.peer.id == id { // its socket not closed, nor its descriptor changed, meanwhile
		w.peer.done = true
		if w.ch != nil {
			w.fire()
		}
	}
	w.mu.Unlock()
}

// start watches c's socket for w's request, adding it to the gone set
// unless it is in already. It reports whether the peer is known to have
// gone. Called with w.mu held.
func (pw *peerWatch) start(c *conn, w *goneWatch) (gone bool) {
	if pw.done {
		return true
	}
	if pw.id != 0 || c.peer == nil {
		return false
	}
	p := goneSet()
	if p == nil {
		return false
	}
	fd := -1
	c.peer.Control(func(f uintptr) { fd = int(f) })
	if fd < 0 {
		return false
	}
	p.mu.Lock()
	id := p.next + 1
	for id == 0 || p.watches[id] != nil {
		id++
	}
	p.next = id
	p.watches[id] = w
	p.mu.Unlock()
	ev := unix.EpollEvent{Events: goneEvents, Fd: int32(id)}
	goneCtls.Add(1)
	if sock.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev) != nil {
		p.forget(id)
		return false
	}
	pw.id, pw.fd = id, fd
	return false
}

// leave takes the socket out of the gone set while it is still open under
// the descriptor it joined under. Called with the watch's mu held.
func (pw *peerWatch) leave() {
	if pw.id == 0 {
		return
	}
	p := gonePoll.p
	goneCtls.Add(1)
	sock.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, pw.fd, nil)
	p.forget(pw.id)
	pw.id, pw.fd = 0, -1
}

// closed forgets the socket, which closing took out of the set. Called
// with the watch's mu held.
func (pw *peerWatch) closed() {
	if pw.id == 0 {
		return
	}
	gonePoll.p.forget(pw.id)
	pw.id, pw.fd = 0, -1
}

func (p *gonePoller) forget(id uint32) {
	p.mu.Lock()
	delete(p.watches, id)
	p.mu.Unlock()
}
