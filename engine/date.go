package engine

import (
	"net/http"
	"sync/atomic"
	"time"
)

// dateLine is a formatted "Date: ...\r\n" header line for one second.
type dateLine struct {
	unix int64
	line []byte
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
	sec := now / int64(time.Second)
	d := cachedDate.Load()
	// Servers' coarse clocks may lag one another by up to a tick: one a
	// second behind uses the newer line rather than formatting anew. A
	// clock stepped back further is followed.
	if d == nil || sec > d.unix || sec < d.unix-1 {
		line := make([]byte, 0, 40)
		line = append(line, "Date: "...)
		line = time.Unix(sec, 0).UTC().AppendFormat(line, http.TimeFormat)
		line = append(line, "\r\n"...)
		d = &dateLine{unix: sec, line: line}
		cachedDate.Store(d)
	}
	return append(b, d.line...)
}
