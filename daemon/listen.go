package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync/atomic"

	"github.com/sluice-server/sluice/certs"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/engine"
)

// Listen opens a listening socket for a with engine.Listen. A Unix socket
// file left behind by a process that is gone (nothing accepts on it) is
// removed first; one a live server listens on is left alone, and Listen
// fails with EADDRINUSE.
func Listen(a config.Address) (net.Listener, error) {
	if a.Network == "unix" {
		if fi, err := os.Lstat(a.Addr); err == nil && fi.Mode()&os.ModeSocket != 0 {
			if c, err := net.Dial("unix", a.Addr); err == nil {
				c.Close()
			} else {
				os.Remove(a.Addr)
			}
		}
	}
	return engine.Listen(a.Network, a.Addr)
}

// A ListenError is an address that could not be listened on.
type ListenError struct {
	Addr config.Address
	Err  error
}

func (e *ListenError) Error() string { return e.Addr.String() + ": " + e.Err.Error() }
func (e *ListenError) Unwrap() error { return e.Err }

// listener is one listening socket being served.
type listener struct {
	addr    config.Address
	ln      net.Listener
	closing atomic.Bool // closed by a reload, not failed

	tls   *tls.Config    // set if it serves TLS, for as long as it is open
	certs certs.Endpoint // a TLS listener's certificates of the moment
	h2    bool           // serves HTTP/2: offered by ALPN over TLS, h2c without
	h3    *h3Listener    // a TLS listener's HTTP/3 side, or nil
	state atomic.Pointer[listenState]
}

// open opens the listeners for addrs, served as cfg says, and records
// them. If one fails it closes the others and returns a *ListenError.
func (s *Server) open(addrs []config.Address, cfg *config.Config) ([]*listener, error) {
	listen := s.Listen
	if listen == nil {
		listen = Listen
	}
	var opened []*listener
	for _, a := range addrs {
		ln, err := listen(a)
		if err != nil {
			s.closeListeners(opened)
			return nil, &ListenError{Addr: a, Err: err}
		}
		l := &listener{addr: a, ln: ln, h2: servesHTTP2(cfg, a)}
		if isTLS(cfg, a) {
			l.tls = newTLSConfig(l)
		}
		if servesHTTP3(cfg, a) {
			if l.h3, err = s.openHTTP3(l, cfg, s.HTTP3ReusePort); err != nil {
				ln.Close()
				s.closeListeners(opened)
				return nil, &ListenError{Addr: a, Err: fmt.Errorf("HTTP/3 (UDP): %w", err)}
			}
		}
		s.lnMu.Lock()
		s.lns = append(s.lns, l)
		s.lnMu.Unlock()
		opened = append(opened, l)
	}
	for _, l := range opened { // once all are open, for redirect_to_https: true to find its port
		s.setState(l, cfg.ListenOptions[l.addr], cfg)
	}
	return opened, nil
}

// logListenError logs why open failed.
func (s *Server) logListenError(err error) {
	if le, ok := err.(*ListenError); ok {
		s.logger().Error("cannot listen", "addr", le.Addr.String(), "error", le.Err, FixAttr(ListenFix(le.Addr, le.Err)))
		return
	}
	s.logger().Error("cannot listen", "error", err)
}

// serve starts serving the listeners.
func (s *Server) serve(lns []*listener) {
	for _, l := range lns {
		go func() {
			err := s.srv.ServeWith(l.ln, engine.ListenerOptions{
				TLS:     l.tls,
				Handler: listenerHandler{l, s.srv.Handler},
				H2C:     l.tls == nil && l.h2,
			})
			if errors.Is(err, engine.ErrServerClosed) || l.closing.Load() {
				return
			}
			select {
			case s.failed <- fmt.Errorf("%s: %w", l.ln.Addr(), err):
			default:
			}
		}()
		addr := l.ln.Addr().String()
		if l.ln.Addr().Network() == "unix" {
			addr = "unix:" + addr
		}
		attrs := []any{"addr", addr}
		if l.tls != nil {
			attrs = append(attrs, "tls", true)
		}
		if l.h2 {
			attrs = append(attrs, "http2", true)
		}
		if l.h3 != nil {
			l.h3.serveHTTP3(listenerHandler{l, s.srv.Handler}, s.grace())
			attrs = append(attrs, "http3", l.h3.conn.LocalAddr().String())
		}
		s.logger().Info("listening", append(attrs, s.Attrs...)...)
	}
}

// closeListeners closes lns and forgets them; their connections stay
// open. HTTP/3 connections, which live on the listener's UDP socket, are
// sent GOAWAY and get the grace period to finish their requests before
// the socket closes.
func (s *Server) closeListeners(lns []*listener) {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	for _, l := range lns {
		l.closing.Store(true)
		l.ln.Close()
		if l.h3 != nil {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), s.grace())
				defer cancel()
				l.h3.shutdown(ctx)
			}()
		}
	}
	s.lns = slices.DeleteFunc(s.lns, func(l *listener) bool { return slices.Contains(lns, l) })
}

// listening returns the listener open for a, or nil.
func (s *Server) listening(a config.Address) *listener {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	for _, l := range s.lns {
		if l.addr == a {
			return l
		}
	}
	return nil
}

// serves reports whether l serves a as cfg says: the same address, with
// TLS or without and HTTP/2 and HTTP/3 or not as cfg has it. A listener
// whose address turns to TLS or back, or HTTP/2 or HTTP/3 on or off, is
// replaced by a reload.
func (l *listener) serves(a config.Address, cfg *config.Config) bool {
	return l.addr == a && (l.tls != nil) == isTLS(cfg, a) && l.h2 == servesHTTP2(cfg, a) && (l.h3 != nil) == servesHTTP3(cfg, a)
}

// servesHTTP3 reports whether cfg serves HTTP/3 beside a: a TLS
// listener with http3.
func servesHTTP3(cfg *config.Config, a config.Address) bool {
	o := cfg.ListenOptions[a]
	return o != nil && o.TLS != nil && o.HTTP3 != nil && a.Network == "tcp"
}
