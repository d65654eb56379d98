package proxy

import (
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
)

// tunnel passes a 101 (Switching Protocols) response in x on to the
// client and relays bytes both ways, unchanged, until either side closes
// its connection or the tunnel is idle for tunnelIdle; then both are
// closed.
func (p *Proxy) tunnel(c *pipe.Conn, w pipe.Writer, x *exchange, uc *upConn) error {
	h := &x.head
	var optBuf [maxConnectionOptions][]byte
	conn := responseOptions(optBuf[:0], h.fields)
	hdr := c.Header()
	for _, f := range h.fields {
		if !isHopByHop(f.name, conn) || httpgrammar.EqualFold(f.name, "upgrade") {
			hdr.Add(string(f.name), string(f.value))
		}
	}
	hdr.Add("Via", viaValue)
	client, early, err := c.Tunnel()
	if err != nil {
		uc.discard()
		return writeError(c, w, http.StatusBadGateway, "could not switch protocols")
	}
	// What the upstream sent after its 101, and the client after its
	// request, go first.
	fromUp := uc.buf[uc.r:uc.w]
	t := &relay{idle: p.tunnelIdle, readOn: p.tunnelReadOn}
	t.last.Store(time.Now().UnixNano())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := client.Write(fromUp); err == nil {
			t.copy(client, uc.nc, uc.buf) // fromUp is sent: its buffer is free
		}
		client.Close()
		uc.nc.Close()
	}()
	if _, err := uc.nc.Write(early); err == nil {
		t.copy(uc.nc, client, x.scratch)
	}
	client.Close()
	uc.nc.Close()
	<-done
	uc.discard()
	return nil
}

// relay is a tunnel's two copies, which share its idle bound.
type relay struct {
	idle time.Duration // 0: no bound
	last atomic.Int64  // when a byte last crossed, either way: unix nanoseconds

	readOn func(src net.Conn) // Proxy.tunnelReadOn
}

// copy copies from src to dst through buf until src ends or fails, dst
// fails, or nothing crossed the tunnel either way for t.idle: the
// read deadline of src is the idle bound from the last byte that
// crossed, moved on when it expires if the other way was busy.
func (t *relay) copy(dst, src net.Conn, buf []byte) {
	if t.idle > 0 {
		src.SetReadDeadline(time.Now().Add(t.idle))
	}
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if t.idle > 0 {
				t.last.Store(time.Now().UnixNano())
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if t.idle > 0 && isTimeout(err) {
				if until := time.Unix(0, t.last.Load()).Add(t.idle); time.Until(until) > 0 {
					src.SetReadDeadline(until)
					if t.readOn != nil {
						t.readOn(src)
					}
					continue
				}
			}
			return
		}
	}
}
