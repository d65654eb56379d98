package engine

import (
	"errors"
	"net"
)

// Tunneler is implemented by the engine's ResponseWriter: a handler that
// answers a request to switch protocols (an Upgrade request, RFC 9110
// §7.8: a WebSocket handshake) takes the connection over with it.
type Tunneler interface {
	// Tunnel sends the response head — status 101 Switching Protocols,
	// the header fields set so far and "Connection: Upgrade" — and hands
	// the connection over: conn is the client's connection and buffered
	// the bytes the client sent after the request head, already read
	// (the handler owns the slice). From then on the engine neither
	// reads nor writes conn, nor times it out; it closes it when the
	// handler returns. A server shutdown whose grace period runs out
	// still interrupts it (its deadline is set in the past).
	//
	// Tunnel fails with ErrNoTunnel, sending nothing, when the request
	// carries no Upgrade field, has a body, is HTTP/1.0, or the response
	// was committed already.
	Tunnel() (conn net.Conn, buffered []byte, err error)
}

// ErrNoTunnel is Tunnel's error for a request that cannot switch
// protocols, or a response already under way.
var ErrNoTunnel = errors.New("engine: cannot switch protocols on this request")

var _ Tunneler = (*response)(nil)

// Tunnel implements Tunneler.
func (w *response) Tunnel() (net.Conn, []byte, error) {
	c, req := w.c, w.req
	if w.committed || w.err != nil || !req.upgrade || req.ContentLength != 0 || req.ProtoMinor == 0 || c.inline {
		return nil, nil, ErrNoTunnel
	}
	w.committed, w.status, w.noBody = true, 101, true
	s := c.s
	b := appendStatusLine(s.out, 101)
	if !w.hdr.hasServer {
		b = append(b, c.srv.set.Load().serverLine...)
	}
	if !w.hdr.hasDate {
		b = appendDate(b, c.srv.tm.Now())
	}
	b = w.hdr.appendFields(b)
	s.out = append(b, "Connection: Upgrade\r\n\r\n"...)
	if err := c.flush(); err != nil {
		w.err = err
		return nil, nil, err
	}
	buffered := make([]byte, c.w-c.r)
	copy(buffered, c.rbuf[c.r:c.w])
	c.r = c.w
	c.closeAfter, c.broken = true, true
	c.th.Clear()
	c.leaveParkSet() // the tunnel reads it from now on
	return c.nc, buffered, nil
}
