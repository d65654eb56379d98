package sock

import (
	"testing"

	"golang.org/x/sys/unix"
)

// EpollCtl adds a socket to a set, which EpollReady then reports when
// bytes arrive, keyed as added, and deletes it, after which it reports
// nothing; its errors are the system call's.
func TestEpollCtl(t *testing.T) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(epfd)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])

	events := make([]unix.EpollEvent, 4)
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: 7, Pad: 9}
	if err := EpollCtl(epfd, unix.EPOLL_CTL_ADD, fds[0], &ev); err != nil {
		t.Fatalf("add: %v", err)
	}
	if err := EpollCtl(epfd, unix.EPOLL_CTL_ADD, fds[0], &ev); err != unix.EEXIST {
		t.Errorf("second add: %v, want EEXIST", err)
	}
	if n, err := EpollReady(epfd, events); n != 0 || err != nil {
		t.Fatalf("nothing sent: %d events, %v", n, err)
	}
	if _, err := unix.Write(fds[1], []byte("x")); err != nil {
		t.Fatal(err)
	}
	n, err := EpollReady(epfd, events)
	if n != 1 || err != nil {
		t.Fatalf("a byte sent: %d events, %v; want 1", n, err)
	}
	if e := events[0]; e.Events&unix.EPOLLIN == 0 || e.Fd != 7 || e.Pad != 9 {
		t.Errorf("event %+v, want EPOLLIN keyed 7, 9", e)
	}
	if err := EpollCtl(epfd, unix.EPOLL_CTL_DEL, fds[0], nil); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := unix.Write(fds[1], []byte("y")); err != nil {
		t.Fatal(err)
	}
	if n, err := EpollReady(epfd, events); n != 0 || err != nil {
		t.Errorf("deleted: %d events, %v", n, err)
	}
	if err := EpollCtl(epfd, unix.EPOLL_CTL_DEL, fds[0], nil); err != unix.ENOENT {
		t.Errorf("second delete: %v, want ENOENT", err)
	}
}
