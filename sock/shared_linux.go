package sock

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A listening socket shared between processes (the workers of one server,
// each with a listener from FileListener) has one accept queue, which
// every process waits on. Waiting through the runtime's poller, as
// Listen's listener does, puts the socket in each process's epoll set
// without EPOLLEXCLUSIVE, so every new connection wakes every process and
// all but one find nothing to accept: the thundering herd, whose cost
// grows with the number of workers.
//
// A sharedSocket waits instead in an epoll set of its own, in which the
// socket is registered with EPOLLIN|EPOLLEXCLUSIVE: the kernel wakes one
// of the waiting processes for a new connection (or a few), not all of
// them. It counts an exclusive wake-up as delivered only to a thread
// blocked in epoll_wait(2) on the set itself; a set watched by another
// set, as the runtime's poller watches the park and gone sets, takes the
// event and passes the wake-up on to the next process, so every process
// would still wake. The accepting goroutine therefore blocks in
// epoll_wait on the set, holding a thread while it waits, as a blocking
// file read does; one thread per listener. It yields once before it
// blocks (see Read). A process that is not waiting
// (busy, or not accepting at all) is skipped: the wake-up goes to one
// that is. Close wakes the waiter through an eventfd in the set,
// registered without EPOLLEXCLUSIVE.
//
// A wake-up is not handed on once taken: a process woken for a new
// connection that stops accepting before it accepts it (its listener
// closed by a reload or shutdown at that moment) leaves the connection in
// the queue, and the others, not woken, would let it wait until the next
// connection came. So a waiting Read looks at the queue again after
// sharedWaitMax even if nothing woke it.

// sharedWaitMax bounds how long Read waits in the set before it looks at
// the queue again: the longest a connection whose wake-up went to a
// process that stopped accepting waits to be accepted by another. An idle
// listener costs two system calls per period.
const sharedWaitMax = 250 // milliseconds

// sharedSocket is the listening socket of a tcpListener made by
// FileListener: its Read, Control and Close. Read calls are serialised
// by the listener (Accept); Control and Close may be called from any
// goroutine.
type sharedSocket struct {
	fd   int // the listening socket, non-blocking
	epfd int // the set
	evfd int // an eventfd in the set, written by Close

	mu      sync.Mutex  // orders Control against Close
	closed  atomic.Bool // set under mu
	readMu  sync.Mutex  // held by Read; Close takes it before closing the descriptors
	events  [2]unix.EpollEvent
	cleanup runtime.Cleanup

	// For tests: times Read waited in epoll_wait, and wake-ups after
	// which f found no connection to accept; wokeHook, if set, is called
	// by Read after the set reported an event.
	waits, idleWakes atomic.Int64
	wokeHook         func()
}

// newSharedSocket returns a sharedSocket owning fd, a non-blocking
// listening socket; fd is not closed if it fails.
func newSharedSocket(fd int) (*sharedSocket, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	evfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLEXCLUSIVE, Fd: int32(fd)}
	err = unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &ev)
	if err == unix.EINVAL { // Linux before 4.5: every process wakes, as through the poller
		ev.Events = unix.EPOLLIN
		err = unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &ev)
	}
	if err == nil {
		ev = unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(evfd)}
		err = unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &ev)
	}
	if err != nil {
		unix.Close(evfd)
		unix.Close(epfd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	s := &sharedSocket{fd: fd, epfd: epfd, evfd: evfd}
	// As an os.File's, the descriptors of a socket dropped unclosed are
	// closed when it is collected.
	s.cleanup = runtime.AddCleanup(s, func(fds [3]int) {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}, [3]int{fd, epfd, evfd})
	return s, nil
}

// Read implements syscall.RawConn: it calls f with the socket until f
// returns true, waiting in the set between calls. It returns
// net.ErrClosed once Close was called.
func (s *sharedSocket) Read(f func(fd uintptr) bool) error {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	woken, yielded := false, false
	for !s.closed.Load() {
		if f(uintptr(s.fd)) {
			return nil
		}
		if woken {
			s.idleWakes.Add(1)
		}
		if !yielded {
			// A goroutine blocked in a system call keeps its P until
			// the runtime's monitor takes it back (after 20µs or
			// more), and the connections just accepted wait on that P
			// to start: let them run first. Connections arriving
			// meanwhile are then accepted without blocking.
			yielded = true
			runtime.Gosched()
			continue
		}
		s.waits.Add(1)
		n, err := unix.EpollWait(s.epfd, s.events[:], sharedWaitMax)
		if err != nil && err != unix.EINTR {
			return os.NewSyscallError("epoll_wait", err)
		}
		woken = n > 0
		if woken && s.wokeHook != nil {
			s.wokeHook()
		}
	}
	return net.ErrClosed
}

// Write implements syscall.RawConn; a listening socket is not written.
func (s *sharedSocket) Write(func(fd uintptr) bool) error { return errors.ErrUnsupported }

// Control implements syscall.RawConn: f is called with the socket, which
// stays open until f returns.
func (s *sharedSocket) Control(f func(fd uintptr)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return net.ErrClosed
	}
	f(uintptr(s.fd))
	return nil
}

// Close wakes a Read waiting in the set, which returns net.ErrClosed,
// then closes the set and the socket (this process's descriptor of it).
func (s *sharedSocket) Close() error {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return net.ErrClosed
	}
	s.closed.Store(true)
	s.mu.Unlock()
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	unix.Write(s.evfd, one[:]) // stays readable: Read returns
	s.readMu.Lock()
	defer s.readMu.Unlock()
	s.cleanup.Stop()
	unix.Close(s.evfd)
	unix.Close(s.epfd)
	if err := unix.Close(s.fd); err != nil {
		return os.NewSyscallError("close", err)
	}
	return nil
}
