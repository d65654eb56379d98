package engine

import (
	"os"
	"sync"
	"syscall"

	"github.com/sluice-server/sluice/sock"
	"golang.org/x/sys/unix"
)

// On Linux connections are watched for gone notices in one epoll set, the
// process's, for all connections: sockets are added to it with EPOLLRDHUP only (EPOLLHUP and
// EPOLLERR are implied), so it reports a peer's FIN or RST and never the
// bytes that arrive. The set's descriptor is itself watched by the
// runtime's poller, so waiting for it holds no thread, and nothing in it
// touches the socket's own read lock: a handler may read the request body
// meanwhile. The set and the goroutine reading it start with the first
// Gone call in the process.

// peerWatch is one socket in the gone set; the zero value is none.
type peerWatch struct {
	id uint32 // key in gonePoller.watches, 0 for none
	fd int
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

// notify closes the Gone channel of the watch registered as id, if it
// is still registered.
func (p *gonePoller) notify(id uint32) {
	p.mu.Lock()
	w := p.watches[id]
	p.mu.Unlock()
	if w == nil {
		return
	}
	w.mu.Lock()
	if w.peer.id == id { // not ended (and its socket not closed) meanwhile
		w.fire()
	}
	w.mu.Unlock()
}

// start adds c's socket to the gone set for w. Called with w.mu held.
func (pw *peerWatch) start(c *conn, w *goneWatch) {
	if c.peer == nil {
		return
	}
	p := goneSet()
	if p == nil {
		return
	}
	fd := -1
	c.peer.Control(func(f uintptr) { fd = int(f) })
	if fd < 0 {
		return
	}
	p.mu.Lock()
	id := p.next + 1
	for id == 0 || p.watches[id] != nil {
		id++
	}
	p.next = id
	p.watches[id] = w
	p.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLRDHUP, Fd: int32(id)}
	if unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev) != nil {
		p.forget(id)
		return
	}
	pw.id, pw.fd = id, fd
}

// stop takes the socket out of the gone set. Called with the watch's mu
// held, while the socket is still open.
func (pw *peerWatch) stop() {
	if pw.id == 0 {
		return
	}
	p := gonePoll.p
	unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, pw.fd, nil)
	p.forget(pw.id)
	pw.id, pw.fd = 0, -1
}

func (p *gonePoller) forget(id uint32) {
	p.mu.Lock()
	delete(p.watches, id)
	p.mu.Unlock()
}
