package engine

import "time"

// Limits bounds what one client may make the server hold or wait for.
// A zero field takes the default documented beside it, so the zero value of
// Limits is a sound configuration for a public server.
type Limits struct {
	// MaxTargetBytes bounds the request-target (the URI in the request
	// line). Longer targets get 414 URI Too Long. Default 8 KiB.
	MaxTargetBytes int

	// MaxHeaderBytes bounds the request line plus the header section.
	// Larger header blocks get 431 Request Header Fields Too Large.
	// Default 16 KiB.
	MaxHeaderBytes int

	// MaxHeaderCount bounds the number of header field lines; more get 431.
	// Default 100.
	MaxHeaderCount int

	// MaxBodyBytes bounds a request body. A Content-Length above it gets
	// 413 Content Too Large before the body is read; a chunked body that
	// grows past it makes Body.Read fail with *http.MaxBytesError and, if
	// the handler has not answered yet, a 413. Default 16 MiB; -1 means no
	// limit.
	MaxBodyBytes int64

	// MaxDrainBytes is how much of a body the handler left unread the
	// server reads and discards to keep the connection alive; a larger
	// remainder closes the connection instead. Default 256 KiB.
	MaxDrainBytes int64

	// HeaderTimeout is how long a client has, from the first byte of a
	// request, to deliver the whole request line and header section.
	// A client that dribbles bytes is cut off when it expires. Default 10s.
	HeaderTimeout time.Duration

	// IdleTimeout is how long a keep-alive connection may wait for its next
	// request while fewer than half of MaxConns are open. Above half it
	// tightens to BusyIdleTimeout; at MaxConns idle connections are closed
	// to admit new ones. Default 60s.
	IdleTimeout time.Duration

	// BusyIdleTimeout is the idle timeout once more than half of MaxConns
	// connections are open. Default 3s (the C++ seed's moderate-need rule).
	BusyIdleTimeout time.Duration

	// BodyTimeout is the grace period a request body has before
	// MinBodyRate applies. Only time spent waiting for the client's body
	// bytes counts, not time the handler takes between reads. Default 10s.
	BodyTimeout time.Duration

	// MinBodyRate is the slowest body upload, in bytes per second, the
	// server tolerates after BodyTimeout. It is judged over a sliding
	// window of 5 seconds (or BodyTimeout, if shorter), not on average:
	// once the grace period is over, every MinBodyRate × window bytes must
	// arrive within one window of the previous ones (the first window
	// begins as the grace period ends), so bytes sent fast buy at most one
	// window of silence later. As for BodyTimeout, only time spent waiting
	// for body bytes counts. A body that falls behind makes Body.Read fail
	// with os.ErrDeadlineExceeded, and the connection is closed after a
	// 408 Request Timeout if no response was started. Default 1024; -1
	// disables the rate, leaving BodyTimeout as a limit on the total time
	// spent waiting for the body.
	//
	// On HTTP/2, BodyTimeout and MinBodyRate also hold a response to the
	// flow-control windows its client grants: only time spent waiting for
	// a window counts, and a stream that falls behind is reset (CANCEL)
	// and the handler's write fails. With the rate off, this rule is off.
	MinBodyRate int64

	// WriteTimeout is how long a client may go without taking any of the
	// response bytes the server has to send: one that stops reading is
	// disconnected after it. It bounds progress, not a whole response: a
	// large file sent to a client that keeps reading takes as long as it
	// takes. There is no minimum response rate on HTTP/1.x; on HTTP/2
	// see MinBodyRate. Default 30s.
	WriteTimeout time.Duration

	// MaxConns bounds open connections. At the limit, idle keep-alive
	// connections are closed to admit new ones; if none is idle, accepting
	// pauses until one closes. Default 10,000, or three quarters of the
	// process's RLIMIT_NOFILE when that is lower.
	MaxConns int

	// MaxStreams bounds the streams (requests) an HTTP/2 client may have
	// open at once on one connection: SETTINGS_MAX_CONCURRENT_STREAMS
	// (RFC 9113 §6.5.2). A connection keeps the value in force as it
	// started. Default 100.
	MaxStreams int
}

// Defaults for the zero fields of Limits.
const (
	DefaultMaxTargetBytes  = 8 << 10
	DefaultMaxHeaderBytes  = 16 << 10
	DefaultMaxHeaderCount  = 100
	DefaultMaxBodyBytes    = 16 << 20
	DefaultMaxDrainBytes   = 256 << 10
	DefaultHeaderTimeout   = 10 * time.Second
	DefaultIdleTimeout     = 60 * time.Second
	DefaultBusyIdleTimeout = 3 * time.Second
	DefaultBodyTimeout     = 10 * time.Second
	DefaultMinBodyRate     = 1024
	DefaultWriteTimeout    = 30 * time.Second
	DefaultMaxConns        = 10000
	DefaultMaxStreams      = 100
)

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	setInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	setDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	setInt(&l.MaxTargetBytes, DefaultMaxTargetBytes)
	setInt(&l.MaxHeaderBytes, DefaultMaxHeaderBytes)
	setInt(&l.MaxHeaderCount, DefaultMaxHeaderCount)
	setInt(&l.MaxConns, defaultMaxConns())
	setInt(&l.MaxStreams, DefaultMaxStreams)
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.MaxDrainBytes <= 0 {
		l.MaxDrainBytes = DefaultMaxDrainBytes
	}
	if l.MinBodyRate == 0 {
		l.MinBodyRate = DefaultMinBodyRate
	}
	setDur(&l.HeaderTimeout, DefaultHeaderTimeout)
	setDur(&l.IdleTimeout, DefaultIdleTimeout)
	setDur(&l.BusyIdleTimeout, DefaultBusyIdleTimeout)
	setDur(&l.BodyTimeout, DefaultBodyTimeout)
	setDur(&l.WriteTimeout, DefaultWriteTimeout)
	if l.BusyIdleTimeout > l.IdleTimeout {
		l.BusyIdleTimeout = l.IdleTimeout
	}
	if l.MaxTargetBytes > l.MaxHeaderBytes {
		l.MaxTargetBytes = l.MaxHeaderBytes
	}
	return l
}
