package cgi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"

	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
)

// respond reads the program's header, sets up the response and streams
// the body. It stops early when the program is killed (stop).
func (x *run) respond(w pipe.Writer) error {
	// The header.
	var hdr []byte
	var rest []byte
	for {
		var b []byte
		ok := false
		select {
		case b, ok = <-x.chunks:
		case <-x.stop:
		}
		if !ok {
			return x.failStopped(w)
		}
		scan := max(0, len(hdr)-2) // a blank line may straddle reads
		hdr = append(hdr, b...)
		recycle(b)
		if end, bodyAt := HeadEnd(hdr, scan); end >= 0 {
			hdr, rest = hdr[:end], hdr[bodyAt:]
			break
		}
		if len(hdr) > x.g.maxHdr {
			x.kill()
			return x.fail(w, http.StatusBadGateway, "CGI program's header is too large")
		}
	}
	if len(hdr) > x.g.maxHdr {
		x.kill()
		return x.fail(w, http.StatusBadGateway, "CGI program's header is too large")
	}
	if err := x.setHeader(hdr); err != nil {
		x.kill()
		x.g.log.Warn("cgi: invalid response header", "script", x.scriptName, "err", err, x.id)
		return x.fail(w, http.StatusBadGateway, "CGI program sent an invalid header")
	}
	if s := x.c.Status(); s == http.StatusNoContent || s == http.StatusNotModified {
		w = &bodyless{Writer: w, x: x}
	}

	// Nothing goes to the client while the body feeder may still read the
	// request: the engine reads and writes a connection on one goroutine.
	// Meanwhile stdout is held in memory, up to a bound, and past it in an
	// unlinked temporary file (a program echoing a large upload).
	pending := [][]byte{rest}
	held := len(rest)
	putPending := func() {
		for _, b := range pending[1:] {
			recycle(b)
		}
	}
	var spill *os.File
	defer func() {
		if spill != nil {
			spill.Close()
		}
	}()
	chunks := x.chunks
	for waiting := true; waiting; {
		select {
		case <-x.fed:
			waiting = false
		case <-x.stop:
			putPending()
			return x.failStopped(w)
		case b, ok := <-chunks:
			if !ok {
				chunks = nil
				continue
			}
			if spill == nil && held+len(b) <= maxPending {
				pending = append(pending, b)
				held += len(b)
				continue
			}
			var err error
			if spill == nil {
				spill, err = tempFile()
			}
			if err == nil {
				_, err = spill.Write(b)
			}
			recycle(b)
			if err != nil {
				x.kill()
				putPending()
				x.g.log.Error("cgi: cannot hold output", "script", x.scriptName, "err", err, x.id)
				return x.fail(w, http.StatusInternalServerError, "cannot hold CGI output")
			}
		}
	}
	if x.bodyErr != nil {
		putPending()
		return x.failBody(w)
	}
	for i, b := range pending {
		if len(b) > 0 {
			x.wrote = true
			if _, err := w.Write(b); err != nil {
				x.kill()
				for _, b := range pending[i+1:] {
					recycle(b)
				}
				return err
			}
		}
		if i > 0 {
			recycle(b)
		}
	}
	if spill != nil {
		x.wrote = true
		buf := bufs.Get().(*[]byte)
		_, err := io.CopyBuffer(writerOnly{w}, io.NewSectionReader(spill, 0, 1<<62), *buf)
		bufs.Put(buf)
		if err != nil {
			x.kill()
			return err
		}
	}

	// The body, flushed whenever the program pauses.
	for chunks != nil {
		var b []byte
		ok := false
		select {
		case b, ok = <-chunks:
		case <-x.stop:
		default:
			x.wrote = true
			if err := w.Flush(); err != nil {
				x.kill()
				return err
			}
			select {
			case b, ok = <-chunks:
			case <-x.stop:
			}
		}
		if !ok {
			break
		}
		x.wrote = true
		_, err := w.Write(b)
		recycle(b)
		if err != nil {
			x.kill()
			return err
		}
	}
	_, err := x.stopped(w)
	return err
}

// errClientGone ends a response nobody will receive.
var errClientGone = errors.New("cgi: client gone")

// stopped answers for a program the server killed: 504 after its timeout
// and 503 when the component closed, if nothing was sent yet; otherwise
// an error cuts the response short. It reports false, doing nothing, if
// the program was not killed for one of those reasons or the client's.
func (x *run) stopped(w pipe.Writer) (bool, error) {
	switch {
	case x.clientGone.Load():
		return true, errClientGone
	case x.timedOut.Load():
		return true, x.fail(w, http.StatusGatewayTimeout, "CGI program timed out")
	case x.closing.Load():
		return true, x.fail(w, http.StatusServiceUnavailable, "server shutting down")
	}
	return false, nil
}

// failStopped answers a program that ended, or was killed, before its
// response could be sent.
func (x *run) failStopped(w pipe.Writer) error {
	if x.stdinW != nil {
		x.stdinW.Close() // no more output: the program is done with its input
	}
	if <-x.fed; x.bodyErr != nil {
		return x.failBody(w)
	}
	if done, err := x.stopped(w); done {
		return err
	}
	return x.fail(w, http.StatusBadGateway, "CGI program ended without a valid header")
}

// tempFile creates an unlinked temporary file.
func tempFile() (*os.File, error) {
	f, err := os.CreateTemp("", "sluice-cgi-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	return f, nil
}

// writerOnly hides everything but Write, so io.CopyBuffer uses the
// buffer it is given.
type writerOnly struct{ io.Writer }

// bodyless stands for the writer of a response whose status has no body
// (204, 304: RFC 9110 §15.3.5, §15.4.5). What the program still writes is
// read and dropped, with a warning, rather than failing the response.
type bodyless struct {
	pipe.Writer
	x      *run
	warned bool
}

func (b *bodyless) Write(p []byte) (int, error) {
	if len(p) > 0 && !b.warned {
		b.warned = true
		b.x.g.log.Warn("cgi: body after a status that has none, dropped", "script", b.x.scriptName, "status", b.x.c.Status(), b.x.id)
	}
	return len(p), nil
}

// HeadEnd finds the blank line ending a CGI response head (RFC 3875
// §6: lines end in LF or CRLF) in b, searching from offset from (a
// caller reading the head piece by piece passes where the last search
// stopped, less 2: the blank line may straddle two reads). It returns
// the head's length without the blank line and where the body starts,
// or -1, -1.
func HeadEnd(b []byte, from int) (end, body int) {
	for i := from; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		// b[i] ends a line; is the next line empty?
		switch {
		case i+1 < len(b) && b[i+1] == '\n':
			return i + 1, i + 2
		case i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n':
			return i + 1, i + 3
		}
	}
	if len(b) > 0 && b[0] == '\n' { // no header lines at all
		return 0, 1
	}
	if len(b) > 1 && b[0] == '\r' && b[1] == '\n' {
		return 0, 2
	}
	return -1, -1
}

// setHeader applies the program's header fields to the response.
func (x *run) setHeader(hdr []byte) error {
	return ApplyHead(x.c, hdr, &x.added)
}

// ApplyHead applies a CGI response head (RFC 3875 §6.3, without its
// blank line; see HeadEnd) to c's response: the fields and the status
// ParseHead finds. The names of the fields added are appended to *added
// unless added is nil, so that a caller failing later (or on an error,
// which may come after some fields were added) can remove them. The
// error is ParseHead's: the caller answers 502. head is not retained.
func ApplyHead(c *pipe.Conn, head []byte, added *[]string) error {
	h := c.Header()
	status, err := ParseHead(head, func(name, value string) {
		h.Add(name, value)
		if added != nil {
			*added = append(*added, name)
		}
	})
	if err != nil {
		return err
	}
	if status != 0 {
		c.SetStatus(status)
	}
	return nil
}

// ParseHead reads a CGI response head (RFC 3875 §6.3, without its blank
// line; see HeadEnd) as strictly as the engine reads a request: every
// line must be a field (a token, a colon, a value), and one of
// Content-Type, Location or Status must be there. It calls field for
// each field to pass on, in order, and returns the status: the Status
// field's (200 to 599; a 1xx, such as PHP's 103, is not a final status
// and is ignored), 302 for a Location without one, or 0. Status itself,
// hop-by-hop fields and Trailer are not passed on; two Content-Length
// fields that differ are an error, the same one twice is passed once;
// bytes a field value may not hold become spaces. The error says what is
// wrong, the application's bytes quoted and clipped: the caller answers
// 502. Fields already passed to field stand when an error follows. head
// is not retained; the strings given to field are the caller's.
func ParseHead(head []byte, field func(name, value string)) (status int, err error) {
	hdr := head
	location := false
	cgiField := false
	var length []byte
	for len(hdr) > 0 {
		line := hdr
		if i := bytes.IndexByte(hdr, '\n'); i >= 0 {
			line, hdr = hdr[:i], hdr[i+1:]
		} else {
			hdr = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !httpgrammar.IsToken(line[:colon]) {
			return 0, fmt.Errorf("malformed header line %q", clip(line))
		}
		nameB := line[:colon]
		valueB := bytes.Trim(line[colon+1:], " \t")
		switch {
		case httpgrammar.EqualFold(nameB, "Status"):
			code, err := strconv.Atoi(string(bytes.TrimSpace(bytes.SplitN(valueB, []byte(" "), 2)[0])))
			if err != nil || code < 100 || code > 599 {
				return 0, fmt.Errorf("invalid Status %q", clip(valueB))
			}
			if cgiField = true; code >= 200 {
				status = code
			}
			// A 1xx is not a final status, and a CGI response has one
			// head: it is ignored (103's Link fields pass on with the
			// response, as the final status's).
			continue
		case httpgrammar.EqualFold(nameB, "Location"):
			if len(valueB) == 0 {
				return 0, errors.New("empty Location")
			}
			location, cgiField = true, true
		case httpgrammar.EqualFold(nameB, "Content-Type"):
			cgiField = true
		case httpgrammar.EqualFold(nameB, "Content-Length"):
			// Two different lengths leave the body's end unknown (RFC
			// 9112 §6.3); the same one twice is sent once.
			if length != nil {
				if !bytes.Equal(length, valueB) {
					return 0, fmt.Errorf("conflicting Content-Length %q and %q", clip(length), clip(valueB))
				}
				continue
			}
			length = valueB
		}
		if isHopByHopBytes(nameB) {
			continue
		}
		field(fieldName(nameB), fieldValue(valueB))
	}
	if !cgiField {
		return 0, errors.New("no Content-Type, Location or Status field")
	}
	if status == 0 && location {
		status = http.StatusFound
	}
	return status, nil
}

// commonFields are the usual response field names, so that they cost no
// allocation.
var commonFields = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{"Content-Type", "Content-Length", "Location", "Set-Cookie", "Cache-Control",
		"Expires", "Pragma", "Last-Modified", "ETag", "X-Powered-By", "Vary", "Link", "X-Frame-Options",
		"X-Content-Type-Options", "Content-Security-Policy", "Referrer-Policy", "X-Accel-Redirect", "X-Sendfile",
		"Content-Disposition", "Content-Encoding", "X-Robots-Tag", "Access-Control-Allow-Origin"} {
		m[n] = n
	}
	return m
}()

// fieldName returns a field name as a string, without allocating for
// the usual ones spelt the usual way.
func fieldName(b []byte) string {
	if n, ok := commonFields[string(b)]; ok {
		return n
	}
	return string(b)
}

func isHopByHopBytes(name []byte) bool {
	return httpgrammar.IsHopByHop(string(name)) || httpgrammar.EqualFold(name, "Trailer")
}

// fieldValue returns a program's field value as a string, each byte a
// field value may not hold (RFC 9110 §5.5: control characters but HTAB,
// DEL) replaced by a space, as the engine does with CR, LF and NUL.
func fieldValue(v []byte) string {
	for i, c := range v {
		if !httpgrammar.IsFieldValueChar(c) {
			b := bytes.Clone(v) // v is the program's output
			for j := i; j < len(b); j++ {
				if !httpgrammar.IsFieldValueChar(b[j]) {
					b[j] = ' '
				}
			}
			return string(b)
		}
	}
	return string(v)
}

func clip(b []byte) string {
	if len(b) > 80 {
		b = b[:80]
	}
	return string(b)
}

// fail answers an error before anything was written: it undoes the
// program's header fields, waits for the body feeder (the request must not
// be read while the response is written) and writes the error. If the
// feeder left part of the body unread, the connection closes after it.
func (x *run) fail(w pipe.Writer, status int, msg string) error {
	if x.wrote {
		return errors.New("cgi: " + msg)
	}
	if x.stdinW != nil {
		x.stdinW.Close()
	}
	<-x.fed
	for _, name := range x.added {
		x.c.Header().Del(name)
	}
	x.added = nil
	if x.unread {
		x.c.Header().Set("Connection", "close")
	}
	x.g.log.Warn("cgi: "+msg, "script", x.scriptName, "status", status, x.id)
	return Answer(x.c, w, status, msg)
}

// failBody answers a request whose body could not be read: 413 for one
// over the server's limit; otherwise the client is gone or too slow, and
// the error goes back to the pipeline (the engine closes the connection).
func (x *run) failBody(w pipe.Writer) error {
	if BodyTooLarge(x.bodyErr) {
		return x.fail(w, http.StatusRequestEntityTooLarge, "request body too large")
	}
	for _, name := range x.added {
		x.c.Header().Del(name)
	}
	x.added = nil
	return x.bodyErr
}

// Answer writes a plain-text error response of status with msg (a
// fixed text: nothing from the request), as the gateways (cgi, fastcgi)
// answer what went wrong before any of the response was sent. It
// returns w's error.
func Answer(c *pipe.Conn, w pipe.Writer, status int, msg string) error {
	h := c.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.SetContentLength(-1)
	c.SetStatus(status)
	_, err := io.WriteString(w, c.ErrorText(status, msg))
	return err
}
