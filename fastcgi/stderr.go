package fastcgi

import (
	"bytes"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/pipe"
)

// Bounds of the logging of FCGI_STDERR: lines and bytes logged per
// request, and per second across the Client; longer lines are
// truncated. What is over them is counted, and the count logged at most
// once a second across the Client (with the path of the request that
// logs it).
const (
	stderrLinesPerRequest = 20
	stderrBytesPerRequest = 8 << 10
	stderrLinesPerSecond  = 100
	stderrBytesPerSecond  = 64 << 10
	stderrMaxLine         = 1 << 10
)

// stderrCount is one request's stderr logging so far.
type stderrCount struct {
	lines, bytes, dropped int
	c                     *pipe.Conn // the request's, for its ID; nil in tests
}

// idAttr is the request's ID for a log line (pipe.Conn.RequestIDAttr).
func (n *stderrCount) idAttr() slog.Attr {
	if n.c == nil {
		return slog.Attr{}
	}
	return n.c.RequestIDAttr()
}

// stderrRate counts the lines and bytes logged in the current second,
// and the lines left out since the last notice of them.
type stderrRate struct {
	second  atomic.Int64
	lines   atomic.Int64
	bytes   atomic.Int64
	dropped atomic.Int64
	notice  atomic.Int64 // the second of the last notice
}

// allow reports whether one more line of n bytes may be logged this
// second.
func (r *stderrRate) allow(n int) bool {
	now := time.Now().Unix()
	if s := r.second.Load(); s != now && r.second.CompareAndSwap(s, now) {
		r.lines.Store(0)
		r.bytes.Store(0)
	}
	return r.lines.Add(1) <= stderrLinesPerSecond && r.bytes.Add(int64(n)) <= stderrBytesPerSecond
}

// logStderr logs the lines of a STDERR record's content (a line may not
// span records: PHP-FPM writes a message per record), escaped, within
// the bounds.
func (cl *Client) logStderr(n *stderrCount, path, data []byte) {
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
		truncated := len(line) > stderrMaxLine
		if truncated {
			line = line[:stderrMaxLine]
		}
		if n.lines >= stderrLinesPerRequest || n.bytes+len(line) > stderrBytesPerRequest || !cl.rate.allow(len(line)) {
			n.dropped++
			continue
		}
		n.lines++
		n.bytes += len(line)
		cl.log.Warn("fastcgi: stderr", "path", escape(path), "line", escape(line), "truncated", truncated, n.idAttr())
	}
}

// stderrDropped counts the stderr lines of the request that were not
// logged, and logs the count of those left out since the last such
// notice, at most once a second.
func (cl *Client) stderrDropped(n *stderrCount, path []byte) {
	if n.dropped == 0 {
		return
	}
	cl.rate.dropped.Add(int64(n.dropped))
	now := time.Now().Unix()
	if s := cl.rate.notice.Load(); s == now || !cl.rate.notice.CompareAndSwap(s, now) {
		return
	}
	if count := cl.rate.dropped.Swap(0); count > 0 {
		cl.log.Warn("fastcgi: stderr lines not logged", "path", escape(path), "count", count, n.idAttr())
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
