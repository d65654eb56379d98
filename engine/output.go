package engine

import "strconv"

// Output helpers of conn. All response bytes pass through the session's
// out buffer except large body writes, which go out with it in one writev.

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
