package upstream

import (
	"strconv"
	"time"
)

// The per-request values (pipe.Conn.SetValue) by which a transport tells
// an access log which upstream answered a request and how long it took.
const (
	// AddrKey's value is the address of the Host whose response was
	// used, as nginx's $upstream_addr gives it: its Addr for TCP
	// ("127.0.0.1:9000"), its Name for a Unix socket
	// ("unix:/run/app.sock"); the transport sets it (LogAnswer) when
	// the response has ended. Setting it allocates nothing: the string is
	// the Host's.
	AddrKey = "upstream.addr"

	// TimeKey's value is the milliseconds, to the microsecond ("1.234"),
	// from the start of the attempt on the Host that answered to the end
	// of its response, as nginx's $upstream_response_time. Formatting it
	// allocates, so a transport sets it only when an earlier component
	// has asked for it by setting TimeKey to TimeAsked (the log component
	// does when its format names the time).
	TimeKey = "upstream.time"

	// TimeAsked is the value of TimeKey that asks for the time.
	TimeAsked = "?"
)

// LogAddr returns the value of AddrKey for h.
func (h *Host[C]) LogAddr() string {
	if h.Network == "unix" {
		return h.Name
	}
	return h.Addr
}

// Values are a request's per-request values: a *pipe.Conn.
type Values interface {
	Value(key string) string
	SetValue(key, value string)
}

// LogAnswer records on v, for an access log, that h answered the request
// in the attempt that started at start: its address under AddrKey, and,
// when asked for, the time since under TimeKey. A transport calls it when
// the response has ended.
func LogAnswer[C Conn](v Values, h *Host[C], start Instant) {
	v.SetValue(AddrKey, h.LogAddr())
	if v.Value(TimeKey) != "" {
		us := Now().Sub(start) / time.Microsecond
		v.SetValue(TimeKey, strconv.FormatFloat(float64(us)/1000, 'f', 3, 64))
	}
}
