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
func appendDate(b []byte, now time.Time) []byte {
	sec := now.Unix()
	d := cachedDate.Load()
	if d == nil || d.unix != sec {
		line := make([]byte, 0, 40)
		line = append(line, "Date: "...)
		line = now.UTC().AppendFormat(line, http.TimeFormat)
		line = append(line, "\r\n"...)
		d = &dateLine{unix: sec, line: line}
		cachedDate.Store(d)
	}
	return append(b, d.line...)
}
