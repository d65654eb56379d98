package upstream

import (
	"net"
	"time"
)

// A GoneWatch ends a transport's wait on an upstream connection when the
// client it waits for goes away: it puts the connection's read deadline
// in the past, so that the blocked read returns with a timeout, rather
// than hold the connection (a place under max_conns, and the upstream's
// worker) for nobody until the response comes. It costs a goroutine,
// which is why transports start one only once a wait has lasted.
//
// A nil *GoneWatch is a watch that never fires. Stop is for the
// goroutine that started the watch.
type GoneWatch struct {
	quit, exited chan struct{}
	fired        bool
}

// WatchGone starts a GoneWatch over nc for a request's gone channel (see
// pipe.Conn.Gone); nil when the server cannot tell (gone is nil).
func WatchGone(gone <-chan struct{}, nc net.Conn) *GoneWatch {
	if gone == nil {
		return nil
	}
	w := &GoneWatch{quit: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(w.exited)
		select {
		case <-gone:
			w.fired = true
			nc.SetReadDeadline(time.Unix(1, 0))
		case <-w.quit:
		}
	}()
	return w
}

// Stop ends the watch (a second call only reports again) and reports
// whether the client went: the connection then has a read deadline in
// the past and must not be reused.
func (w *GoneWatch) Stop() bool {
	if w == nil {
		return false
	}
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	<-w.exited
	return w.fired
}
