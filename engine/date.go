package engine

import (
	"net/http"
	"sync/atomic"
	"time"
)

// dateLine is the Date header field for one second, in both the forms
// the engine sends it: the "Date: ...\r\n" line of an HTTP/1.x head, and
// the bare value an HTTP/2 header block encodes.
type dateLine struct {
	unix  int64
	line  []byte
	value string // line without "Date: " and CRLF
}

var cachedDate atomic.Pointer[dateLine]

// appendDate appends the Date header line (RFC 9110 §6.6.1). The line is
// formatted at most once a second, by whichever goroutine first needs it
// in that second, as Warp's Date module does; appendDate is safe for
// concurrent use and does not allocate except to format a new second.
// now is in Unix nanoseconds: the timeout manager's coarse clock, which
// saves reading the system clock for every response (it lags by at most a
// tick, a quarter of a second at most).
func appendDate(b []byte, now int64) []byte {
	return append(b, loadDate(now).line...)
}

// dateValue returns the Date field's value for now (Unix nanoseconds,
// as for appendDate), without the name and the CRLF: what an HTTP/2
// response's header block carries. It comes from appendDate's cache, so
// it is safe for concurrent use and allocates only to format a new
// second; the string is shared and immutable.
func dateValue(now int64) string {
	return loadDate(now).value
}

// loadDate returns the cached Date for now, formatting it anew when the
// cache holds another second.
func loadDate(now int64) *dateLine {
	sec := now / int64(time.Second)
	d := cachedDate.Load()
	// Servers' coarse clocks may lag one another by up to a tick: one a
	// second behind uses the newer line rather than formatting anew. A
	// clock stepped back further is followed.
	if d == nil || sec > d.unix || sec < d.unix-1 {
		d = storeDate(sec)
	}
	return d
}

// storeDate formats the Date for the Unix second sec and caches it.
func storeDate(sec int64) *dateLine {
	line := make([]byte, 0, 40)
	line = append(line, "Date: "...)
	line = time.Unix(sec, 0).UTC().AppendFormat(line, http.TimeFormat)
	line = append(line, "\r\n"...)
	d := &dateLine{unix: sec, line: line, value: string(line[len("Date: ") : len(line)-len("\r\n")])}
	cachedDate.Store(d)
	return d
}
