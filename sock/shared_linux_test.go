package sock

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sharedListeners returns k listeners made by FileListener from one
// listening socket, as k workers have them; the test's end closes them.
func sharedListeners(t *testing.T, k int) []net.Listener {
	t.Helper()
	base, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ListenerFile(base)
	base.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lns := make([]net.Listener, k)
	for i := range lns {
		ln, err := FileListener(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		lns[i] = ln
	}
	return lns
}

// sharedOf returns the shared socket of ln, a listener from FileListener.
func sharedOf(t testing.TB, ln net.Listener) *sharedSocket {
	t.Helper()
	tl, ok := ln.(*tcpListener)
	if !ok {
		t.Fatalf("FileListener returned a %T", ln)
	}
	s, ok := tl.rc.(*sharedSocket)
	if !ok {
		t.Fatalf("FileListener's listener waits through a %T", tl.rc)
	}
	return s
}

// dialWithByte connects to addr and sends one byte: a listener may have
// TCP_DEFER_ACCEPT, so a connection is accepted once bytes are in.
func dialWithByte(t testing.TB, addr string) net.Conn {
	t.Helper()
	c := dial(t, addr)
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	return c
}

// A new connection on a socket shared by several listeners, each with an
// Accept waiting, wakes one of them, not every one (the thundering herd);
// each connection is accepted once, and Close ends every Accept.
func TestSharedListenersWakeOneAcceptor(t *testing.T) {
	const k, n = 8, 200
	lns := sharedListeners(t, k)
	conns := make(chan net.Conn, n)
	errs := make(chan error, k)
	for _, ln := range lns {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					errs <- err
					return
				}
				conns <- c
			}
		}()
	}
	waitFor(t, "every listener to wait", func() bool {
		for _, ln := range lns {
			if sharedOf(t, ln).waits.Load() == 0 {
				return false
			}
		}
		return true
	})

	addr := lns[0].Addr().String()
	for i := range n {
		c := dialWithByte(t, addr)
		select {
		case sc := <-conns:
			if got, want := sc.RemoteAddr().String(), c.LocalAddr().String(); got != want {
				t.Fatalf("connection %d: accepted %s, want %s", i, got, want)
			}
			sc.Close()
		case <-time.After(10 * time.Second):
			t.Fatalf("connection %d not accepted", i)
		}
		c.Close()
	}

	var idle int64
	for _, ln := range lns {
		idle += sharedOf(t, ln).idleWakes.Load()
	}
	t.Logf("%d listeners, %d connections: %d wake-ups found nothing to accept", k, n, idle)
	if idle >= n {
		t.Errorf("%d wake-ups found nothing to accept for %d connections; every listener wakes for each (about %d)",
			idle, n, (k-1)*n)
	}

	for _, ln := range lns {
		ln.Close()
	}
	for range k {
		select {
		case err := <-errs:
			if !errors.Is(err, net.ErrClosed) {
				t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("an Accept did not return after Close")
		}
	}
	select {
	case c := <-conns:
		t.Errorf("connection from %s accepted again or from nowhere", c.RemoteAddr())
	default:
	}
}

// Close wakes an Accept waiting on a shared socket; the socket stays open
// for the other listeners on it.
func TestSharedListenerCloseWakesAccept(t *testing.T) {
	lns := sharedListeners(t, 2)
	ln := lns[0]
	closeUnderAccept(t, ln)
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
	if err := ln.Close(); err == nil {
		t.Error("second Close succeeded")
	}

	c := dialWithByte(t, ln.Addr().String())
	defer c.Close()
	sc, err := lns[1].Accept()
	if err != nil {
		t.Fatalf("the other listener: %v", err)
	}
	sc.Close()
}

// A connection whose wake-up went to a listener that then stopped
// accepting (closed as its worker stops for a reload) is accepted by
// another listener on the socket, though no later connection wakes it.
func TestSharedListenerWakeTakenByClosingListener(t *testing.T) {
	lns := sharedListeners(t, 2)
	var once sync.Once
	closed := make(chan int, 1)
	for i, ln := range lns {
		s := sharedOf(t, ln)
		s.wokeHook = func() {
			once.Do(func() {
				// Woken for the connection, this listener is closed
				// before it accepts: Close sets closed, then waits for
				// this Read to return.
				go ln.Close()
				for !s.closed.Load() {
					time.Sleep(time.Millisecond)
				}
				closed <- i
			})
		}
	}
	conns := make(chan net.Conn, 2)
	for _, ln := range lns {
		go func() {
			if c, err := ln.Accept(); err == nil {
				conns <- c
			}
		}()
	}
	waitFor(t, "both listeners to wait", func() bool {
		return sharedOf(t, lns[0]).waits.Load() > 0 && sharedOf(t, lns[1]).waits.Load() > 0
	})
	c := dialWithByte(t, lns[0].Addr().String())
	defer c.Close()
	select {
	case i := <-closed:
		t.Logf("listener %d took the wake-up and closed", i)
	case <-time.After(10 * time.Second):
		t.Fatal("no listener was woken")
	}
	select {
	case sc := <-conns:
		if got, want := sc.RemoteAddr().String(), c.LocalAddr().String(); got != want {
			t.Errorf("accepted %s, want %s", got, want)
		}
		sc.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the connection was never accepted by the listener left")
	}
}

// ListenerFile takes a FileListener's socket too (a master re-executed
// for a binary upgrade passes its sockets on), leaving it non-blocking,
// and the file makes a listener that accepts.
func TestListenerFileOfSharedListener(t *testing.T) {
	ln := sharedListeners(t, 1)[0]
	f, err := ListenerFile(ln)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ln.Close()
	if fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK == 0 {
		t.Errorf("the socket's flags: %#x (%v), want O_NONBLOCK", fl, err)
	}
	if _, err := ListenerFile(ln); err == nil {
		t.Error("ListenerFile of a closed listener succeeded")
	}
	ln2, err := FileListener(f)
	if err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()
	c := dialWithByte(t, ln2.Addr().String())
	sc, err := ln2.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if got, want := sc.RemoteAddr().String(), c.LocalAddr().String(); got != want {
		t.Errorf("accepted %s, want %s", got, want)
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(sc, b); err != nil || b[0] != 'x' {
		t.Errorf("server read %q, %v; want the client's x", b, err)
	}
	if _, err := sc.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, b); err != nil || b[0] != 'y' {
		t.Errorf("client read %q, %v; want the server's y", b, err)
	}

	closeUnderAccept(t, ln2) // as a server's shutdown does
}

// closeUnderAccept closes ln, a listener from FileListener, while an
// Accept waits on it, and fails the test unless the Accept returns
// net.ErrClosed.
func closeUnderAccept(t *testing.T, ln net.Listener) {
	t.Helper()
	waits := sharedOf(t, ln).waits.Load()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if c != nil {
			c.Close()
		}
		done <- err
	}()
	waitFor(t, "Accept to wait", func() bool { return sharedOf(t, ln).waits.Load() > waits })
	if err := ln.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept: %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Accept still waits after Close")
	}
}
