package engine

import (
	"io"
	"net/http"
	"os"

	"github.com/sluice-server/sluice/httpgrammar"
)

// bodyReader is Request.Body. It reads the body from the connection's
// buffer first and the socket after, never past the end of the body, under
// the body timeout and minimum rate (see bodyPace).
type bodyReader struct {
	c       *conn
	req     *Request
	chunked bool
	done    bool
	chunk   httpgrammar.ChunkedDecoder
	left    int64 // bytes left in the body (length)
	read    int64 // chunked body bytes delivered, for the limit
	limit   int64 // Limits.MaxBodyBytes, -1 for none
	pace    bodyPace
	err     error // sticky error for the handler

	continueSent bool
	refusal      *ProtocolError // why the body was refused, for the response
}

var _ io.Reader = (*bodyReader)(nil)

func (b *bodyReader) start(c *conn, req *Request) {
	*b = bodyReader{c: c, req: req, limit: c.srv.limits().MaxBodyBytes}
	b.pace.start(c.srv.limits())
	switch {
	case req.ContentLength < 0:
		b.chunked = true
	case req.ContentLength == 0:
		b.done = true
	default:
		b.left = req.ContentLength
	}
}

// Read implements io.Reader.
func (b *bodyReader) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.req.expectCont && !b.continueSent && !b.c.s.resp.committed {
		b.continueSent = true
		if err := b.c.appendOut("HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return 0, b.fail(err)
		}
	}
	if b.chunked {
		return b.readChunked(p)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.readData(p)
	if err != nil {
		return n, err
	}
	b.left -= int64(n)
	if b.left == 0 {
		b.done = true
		return n, io.EOF
	}
	return n, nil
}

// readData reads body bytes (never more than len(p), which the caller
// bounds by what is left) from the buffer, or from the socket: large reads
// go straight into p.
func (b *bodyReader) readData(p []byte) (int, error) {
	c := b.c
	if c.r == c.w {
		if len(p) >= readBufSize {
			if err := b.arm(); err != nil {
				return 0, err
			}
			n, err := c.nc.Read(p)
			c.th.Clear()
			b.pace.got(c.srv.tm.Now(), n)
			if n > 0 {
				return n, nil
			}
			return 0, b.fail(err)
		}
		if err := b.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.rbuf[c.r:c.w])
	c.r += n
	return n, nil
}

// arm flushes pending output and sets the deadline of the wait for body
// bytes that follows: the end of the grace period or of the rate's current
// window (see bodyPace). The caller reports what the wait brought to
// b.pace.got.
func (b *bodyReader) arm() error {
	c := b.c
	if err := c.flush(); err != nil {
		return b.fail(err)
	}
	c.th.SetDeadlineAt(b.pace.wait(c.srv.tm.Now()))
	return nil
}

// fill reads more bytes into the connection buffer.
func (b *bodyReader) fill() error {
	if err := b.arm(); err != nil {
		return err
	}
	c := b.c
	unread := c.w - c.r // fill may move the bytes, never drop them
	err := c.fill(c.srv.limits().MaxHeaderBytes + 2)
	c.th.Clear()
	b.pace.got(c.srv.tm.Now(), c.w-c.r-unread)
	if err != nil {
		return b.fail(err)
	}
	return nil
}

// fail records why the body could not be read and returns the error for
// the handler.
func (b *bodyReader) fail(err error) error {
	b.c.closeAfter = true
	switch {
	case b.c.interrupted.Load():
		b.refusal = errBodyTimeout
		b.err = os.ErrDeadlineExceeded
	case err == io.EOF || err == errBufferFull:
		b.refusal = errBodyEOF
		b.err = io.ErrUnexpectedEOF
	default:
		if pe, ok := err.(*ProtocolError); ok {
			b.refusal = pe
		}
		b.err = err
	}
	return b.err
}

var errBodyTimeout = &ProtocolError{Status: 408, Msg: "request body too slow", Close: true}

func (b *bodyReader) tooLarge() error {
	b.c.closeAfter = true
	b.refusal = errBodyTooLarge
	b.err = &http.MaxBytesError{Limit: b.limit}
	return b.err
}

// readChunked decodes the chunked body, and reads its trailer section
// into Request.Trailer, with httpgrammar's decoder, the one the upstream
// client decodes responses with.
func (b *bodyReader) readChunked(p []byte) (int, error) {
	c := b.c
	for {
		switch b.chunk.State {
		case httpgrammar.ChunkData:
			if int64(len(p)) > b.chunk.Left {
				p = p[:b.chunk.Left]
			}
			n, err := b.readData(p)
			if err != nil {
				return n, err
			}
			b.chunk.Consumed(n)
			b.read += int64(n)
			return n, nil
		case httpgrammar.ChunkDone:
			b.done = true
			return 0, io.EOF
		}
		sizeLine := b.chunk.State == httpgrammar.ChunkSizeLine
		var n int
		var err error
		if b.chunk.State == httpgrammar.ChunkTrailer {
			n, err = b.trailerLine()
		} else {
			n, err = b.chunk.Frame(c.rbuf[c.r:c.w])
		}
		c.r += n
		switch {
		case err == httpgrammar.ErrIncomplete:
			if sizeLine && c.w-c.r >= httpgrammar.MaxChunkLine {
				return 0, b.fail(errChunkLine)
			}
			if err := b.fill(); err != nil {
				return 0, err
			}
		case err != nil:
			return 0, b.fail(refusalOf(err))
		case sizeLine && b.chunk.State == httpgrammar.ChunkData:
			if b.limit >= 0 && b.read+b.chunk.Left > b.limit {
				return 0, b.tooLarge()
			}
		}
	}
}

// trailerLine reads the trailer section's next line from the buffer
// (httpgrammar.ChunkedDecoder.Trailer, under the header section's
// limits), and copies a field line into Request.Trailer. It returns the
// bytes consumed.
func (b *bodyReader) trailerLine() (int, error) {
	c, lim := b.c, b.c.srv.limits()
	name, value, n, err := b.chunk.Trailer(c.rbuf[c.r:c.w], lim.MaxHeaderBytes, lim.MaxHeaderCount)
	if name != nil {
		field := make([]byte, len(name)+len(value))
		copy(field, name)
		copy(field[len(name):], value)
		b.req.Trailer = append(b.req.Trailer, Field{Name: field[:len(name)], Value: field[len(name):]})
	}
	return n, err
}

// keepable is asked when the response head is composed while the body is
// not all read: it reports whether the connection can still serve another
// request after this one, so that the head can announce a close. When the
// handler is done (final), or the request is a GET or HEAD (whose content
// has no defined meaning, RFC 9110 §9.3.1, and which handlers do not read
// after answering), the rest of the body is drained now, within
// MaxDrainBytes. Otherwise the handler may still read it, so only a body
// already failed, or one declared longer than what a drain may read, is
// known to end the connection.
func (b *bodyReader) keepable(final bool) bool {
	if final || b.req.IsMethod("GET") || b.req.IsMethod("HEAD") {
		// The session's body buffer may hold the response's buffered
		// body now; the drain then needs its own scratch (a rare path).
		if s := b.c.s; len(s.bodyBuf) == 0 {
			return b.discard()
		}
		return b.drain(make([]byte, 4096))
	}
	return b.err == nil && (b.chunked || b.left <= b.c.srv.limits().MaxDrainBytes)
}

// discard reads and drops what the handler left of the body, up to
// MaxDrainBytes, so the connection can serve its next request. It reports
// whether the body was consumed completely.
func (b *bodyReader) discard() bool {
	return b.drain(b.c.s.bodyBuf[:cap(b.c.s.bodyBuf)])
}

// drain is discard reading into scratch.
func (b *bodyReader) drain(scratch []byte) bool {
	if b.done {
		return true
	}
	if b.err != nil || b.req.expectCont && !b.continueSent || b.req.expectOther {
		return false // the client may be waiting to send it (see commit)
	}
	budget := b.c.srv.limits().MaxDrainBytes
	for budget > 0 {
		n, err := b.Read(scratch)
		budget -= int64(n)
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}

// parseChunkLine parses chunk-size [ chunk-ext ]
// (httpgrammar.ParseChunkLine), answering a broken rule with its refusal.
func parseChunkLine(line []byte) (int64, error) {
	size, err := httpgrammar.ParseChunkLine(line)
	if err != nil {
		return 0, refusalOf(err)
	}
	return size, nil
}
