package fastcgi

import (
	"bytes"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/pipe"
)

// Bounds of the logging of FCGI_STDERR: lines (and bytes) logged per
// request, and lines per second across the Client; longer lines are
// truncated. What is over them is counted and said once per request.
const (
	stderrLinesPerRequest = 20
	stderrBytesPerRequest = 8 << 10
	stderrLinesPerSecond  = 100
	stderrMaxLine         = 1 << 10
)

// stderrCount is one request's stderr logging so far.
type stderrCount struct {
	lines, bytes, dropped int
}

// stderrRate counts the lines logged in the current second.
type stderrRate struct {
	second atomic.Int64
	lines  atomic.Int64
}

// allow reports whether one more line may be logged this second.
func (r *stderrRate) allow() bool {
	now := time.Now().Unix()
	if s := r.second.Load(); s != now && r.second.CompareAndSwap(s, now) {
		r.lines.Store(0)
	}
	return r.lines.Add(1) <= stderrLinesPerSecond
}

// logStderr logs the lines of a STDERR record's content (a line may not
// span records: PHP-FPM writes a message per record), escaped, within
// the bounds.
func (cl *Client) logStderr(n *stderrCount, c *pipe.Conn, data []byte) {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimRight(line, "\r")
		if len(line) == 0 {
			continue
		}
		if n.lines >= stderrLinesPerRequest || n.bytes >= stderrBytesPerRequest || !cl.rate.allow() {
			n.dropped++
			continue
		}
		n.lines++
		n.bytes += len(line)
		truncated := len(line) > stderrMaxLine
		if truncated {
			line = line[:stderrMaxLine]
		}
		cl.log.Warn("fastcgi: stderr", "path", escape(c.Request.Path), "line", escape(line), "truncated", truncated)
	}
}

// stderrDropped logs how many stderr lines of the request were not.
func (cl *Client) stderrDropped(n *stderrCount, c *pipe.Conn) {
	if n.dropped > 0 {
		cl.log.Warn("fastcgi: stderr lines not logged", "path", escape(c.Request.Path), "count", n.dropped)
	}
}

// escape returns b with every byte outside printable ASCII (and the
// backslash) written \xHH, so that neither a request nor an application
// can forge or break a log line.
func escape(b []byte) string {
	clean := true
	for _, ch := range b {
		if ch < ' ' || ch >= 0x7f || ch == '\\' {
			clean = false
			break
		}
	}
	if clean {
		return string(b)
	}
	out := make([]byte, 0, len(b)+16)
	for _, ch := range b {
		if ch < ' ' || ch >= 0x7f || ch == '\\' {
			out = append(out, '\\', 'x')
			if ch < 0x10 {
				out = append(out, '0')
			}
			out = strconv.AppendUint(out, uint64(ch), 16)
			continue
		}
		out = append(out, ch)
	}
	return string(out)
}
