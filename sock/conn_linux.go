package sock

import (
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// polledConns counts Conns that joined the poller.
var polledConns atomic.Int64

// PolledConns returns how many times a Conn joined the runtime's poller
// since the process started: a figure for tests and statistics. Safe for
// concurrent use.
func PolledConns() int64 { return polledConns.Load() }

// Conn is a TCP connection of a listener from Listen, ListenShared or
// FileListener, served with direct system calls until an operation would
// block; then its descriptor joins the runtime's poller (as an *os.File)
// and every later operation goes through it, until the connection parks
// (see Unpoll). It implements net.Conn, syscall.Conn and CloseWrite. Its
// descriptor is non-blocking. The zero value is not a connection: a Conn
// comes from Accept.
//
// Read, Write, CloseWrite and Close are called by the connection's own
// goroutine only; the deadline methods, and its RawConn's Control, may be
// called from any goroutine (the timeout manager uses the deadlines to
// interrupt a blocked operation).
// Before the descriptor joins the poller no operation blocks, so a
// deadline needs no timer: an operation checks it before its system
// call, and joining the poller hands it over.
type Conn struct {
	fd     int
	polled atomic.Pointer[polledFile] // set once the descriptor joined the poller
	mu     sync.Mutex                 // orders joining the poller against the deadline methods and Close
	closed bool
	rdl    atomic.Int64 // read deadline (UnixNano, 0 for none) until the poller has it
	wdl    atomic.Int64 // write deadline, likewise

	raddr net.TCPAddr
	rip   [16]byte                    // storage of raddr.IP
	laddr atomic.Pointer[net.TCPAddr] // the listener's, or one looked up on first use (see localAddr)
}

// polledFile is a Conn's descriptor once it joined the poller.
//
// Reads and writes go through rc with raw system calls, as they do
// before the descriptor joins the poller: f.Read and f.Write would make
// each a blocking-capable system call, whose entry wakes the runtime's
// monitor thread when it sleeps (a futex and a thread switch per call
// on a server at partial load, where the monitor sleeps between
// requests) though a non-blocking socket never blocks. The state of the
// read and of the write in progress lives here, with the functions bound
// once, so that neither allocates: a read may run beside a write (a
// tunnel's two directions), but not beside another read.
type polledFile struct {
	f  *os.File
	rc syscall.RawConn

	rbuf, wbuf      []byte
	rn, wn          int
	rerr, werr      error
	readFn, writeFn func(fd uintptr) bool
}

func newPolledFile(f *os.File, rc syscall.RawConn) *polledFile {
	p := &polledFile{f: f, rc: rc}
	p.readFn, p.writeFn = p.readRaw, p.writeRaw
	return p
}

// read reads into b once the socket has bytes, as f.Read does (the
// poller waits, deadlines apply), with a raw recv.
func (p *polledFile) read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p.rbuf, p.rn, p.rerr = b, 0, nil
	err := p.rc.Read(p.readFn)
	p.rbuf = nil
	switch {
	case err != nil:
		return 0, err
	case p.rerr != nil:
		return 0, p.rerr
	case p.rn == 0:
		return 0, io.EOF
	}
	return p.rn, nil
}

func (p *polledFile) readRaw(fd uintptr) bool {
	for {
		n, err := Recv(int(fd), p.rbuf, true)
		switch err {
		case nil:
			p.rn = n
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		p.rerr = err
		return true
	}
}

// write writes all of b, as f.Write does, with raw sends.
func (p *polledFile) write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p.wbuf, p.wn, p.werr = b, 0, nil
	err := p.rc.Write(p.writeFn)
	p.wbuf = nil
	if err == nil {
		err = p.werr
	}
	return p.wn, err
}

func (p *polledFile) writeRaw(fd uintptr) bool {
	for p.wn < len(p.wbuf) {
		m, err := Send(int(fd), p.wbuf[p.wn:], nil, 0, true)
		p.wn += m
		switch err {
		case nil, syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			p.werr = err
			return true
		}
	}
	return true
}

var (
	_ net.Conn     = (*Conn)(nil)
	_ syscall.Conn = (*Conn)(nil)
)

// poll makes the descriptor join the runtime's poller, once, carrying
// over the deadlines set so far.
func (c *Conn) poll() (*polledFile, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.polled.Load(); p != nil {
		return p, nil
	}
	if c.closed {
		return nil, net.ErrClosed
	}
	// The descriptor is non-blocking, so os.NewFile registers it with
	// the poller and its deadlines work.
	f := os.NewFile(uintptr(c.fd), "tcp")
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	if d := c.rdl.Load(); d != 0 {
		f.SetReadDeadline(time.Unix(0, d))
	}
	if d := c.wdl.Load(); d != 0 {
		f.SetWriteDeadline(time.Unix(0, d))
	}
	p := newPolledFile(f, rc)
	c.polled.Store(p)
	polledConns.Add(1)
	return p, nil
}

// Unpoll takes the descriptor out of the runtime's poller again, for a
// connection about to wait elsewhere for a long time (parked in an epoll
// set of the caller's, say): the poller's state for a descriptor (an os.File and the
// runtime's pollDesc, about 500 bytes) is not kept for an idle connection.
// The poller forgets a descriptor only when it is closed, so the socket
// moves to a duplicate descriptor and the old one is closed; the
// connection is then as if freshly accepted, and joins the poller again
// when an operation would block. Deadlines set before are dropped. It
// must be called by the connection's goroutine with no operation in
// progress; if no descriptor is left for the duplicate, the connection
// stays in the poller.
func (c *Conn) Unpoll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.polled.Load()
	if p == nil || c.closed {
		return
	}
	nfd, err := unix.FcntlInt(uintptr(c.fd), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return
	}
	p.f.Close()
	c.fd = nfd
	c.polled.Store(nil)
	c.rdl.Store(0)
	c.wdl.Store(0)
}

// Polled reports whether the connection waits through the runtime's
// poller now (see Unpoll). Safe for concurrent use; the answer may be
// stale at once unless the connection's goroutine asks.
func (c *Conn) Polled() bool { return c.polled.Load() != nil }

// expired reports whether the deadline d (UnixNano, 0 for none) has passed.
func expired(d *atomic.Int64) bool {
	t := d.Load()
	return t != 0 && t <= time.Now().UnixNano()
}

// Read implements net.Conn.
func (c *Conn) Read(b []byte) (int, error) {
	if p := c.polled.Load(); p != nil {
		n, err := p.read(b)
		return n, c.readErr(err)
	}
	if len(b) == 0 {
		return 0, nil
	}
	for {
		if expired(&c.rdl) {
			return 0, c.opError("read", os.ErrDeadlineExceeded)
		}
		n, err := Recv(c.fd, b, true)
		switch err {
		case nil:
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			p, err := c.poll()
			if err != nil {
				return 0, err
			}
			n, err := p.read(b)
			return n, c.readErr(err)
		default:
			return 0, c.opError("read", err)
		}
	}
}

// Write implements net.Conn.
func (c *Conn) Write(b []byte) (int, error) {
	if p := c.polled.Load(); p != nil {
		n, err := p.write(b)
		return n, c.writeErr(err)
	}
	n := 0
	for n < len(b) {
		if expired(&c.wdl) {
			return n, c.opError("write", os.ErrDeadlineExceeded)
		}
		m, err := Send(c.fd, b[n:], nil, 0, true)
		n += m
		switch err {
		case nil, syscall.EINTR:
		case syscall.EAGAIN:
			p, err := c.poll()
			if err != nil {
				return n, err
			}
			m, err := p.write(b[n:])
			return n + m, c.writeErr(err)
		default:
			return n, c.opError("write", err)
		}
	}
	return n, nil
}

// readErr and writeErr report a polled operation's error as the
// operations before the poller do: a *net.OpError wrapping the system
// call's error, os.ErrDeadlineExceeded, or net.ErrClosed (the poller's
// error for a descriptor being closed).
func (c *Conn) readErr(err error) error { return c.polledErr("read", err) }

func (c *Conn) writeErr(err error) error { return c.polledErr("write", err) }

func (c *Conn) polledErr(op string, err error) error {
	switch err.(type) {
	case nil:
		return nil
	case syscall.Errno:
		return c.opError(op, err)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return c.opError(op, os.ErrDeadlineExceeded)
	}
	return c.opError(op, net.ErrClosed)
}

func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: &c.raddr, Err: err}
}

// Close implements net.Conn.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return net.ErrClosed
	}
	c.closed = true
	p := c.polled.Load()
	c.mu.Unlock()
	if p != nil {
		return p.f.Close()
	}
	return closeSocket(c.fd)
}

// CloseWrite shuts down the sending side of the connection.
func (c *Conn) CloseWrite() error {
	if err := unix.Shutdown(c.fd, unix.SHUT_WR); err != nil {
		return c.opError("close", err)
	}
	return nil
}

// RemoteAddr implements net.Conn.
func (c *Conn) RemoteAddr() net.Addr { return &c.raddr }

// LocalAddr implements net.Conn: the listener's address, or, for a
// listener on a wildcard address, the one the connection came in on
// (looked up once). The result must not be modified.
func (c *Conn) LocalAddr() net.Addr {
	if a := c.laddr.Load(); a != nil {
		return a
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.laddr.Load(); a != nil {
		return a
	}
	if !c.closed {
		var rsa unix.RawSockaddrAny
		if getsockname(c.fd, &rsa) == nil {
			if a := localAddr(&rsa); a != nil {
				c.laddr.Store(a)
				return a
			}
		}
	}
	return &net.TCPAddr{}
}

// localAddrs holds the local addresses of wildcard listeners'
// connections, shared: a server has few (an address or two per interface
// and port), so its connections need not each keep a copy.
var localAddrs struct {
	mu sync.Mutex
	m  map[unix.RawSockaddrAny]*net.TCPAddr
}

// maxLocalAddrs bounds localAddrs; past it, addresses are not shared.
const maxLocalAddrs = 256

// localAddr returns the address rsa holds (as getsockname left it), shared
// with the connections that have the same one, or nil if it is not an IP
// address. The result must not be modified.
func localAddr(rsa *unix.RawSockaddrAny) *net.TCPAddr {
	localAddrs.mu.Lock()
	defer localAddrs.mu.Unlock()
	if a := localAddrs.m[*rsa]; a != nil {
		return a
	}
	la := new(struct {
		a  net.TCPAddr
		ip [16]byte
	})
	if !setTCPAddr(&la.a, &la.ip, rsa) {
		return nil
	}
	if localAddrs.m == nil {
		localAddrs.m = map[unix.RawSockaddrAny]*net.TCPAddr{}
	}
	if len(localAddrs.m) < maxLocalAddrs {
		localAddrs.m[*rsa] = &la.a
	}
	return &la.a
}

// SetDeadline implements net.Conn.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline implements net.Conn.
func (c *Conn) SetReadDeadline(t time.Time) error {
	return c.setDeadline(&c.rdl, t, (*os.File).SetReadDeadline)
}

// SetWriteDeadline implements net.Conn.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	return c.setDeadline(&c.wdl, t, (*os.File).SetWriteDeadline)
}

func (c *Conn) setDeadline(d *atomic.Int64, t time.Time, set func(*os.File, time.Time) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.polled.Load(); p != nil {
		return set(p.f, t)
	}
	if c.closed {
		return net.ErrClosed
	}
	var ns int64
	if !t.IsZero() {
		ns = max(t.UnixNano(), 1)
	}
	d.Store(ns)
	return nil
}

// SyscallConn implements syscall.Conn. Its Read and Write call f with the
// descriptor at once and, when f reports it would block, make the
// descriptor join the poller and wait through it.
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return sockRawConn{c}, nil }

// sockRawConn is a Conn's syscall.RawConn.
type sockRawConn struct{ c *Conn }

// Control calls f with the connection's descriptor, which stays open and
// the connection's until f returns. It may be called from any goroutine,
// beside the connection's own operations (a descriptor that Unpoll or
// Close replaces or closes meanwhile is never the one f gets); f must not
// call the connection's methods.
func (r sockRawConn) Control(f func(fd uintptr)) error {
	c := r.c
	if p := c.polled.Load(); p != nil {
		// The os.File holds its descriptor open while f runs; an error
		// means it was closed meanwhile (unpolled, or Close).
		if p.rc.Control(f) == nil {
			return nil
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return net.ErrClosed
	}
	if p := c.polled.Load(); p != nil {
		return p.rc.Control(f)
	}
	f(uintptr(c.fd))
	return nil
}

func (r sockRawConn) Read(f func(fd uintptr) bool) error {
	return r.c.rawIO(&r.c.rdl, f, syscall.RawConn.Read)
}

func (r sockRawConn) Write(f func(fd uintptr) bool) error {
	return r.c.rawIO(&r.c.wdl, f, syscall.RawConn.Write)
}

func (c *Conn) rawIO(d *atomic.Int64, f func(uintptr) bool, wait func(syscall.RawConn, func(uintptr) bool) error) error {
	if p := c.polled.Load(); p != nil {
		return wait(p.rc, f)
	}
	if expired(d) {
		return os.ErrDeadlineExceeded
	}
	if f(uintptr(c.fd)) {
		return nil
	}
	p, err := c.poll()
	if err != nil {
		return err
	}
	return wait(p.rc, f)
}

// zoneName names the network interface of an IPv6 scope.
func zoneName(index int) string {
	if ifi, err := net.InterfaceByIndex(index); err == nil {
		return ifi.Name
	}
	return strconv.Itoa(index)
}
