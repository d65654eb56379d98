package engine

import (
	"net"
	"strconv"
	"time"
)

// The output of a connection. All response bytes pass through the
// session's out buffer except large body writes, which go out with it in
// one writev (as do the buffers of WriteBuffers), and file bodies, which go out by sendfile (see sendfile.go).

// appendOut appends a short string to the output, flushing first if it
// does not fit.
func (c *conn) appendOut(str string) error {
	s := c.s
	if len(s.out)+len(str) > cap(s.out) {
		if err := c.flush(); err != nil {
			return err
		}
	}
	s.out = append(s.out, str...)
	return nil
}

// writeOut queues p for sending. Small writes are copied into the output
// buffer; a write of half the buffer or more is sent at once together with
// what is pending, without copying.
func (c *conn) writeOut(p []byte) error {
	s := c.s
	if len(s.out)+len(p) <= cap(s.out) {
		s.out = append(s.out, p...)
		return nil
	}
	if len(p) >= cap(s.out)/2 {
		return c.writev(p)
	}
	if err := c.flush(); err != nil {
		return err
	}
	s.out = append(s.out, p...)
	return nil
}

// writeChunk queues p as one chunk of a chunked body (RFC 9112 §7.1).
func (c *conn) writeChunk(p []byte) error {
	var size [20]byte
	h := strconv.AppendInt(size[:0], int64(len(p)), 16)
	h = append(h, '\r', '\n')
	s := c.s
	if len(s.out)+len(h) > cap(s.out) {
		if err := c.flush(); err != nil {
			return err
		}
	}
	s.out = append(s.out, h...)
	if err := c.writeOut(p); err != nil {
		return err
	}
	return c.appendOut("\r\n")
}

// flush writes the pending output, under the write timeout.
func (c *conn) flush() error {
	s := c.s
	if s == nil || len(s.out) == 0 {
		return nil
	}
	err := c.write(s.out)
	s.out = s.out[:0]
	return err
}

// write sends b in full under the write timeout.
func (c *conn) write(b []byte) error {
	c.th.SetDeadline(c.srv.limits().WriteTimeout)
	n, err := c.nc.Write(b)
	c.srv.stats.bytesWritten.Add(uint64(n))
	c.th.Clear()
	if err != nil {
		c.closeAfter, c.broken = true, true
	}
	return err
}

// writev sends the pending output followed by p in one system call where
// the platform allows.
func (c *conn) writev(p []byte) error {
	s := c.s
	s.iov = append(s.iov[:0], s.out, p)
	return c.sendIov()
}

// writeBuffers sends the pending output followed by the buffers of p in
// one system call where the platform allows. p is not kept or changed.
func (c *conn) writeBuffers(p [][]byte) error {
	s := c.s
	s.iov = append(append(s.iov[:0], s.out), p...)
	return c.sendIov()
}

// writeChunkBuffers sends the pending output followed by the buffers of
// p, n bytes in all, as one chunk of a chunked body, in one system call
// where the platform allows. p is not kept or changed.
func (c *conn) writeChunkBuffers(p [][]byte, n int64) error {
	s := c.s
	if len(s.out)+20 > cap(s.out) {
		if err := c.flush(); err != nil {
			return err
		}
	}
	s.out = strconv.AppendInt(s.out, n, 16)
	s.out = append(s.out, '\r', '\n')
	s.iov = append(append(s.iov[:0], s.out), p...)
	s.iov = append(s.iov, crlf)
	return c.sendIov()
}

// crlf ends a chunk's data; never written to.
var crlf = []byte("\r\n")

// sendIov sends s.iov, whose first buffer is the pending output, and
// empties both.
func (c *conn) sendIov() error {
	s := c.s
	var err error
	if rawSend && c.rc != nil {
		err = c.transmit(s.iov[1:], nil, 0, 0, 0)
	} else {
		bufs := net.Buffers(s.iov)
		c.th.SetDeadline(c.srv.limits().WriteTimeout)
		var n int64
		n, err = bufs.WriteTo(c.nc)
		c.srv.stats.bytesWritten.Add(uint64(n))
		c.th.Clear()
		s.out = s.out[:0]
	}
	clear(s.iov)
	s.iov = s.iov[:0]
	if err != nil {
		c.closeAfter, c.broken = true, true
	}
	return err
}

// writeError sends a refusal of a request whose head could not be parsed,
// and is always followed by closing the connection.
func (c *conn) writeError(e *ProtocolError) {
	if c.interrupted.Load() {
		c.nc.SetDeadline(time.Time{})
	}
	c.srv.stats.refused.Add(1)
	s := c.s
	b := appendStatusLine(s.out, e.Status)
	b = c.srv.appendServerFields(b)
	b = appendErrorBody(b, e, true)
	s.out = b
	c.closeAfter = true
	c.unread = true
	c.refused(e, c.rbuf[c.r:c.w], errorBodyLen(e))
	c.flush()
}

// appendErrorBody appends Content-Type, Content-Length, optionally
// Connection: close, and a short text body naming the error.
func appendErrorBody(b []byte, e *ProtocolError, close bool) []byte {
	b = append(b, "Content-Type: text/plain; charset=utf-8\r\n"...)
	if close {
		b = append(b, "Connection: close\r\n"...)
	}
	text := statusText(e.Status)
	b = append(b, "Content-Length: "...)
	b = appendInt(b, errorBodyLen(e))
	b = append(b, "\r\n\r\n"...)
	b = append(b, text...)
	b = append(b, ": "...)
	b = append(b, e.Msg...)
	return append(b, '\n')
}

// errorBodyLen is the length of the body appendErrorBody writes for e.
func errorBodyLen(e *ProtocolError) int64 {
	return int64(len(statusText(e.Status)) + 2 + len(e.Msg) + 1)
}
