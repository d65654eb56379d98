package upstream

// The per-request values (pipe.Conn.SetValue) by which a transport tells
// an access log which upstream answered a request and how long it took.
const (
	// AddrKey's value is the address of the Host whose response was
	// used, as nginx's $upstream_addr gives it: its Addr for TCP
	// ("127.0.0.1:9000"), its Name for a Unix socket
	// ("unix:/run/app.sock"); the transport sets it (Host.LogAddr) when a
	// response head arrives. Setting it allocates nothing: the string is
	// the Host's.
	AddrKey = "upstream.addr"

	// TimeKey's value is the milliseconds, to the microsecond ("1.234"),
	// from sending the request to the Host that answered to receiving its
	// response head. Formatting it allocates, so a transport sets it only
	// when an earlier component has asked for it by setting TimeKey to
	// TimeAsked (the log component does when its format names the time).
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
