package proxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/upstream"
)

// readBufSize is the read buffer of an upstream connection. A response
// head longer than it grows it, up to Options.MaxResponseHeaderBytes;
// bodies pass through it, or around it for large reads.
const readBufSize = 16 << 10

// upConn is one connection to an upstream, owned by one request at a time
// (or idle in its pool). It is not safe for concurrent use.
type upConn struct {
	nc   net.Conn
	up   *host
	buf  []byte
	r, w int

	got    int64 // response bytes read since the request was sent
	reused bool  // taken from the pool: it served a request before

	// writeDeadline: a write deadline is set (see Proxy.startBody,
	// which may leave a read deadline in place for the next exchange to
	// replace, but never a write deadline).
	writeDeadline bool
	// readDeadline is the read deadline last set on nc by the exchanges
	// (zero: none), which armRead may leave in place.
	readDeadline upstream.Instant

	// The socket's own system calls (rawread_unix.go), bound once: rc
	// is nil where there are none.
	rc        syscall.RawConn
	peekRC    syscall.RawConn // rc, or a TLS connection's socket beneath
	peekFn    func(fd uintptr)
	peekBuf   [1]byte
	peekClean bool
	readFn    func(fd uintptr) bool
	writeFn   func(fd uintptr) bool
	// pending is a request head the next read writes before it waits
	// for the response (see read).
	pending []byte

	last lastHead // the last head read, for readHead

	rbuf []byte // the read in progress (a write may run beside it)
	rn   int
	rerr error
	wbuf []byte // the write in progress
	wn   int
	werr error
}

// deadlineSlack bounds how much later than asked a response-header
// timeout may expire: armRead keeps a read deadline set by an earlier
// exchange while it falls within this of the one asked for, so that a
// connection busy with one request after another sets its deadline about
// once a slack rather than once a request (a runtime timer moved each
// time). A timeout is never shorter than asked.
func deadlineSlack(timeout time.Duration) time.Duration {
	return min(timeout/8, time.Second)
}

// armRead makes the response to a request sent at now due by now+timeout,
// or by up to deadlineSlack(timeout) later: a read deadline in that range,
// left by an earlier exchange, stays; otherwise one at the slack's end is
// set.
func (c *upConn) armRead(now upstream.Instant, timeout time.Duration) {
	due, slack := now.Add(timeout), deadlineSlack(timeout)
	if c.readDeadline >= due && c.readDeadline.Sub(due) <= slack {
		return
	}
	c.readDeadline = due.Add(slack)
	c.nc.SetReadDeadline(c.readDeadline.Time())
}

// goneAfter bounds how long the proxy waits for a response head without
// watching its client: a longer wait goes on (from between half of it
// and all of it) with a watch that ends it when the client goes (see
// Proxy.awaitHead). The watch costs a goroutine and the client's gone
// notice (an epoll registration), which the quick answers, nearly all of
// them, never pay.
const goneAfter = 500 * time.Millisecond

// armHead arms the read deadline for the response head to a request sent
// at now, due within timeout. For a timeout of at most goneAfter it is
// armRead's. For a longer one it is a first deadline goneAfter/2 to
// goneAfter from now, the one an earlier exchange left when it falls
// there (a busy connection moves it about once every goneAfter/2, as
// armRead moves its own once a slack): Proxy.awaitHead then waits on,
// until the timeout, watching the client.
func (c *upConn) armHead(now upstream.Instant, timeout time.Duration) {
	if timeout <= goneAfter {
		c.armRead(now, timeout)
		return
	}
	if c.readDeadline >= now.Add(goneAfter/2) && c.readDeadline <= now.Add(goneAfter) {
		return
	}
	c.readDeadline = now.Add(goneAfter)
	c.nc.SetReadDeadline(c.readDeadline.Time())
}

// fill reads more bytes into the buffer, moving unread bytes to its start
// first, growing it (up to max) when it is full.
func (c *upConn) fill(max int) error {
	if c.r > 0 {
		n := copy(c.buf, c.buf[c.r:c.w])
		c.r, c.w = 0, n
	}
	if c.w == len(c.buf) {
		if len(c.buf) >= max {
			return errBufferFull
		}
		nb := make([]byte, min(2*len(c.buf), max))
		copy(nb, c.buf[:c.w])
		c.buf = nb
	}
	n, err := c.read(c.buf[c.w:])
	c.w += n
	c.got += int64(n)
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

var errBufferFull = errors.New("proxy: buffer full")

// readHead reads and parses a response head into h. Its slices are valid
// until the next read on c.
//
// A head whose bytes are those of the last head c read (c.last) is not
// parsed again: the same bytes under the same limits parse to the same
// head, which h is given. An upstream answering the same resource
// repeats its heads (Date changes once a second), and parsing one is
// most of the proxy's own work on a small response; a head that differs
// costs a comparison that stops at its first different byte, or none
// when the lengths differ, and a copy of its bytes.
func (c *upConn) readHead(h *responseHead, maxBytes, maxFields int) error {
	for {
		if c.last.repeats(c.buf[c.r:c.w], maxBytes, maxFields) {
			h.copyFrom(&c.last.head)
			c.r += len(c.last.raw)
			c.last.hits++
			return nil
		}
		n, err := parseResponseHead(c.buf[c.r:c.w], h, maxBytes, maxFields)
		if err == nil {
			c.last.remember(c.buf[c.r:c.r+n], h, maxBytes, maxFields)
			c.r += n
			return nil
		}
		if err != errNeedMore {
			return err
		}
		if err := c.fill(maxBytes + 2); err != nil {
			if err == errBufferFull {
				return errHeadTooLarge
			}
			return err
		}
	}
}

// Body framing of an upstream response.
const (
	bodyNone    = iota
	bodyLength  // Content-Length
	bodyChunked // chunked, decoded here
	bodyClose   // until the upstream closes the connection
)

// bodyReader reads an upstream response body, decoded from its framing,
// never past its end, so the connection can serve the next request. It
// is not safe for concurrent use.
type bodyReader struct {
	c       *upConn
	mode    int
	left    int64 // bytes left in the body (length)
	chunk   httpgrammar.ChunkedDecoder
	done    bool
	err     error
	trailer []field // copied: they outlive the buffer

	maxHead, maxFields int // the trailer section's bounds, the head's
}

func (b *bodyReader) start(c *upConn, mode int, length int64, maxHead, maxFields int) {
	*b = bodyReader{c: c, mode: mode, left: length, maxHead: maxHead, maxFields: maxFields, trailer: b.trailer[:0]}
	if mode == bodyNone || mode == bodyLength && length == 0 {
		b.done = true
	}
}

// whole returns a Content-Length body that is in the connection's
// buffer whole, none of it read yet, and consumes it: the caller writes
// it from there (the slice is valid until the connection's next read or
// its buffer's release). Nil otherwise; Read then reads as usual.
func (b *bodyReader) whole() []byte {
	c := b.c
	if b.mode != bodyLength || b.done || b.err != nil || b.left > int64(c.w-c.r) {
		return nil
	}
	p := c.buf[c.r : c.r+int(b.left)]
	c.r += len(p)
	b.left, b.done = 0, true
	return p
}

// ready reports whether the next Read can return without waiting for
// the upstream: when it cannot, the bytes read so far are all there is
// for now, and a proxy flushes them to its client.
func (b *bodyReader) ready() bool {
	if b.done || b.err != nil {
		return false
	}
	c := b.c
	avail := c.buf[c.r:c.w]
	if b.mode != bodyChunked || b.chunk.State == httpgrammar.ChunkData {
		return len(avail) > 0
	}
	switch b.chunk.State {
	case httpgrammar.ChunkDataEnd:
		if len(avail) < 2 {
			return false
		}
		return chunkLineReady(avail[2:])
	case httpgrammar.ChunkSizeLine:
		return chunkLineReady(avail)
	}
	return trailerReady(avail)
}

// chunkLineReady reports whether s starts with a whole chunk-size line
// and what a Read needs after it: a data byte, or the whole trailer
// section after the last chunk.
func chunkLineReady(s []byte) bool {
	i := bytes.IndexByte(s, '\n')
	if i < 0 {
		return false
	}
	if size, err := httpgrammar.ParseChunkLine(bytes.TrimSuffix(s[:i], []byte("\r"))); err == nil && size == 0 {
		return trailerReady(s[i+1:])
	}
	return len(s) > i+1
}

// trailerReady reports whether s holds a whole trailer section.
func trailerReady(s []byte) bool {
	return bytes.HasPrefix(s, []byte("\r\n")) || bytes.Contains(s, []byte("\n\r\n"))
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
	switch b.mode {
	case bodyChunked:
		return b.readChunked(p)
	case bodyClose:
		n, err := b.readData(p)
		if err == io.EOF {
			b.done = true
			return n, io.EOF
		}
		return n, b.fail(err)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.readData(p)
	b.left -= int64(n)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return n, b.fail(err)
	}
	if b.left == 0 {
		b.done = true
		return n, io.EOF
	}
	return n, nil
}

func (b *bodyReader) fail(err error) error {
	if err != nil {
		b.err = err
	}
	return err
}

// readData reads body bytes from the buffer or, when it is empty, from
// the socket: reads at least as large as the buffer go straight into p.
func (b *bodyReader) readData(p []byte) (int, error) {
	c := b.c
	if c.r == c.w {
		if len(p) >= len(c.buf) {
			n, err := c.read(p)
			c.got += int64(n)
			if n > 0 {
				return n, nil
			}
			if err == nil {
				err = io.ErrNoProgress
			}
			return 0, err
		}
		c.r, c.w = 0, 0
		if err := c.fill(len(c.buf)); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.buf[c.r:c.w])
	c.r += n
	return n, nil
}

// readChunked decodes the chunked body, and reads its trailer section
// into b.trailer, with httpgrammar's decoder, the one the engine decodes
// request bodies with.
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
				return n, b.fail(eofUnexpected(err))
			}
			b.chunk.Consumed(n)
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
			n, err = b.chunk.Frame(c.buf[c.r:c.w])
		}
		c.r += n
		switch {
		case err == httpgrammar.ErrIncomplete:
			if sizeLine && c.w-c.r >= httpgrammar.MaxChunkLine {
				return 0, b.fail(errChunkLine)
			}
			if err := c.fill(len(c.buf)); err != nil {
				return 0, b.fail(eofUnexpected(err))
			}
		case err != nil:
			return 0, b.fail(chunkError(err))
		}
	}
}

// trailerLine reads the trailer section's next line from the buffer
// (httpgrammar.ChunkedDecoder.Trailer, within the head's bounds: maxHead
// bytes and maxFields fields), and copies a field line into b.trailer: it outlives
// the buffer. It returns the bytes consumed.
func (b *bodyReader) trailerLine() (int, error) {
	c := b.c
	name, value, n, err := b.chunk.Trailer(c.buf[c.r:c.w], b.maxHead, b.maxFields)
	if name != nil {
		kv := make([]byte, len(name)+len(value))
		copy(kv, name)
		copy(kv[len(name):], value)
		b.trailer = append(b.trailer, field{kv[:len(name)], kv[len(name):]})
	}
	return n, err
}

// chunkError turns an error of httpgrammar's chunked decoding into a
// refusal.
func chunkError(err error) error {
	switch err {
	case httpgrammar.ErrChunkEnd:
		return errChunkEnd
	case httpgrammar.ErrChunkBareLF:
		return errChunkBareLF
	case httpgrammar.ErrSectionTooLarge:
		return errHeadTooLarge
	case httpgrammar.ErrObsFold:
		return errObsFold
	case httpgrammar.ErrTrailerField:
		return errTrailer
	}
	return grammarError(err)
}

func eofUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// isTimeout reports whether err is a deadline expiring.
func isTimeout(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true // without the allocation errors.As costs
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
