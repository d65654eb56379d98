package engine

import (
	"io"
	"os"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/engine/timeout"
	"github.com/sluice-server/sluice/sock"
	"golang.org/x/sys/unix"
)

// rawSend is true: the engine writes to a connection with a descriptor
// with its own system calls (transmit), sendmsg(2) or sendto(2) with
// MSG_MORE and sendfile(2). See sendfile_other.go for the other platforms.
const rawSend = true

// sendFile writes the pending output with MSG_MORE, so the kernel holds it
// to share a packet with the file's first bytes, then n bytes of f from
// offset with sendfile(2), under the write timeout; the socket is corked
// meanwhile as corkAbove says.
func (c *conn) sendFile(f *os.File, offset, n int64) error {
	return c.transmit(nil, f, offset, n, unix.MSG_MORE)
}

// flushBeforeClose writes the pending output of a connection that closes
// next, with MSG_MORE: the kernel holds the last partial segment until
// close queues the FIN, which then rides on it, so the response's tail
// and the FIN leave in one packet (one segment and one ACK fewer per
// connection, as nginx gets from TCP_CORK). Close pushes whatever is held.
func (c *conn) flushBeforeClose() error {
	if c.rc == nil || len(c.s.out) == 0 {
		return c.flush()
	}
	err := c.transmit(nil, nil, 0, 0, unix.MSG_MORE)
	if err != nil {
		c.closeAfter, c.broken = true, true
	}
	return err
}

// transmit writes the pending output and the buffers of vec in one send
// (sendmsg(2), or sendto(2) when only one is not empty; more calls when
// the socket takes less) with flags, then n bytes of src (if not
// nil) from offset with sendfile(2), under the write timeout, which each
// system call that sends something renews: a client that keeps reading is
// not cut off in the middle of a large file, one that stops is, as with
// any write. It needs c.rc. It changes vec's elements (not the bytes
// they hold) as it sends them: vec must be the caller's own.
func (c *conn) transmit(vec [][]byte, src *os.File, offset, n int64, flags int) error {
	t := &c.s.transfer
	*t = fileTransfer{out: c.s.out, vec: vec, flags: flags, offset: offset, n: n, nb: c.nb,
		th: c.th, timeout: c.srv.limits().WriteTimeout, corked: -1}
	if src != nil {
		t.file, t.src, t.clock = src, int(src.Fd()), c.srv.tm
		t.cork = n > corkAbove && (c.served == 0 || c.sparse)
	}
	c.th.SetDeadline(c.srv.limits().WriteTimeout)
	err := c.rc.Write(c.s.transferFn)
	if t.corked >= 0 {
		sock.SetCork(t.corked, false, c.nb) // sends the last partial segment
	}
	c.th.Clear()
	c.srv.stats.bytesWritten.Add(uint64(t.sent))
	c.s.out = c.s.out[:0]
	if err == nil {
		err = t.err
	}
	t.out, t.vec, t.file, t.clock, t.th = nil, nil, nil, nil, nil
	return err
}

// fileTransfer is the state of one transmit. It lives in the session, and
// its step function is bound once per session, so a transfer allocates
// nothing.
type fileTransfer struct {
	out     []byte           // output still to send before vec
	vec     [][]byte         // bytes still to send before the file
	flags   int              // of the sends sending them
	file    *os.File         // the file to send from, if any
	src     int              // its descriptor
	clock   *timeout.Manager // its coarse clock dates residency answers
	th      *timeout.Handle  // the connection's, renewed on progress
	timeout time.Duration    // Limits.WriteTimeout
	offset  int64
	n       int64 // file bytes still to send
	sent    int64
	err     error
	nb      bool // the socket is non-blocking (see sock.RawConn)
	cork    bool // cork the socket while sending (see corkAbove)
	corked  int  // the descriptor corked, or -1
}

// corkAbove is the size above which a file is sent with the socket corked
// (TCP_CORK), as nginx sends every file, on a connection's first response
// and on a sparse connection's (see park.go). sendfile(2) moves a file
// through a pipe of 16 pages, 64 KiB per round, and the socket is released
// between rounds: the peer's acknowledgements that came meanwhile are
// processed then, and with TCP_NODELAY they push out the round's last,
// partial segment at once, though more follows. A peer acknowledges every
// segment at once on a new connection and after an idle spell longer than
// its retransmission timeout (Linux's quick-ack mode), so at 10,000
// connections, each answered every few hundred milliseconds, an 80 KiB
// response over loopback left in three segments (47,616, 18,162 and
// 16,384 bytes) instead of two, with an acknowledgement for each; corked,
// only full segments leave until the cork is removed, which sends the
// rest. On a busy connection the acknowledgements are delayed, the
// response leaves in two segments without the cork, and the two
// setsockopt calls would cost 8% of its CPU (80 KiB at 100 connections).
const corkAbove = 64 << 10

// sendfileSpan bounds the file bytes one sendfile(2) call is asked to
// send: the range whose residency in the page cache is checked before it
// (see residency). A socket takes less than this at a time anyway.
const sendfileSpan = 1 << 20

// step is called by the runtime poller when the socket may be writable;
// it returns false to wait for writability again.
func (t *fileTransfer) step(fd uintptr) bool {
	if t.cork && t.corked < 0 {
		sock.SetCork(int(fd), true, t.nb)
		t.corked = int(fd)
	}
	for {
		for len(t.vec) > 0 && len(t.vec[0]) == 0 {
			t.vec = t.vec[1:]
		}
		if len(t.out) == 0 && len(t.vec) == 0 {
			break
		}
		m, err := sock.SendVec(int(fd), t.out, t.vec, t.flags, t.nb)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return false
		case err != nil:
			t.err = err
			return true
		}
		t.sent += int64(m)
		k := min(m, len(t.out))
		t.out = t.out[k:]
		for m -= k; m > 0; {
			k = min(m, len(t.vec[0]))
			t.vec[0] = t.vec[0][k:]
			if len(t.vec[0]) == 0 {
				t.vec = t.vec[1:]
			}
			m -= k
		}
		t.th.SetDeadline(t.timeout)
	}
	for t.n > 0 {
		// A span all in the page cache cannot make sendfile wait for a
		// disk, so it is sent without giving up the P (see sock.Sendfile); a
		// cold one, as a call that may block.
		span := min(t.n, sendfileSpan)
		nb := t.nb && sock.Resident(t.file, t.src, t.offset, span, t.clock.Now())
		m, err := sock.Sendfile(int(fd), t.src, &t.offset, int(span), nb)
		if m > 0 {
			t.n -= int64(m)
			t.sent += int64(m)
			t.th.SetDeadline(t.timeout)
		}
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return false
		case err != nil:
			t.err = err
			return true
		case m == 0:
			t.err = io.ErrUnexpectedEOF // the file shrank
			return true
		}
	}
	return true
}
