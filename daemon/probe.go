package daemon

import (
	"net"

	"github.com/sluice-server/sluice/engine"
)

// ServeProbes serves health probes on the connections ln accepts, beside
// the config's listeners, until Shutdown or Drain closes it: a
// supervisor's probes reach a worker's engine this way. The engine reads
// and answers a probe's request as any other, so a probe answered shows
// the engine serving; but the answer, 204 No Content, comes from the
// server itself, not from the config's routes, so that no access log
// (the config's access_log or a log component) nor count records it. It
// returns ErrNotRunning if the server does not run.
func (s *Server) ServeProbes(ln net.Listener) error {
	if err := s.lockRunning(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	go s.srv.Serve(probeListener{ln})
	return nil
}

// handler is the engine's handler: the config's routes (the Switch), and
// the probes ServeProbes admits.
type handler struct{ sw *Switch }

func (h handler) Serve(w engine.ResponseWriter, r *engine.Request) {
	if _, ok := r.LocalAddr.(probeAddr); ok {
		w.WriteHeader(204)
		return
	}
	h.sw.Serve(w, r)
}

// probeListener marks the connections it accepts as probes: their local
// address is a probeAddr, which no socket has.
type probeListener struct{ net.Listener }

func (l probeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return probeConn{c}, nil
}

type probeConn struct{ net.Conn }

func (probeConn) LocalAddr() net.Addr { return probeAddr{} }

type probeAddr struct{}

func (probeAddr) Network() string { return "probe" }
func (probeAddr) String() string  { return "health-probe" }
