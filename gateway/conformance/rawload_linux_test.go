//go:build conformance

package conformance

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/httpgrammar"
)

// rawTimeout bounds each request of a rawLoad, from its write to the end
// of its response: a hung data plane fails the request rather than the
// test's deadline.
const rawTimeout = 30 * time.Second

// maxRawBody is the largest response body a rawLoad reads; a larger one
// fails its request.
const maxRawBody = 1 << 20

// A rawLoad is a closed-loop load of HTTP/1.1 keep-alive connections to
// one address or several (a connection loop to each in turn), each writing one fixed request, reading its response,
// and writing it again: a client lean enough that the data plane, not
// the load, is what a loaded machine measures (net/http's client took
// about 47 µs of CPU a request, more than the data plane's 40 µs).
//
// Every request is counted once, as served or failed, strictly: served
// is a complete response of status 200, framed by Content-Length or
// chunked; anything else is a failure — another status, a connection
// that could not be opened, a write that failed, a connection closed or
// reset before the response ended, a response longer than the framing
// says or with none (read to the close), a malformed head, a request
// not answered within rawTimeout, or a sampled body that check refuses.
// A connection is opened again after a failure, and after a response
// that says "Connection: close", which is not a failure.
//
// Start one with startRawLoad; its methods are safe for concurrent use.
type rawLoad struct {
	req   []byte
	limit int64 // requests to send in all, 0 for no limit (tests of the load itself)
	// check is given one response body in sampleEvery of each connection
	// loop's; an error it returns fails that request.
	check func(body []byte) error

	stop     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
	sent     atomic.Int64 // requests started (for limit)
	served   atomic.Int64
	failed   atomic.Int64
	dials    atomic.Int64
	firstErr atomic.Pointer[string]
}

// sampleEvery is how often (one response in sampleEvery of a connection
// loop's) a rawLoad hands the body to check.
const sampleEvery = 128

// startRawLoad starts n connection loops sending req until Stop (or the
// test's end), or until limit requests were sent if limit > 0: loop i
// connects to addrs[i%len(addrs)].
func startRawLoad(t testing.TB, n int, addrs []string, req []byte, limit int64, check func([]byte) error) *rawLoad {
	l := &rawLoad{req: req, limit: limit, check: check, stop: make(chan struct{})}
	t.Cleanup(func() { l.Stop() })
	for i := range n {
		l.wg.Add(1)
		go l.loop(addrs[i%len(addrs)])
	}
	return l
}

// Stop stops the connection loops, waits for their requests in flight,
// and returns how many requests were served and failed, the first
// failure ("" if none) and how many connections were opened (or tried).
// Stopping again returns the counts again.
func (l *rawLoad) Stop() (served, failed int64, first string, dials int64) {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
	if p := l.firstErr.Load(); p != nil {
		first = *p
	}
	return l.served.Load(), l.failed.Load(), first, l.dials.Load()
}

// wait waits until the connection loops end by themselves (limit).
func (l *rawLoad) wait() { l.wg.Wait() }

func (l *rawLoad) fail(err error) {
	l.failed.Add(1)
	msg := err.Error()
	l.firstErr.CompareAndSwap(nil, &msg)
}

func (l *rawLoad) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

// loop is one connection's closed loop, to addr.
func (l *rawLoad) loop(addr string) {
	defer l.wg.Done()
	var (
		c        net.Conn
		br       = bufio.NewReaderSize(nil, 16<<10)
		renew    time.Time // when the connection's deadline is moved on
		body     []byte
		answered int64
	)
	closeConn := func() {
		if c != nil {
			c.Close()
			c = nil
		}
	}
	defer closeConn()
	for !l.stopped() {
		if l.limit > 0 && l.sent.Add(1) > l.limit {
			return
		}
		if c == nil {
			l.dials.Add(1)
			nc, err := net.DialTimeout("tcp", addr, rawTimeout)
			if err != nil {
				l.fail(fmt.Errorf("opening a connection: %w", err))
				// Not a spin on a refused port: a pause between failures.
				time.Sleep(10 * time.Millisecond)
				continue
			}
			c = nc
			br.Reset(c)
			renew = time.Time{}
		}
		// One deadline per second of requests rather than one each: a
		// request's bound is then between rawTimeout-1s and rawTimeout.
		if now := time.Now(); now.After(renew) {
			if err := c.SetDeadline(now.Add(rawTimeout)); err != nil {
				l.fail(fmt.Errorf("setting a deadline: %w", err))
				closeConn()
				continue
			}
			renew = now.Add(time.Second)
		}
		if _, err := c.Write(l.req); err != nil {
			l.fail(fmt.Errorf("writing the request: %w", err))
			closeConn()
			continue
		}
		answered++
		sample := l.check != nil && answered%sampleEvery == 0
		status, b, keep, err := readRawResponse(br, body[:0], sample)
		body = b[:0]
		switch {
		case err != nil:
			l.fail(err)
			closeConn()
			continue
		case status != 200:
			l.fail(fmt.Errorf("status %d: %.200q", status, b))
		case sample:
			if err := l.check(b); err != nil {
				l.fail(fmt.Errorf("a sampled response body: %w: %.200q", err, b))
			} else {
				l.served.Add(1)
			}
		default:
			l.served.Add(1)
		}
		if !keep {
			closeConn()
		}
	}
}

var (
	errRawNoFraming = errors.New("a response with neither Content-Length nor chunked (read to the close)")
	errRawTooLarge  = errors.New("a response body larger than the load reads")
)

// readRawResponse reads one response to a GET from br, as a strict
// HTTP/1.1 client: a status line "HTTP/1.1 NNN reason", field lines
// ending in CRLF that httpgrammar.SplitFieldLine accepts, and a body
// framed by Transfer-Encoding: chunked (its trailer read and dropped) or
// one Content-Length (204 and 304 have none). It returns the status, the
// body appended to buf when want is set or the status is not 200 (else
// the body is skipped), and whether the connection may carry another
// request (no "Connection: close"). An error means the connection is
// unusable: the response was cut short or malformed.
func readRawResponse(br *bufio.Reader, buf []byte, want bool) (status int, body []byte, keep bool, err error) {
	body = buf
	line, err := rawLine(br)
	if err != nil {
		return 0, body, false, fmt.Errorf("reading the status line: %w", err)
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) || (len(line) > 12 && line[12] != ' ') {
		return 0, body, false, fmt.Errorf("a malformed status line: %.100q", line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil || status < 100 {
		return 0, body, false, fmt.Errorf("a malformed status line: %.100q", line)
	}
	if status < 200 {
		return status, body, false, fmt.Errorf("an interim response %d to a GET", status)
	}
	keep = true
	length := int64(-1)
	var te httpgrammar.TransferCodings
	hasTE := false
	for {
		line, err := rawLine(br)
		if err != nil {
			return status, body, false, fmt.Errorf("reading the response head: %w", err)
		}
		if len(line) == 0 {
			break
		}
		name, value, err := httpgrammar.SplitFieldLine(line)
		if err != nil {
			return status, body, false, fmt.Errorf("a malformed field line %.100q: %w", line, err)
		}
		switch {
		case httpgrammar.EqualFold(name, "Content-Length"):
			n, ok := httpgrammar.ParseContentLength(value)
			if !ok || (length >= 0 && n != length) {
				return status, body, false, fmt.Errorf("a malformed or conflicting Content-Length %.100q", value)
			}
			length = n
		case httpgrammar.EqualFold(name, "Transfer-Encoding"):
			hasTE = true
			if err := te.Add(value); err != nil {
				return status, body, false, fmt.Errorf("Transfer-Encoding %.100q: %w", value, err)
			}
		case httpgrammar.EqualFold(name, "Connection"):
			if httpgrammar.HasToken(value, "close") {
				keep = false
			}
		}
	}
	want = want || status != 200
	switch {
	case status == 204 || status == 304:
		return status, body, keep, nil
	case hasTE:
		if length >= 0 {
			return status, body, false, errors.New("a response with both Transfer-Encoding and Content-Length")
		}
		if err := te.Verdict(); err != nil {
			return status, body, false, fmt.Errorf("Transfer-Encoding: %w", err)
		}
		body, err = readRawChunked(br, body, want)
		return status, body, keep && err == nil, err
	case length < 0:
		return status, body, false, errRawNoFraming
	}
	body, err = readRawBody(br, body, length, want)
	return status, body, keep && err == nil, err
}

// readRawBody reads n bytes of body from br, appending them to buf when
// want is set.
func readRawBody(br *bufio.Reader, buf []byte, n int64, want bool) ([]byte, error) {
	if int64(len(buf))+n > maxRawBody {
		return buf, errRawTooLarge
	}
	if !want {
		if _, err := br.Discard(int(n)); err != nil {
			return buf, fmt.Errorf("a short body (%d bytes announced): %w", n, eofUnexpected(err))
		}
		return buf, nil
	}
	start := len(buf)
	buf = append(buf, make([]byte, n)...)
	if _, err := io.ReadFull(br, buf[start:]); err != nil {
		return buf[:start], fmt.Errorf("a short body (%d bytes announced): %w", n, eofUnexpected(err))
	}
	return buf, nil
}

// readRawChunked reads a chunked body and its trailer from br.
func readRawChunked(br *bufio.Reader, buf []byte, want bool) ([]byte, error) {
	for {
		line, err := rawLine(br)
		if err != nil {
			return buf, fmt.Errorf("reading a chunk size: %w", err)
		}
		size, err := httpgrammar.ParseChunkLine(line)
		if err != nil {
			return buf, fmt.Errorf("a chunk size line %.100q: %w", line, err)
		}
		if size == 0 {
			break
		}
		if size > maxRawBody {
			return buf, errRawTooLarge
		}
		if buf, err = readRawBody(br, buf, size, want); err != nil {
			return buf, err
		}
		if line, err := rawLine(br); err != nil || len(line) != 0 {
			return buf, fmt.Errorf("no CRLF after a chunk (%.20q): %v", line, eofUnexpected(err))
		}
	}
	for {
		line, err := rawLine(br)
		if err != nil {
			return buf, fmt.Errorf("reading the trailer: %w", err)
		}
		if len(line) == 0 {
			return buf, nil
		}
	}
}

// rawLine reads a line ending in CRLF and returns it without the CRLF,
// valid until the next read of br. A line of the whole buffer or more, or
// one ending in a bare LF, is an error.
func rawLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errors.New("a line longer than the read buffer")
		}
		return nil, eofUnexpected(err)
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("a line ending in a bare LF: %.100q", line)
	}
	return line[:len(line)-2], nil
}

// eofUnexpected turns io.EOF, a close in the middle of a response, into
// io.ErrUnexpectedEOF.
func eofUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
