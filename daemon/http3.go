package daemon

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sock"
)

// HTTP/3. A TLS listener with http3 serves HTTP/3 (RFC 9114) over QUIC
// on the UDP port of its TCP address: quic-go's transport and its http3
// server, whose requests reach the config's routes through the engine's
// bridge (engine.Server.Bridge) and the listener's handler, as HTTP/1.1
// and HTTP/2 requests do. The UDP socket lives as long as the listener:
// a reload keeps it (and the QUIC connections on it), and sends GOAWAY
// to every HTTP/3 connection, as to every HTTP/2 one, by giving the
// socket to a new http3 server and shutting the old one down gracefully;
// a connection's limits are those of the config of its start. Shutdown
// sends GOAWAY and waits for requests in flight as for the other
// protocols. See docs/http3.md.

// Fixed QUIC parameters, which no limit of the config maps to: the
// flow-control windows. A stream's receive window starts at 256 KiB, as
// an HTTP/2 stream's, and may grow to 2 MiB; a connection's starts at
// 1 MiB and may grow to 8 MiB (quic-go's defaults, 6 and 15 MiB, let a
// client make a connection hold more).
const (
	h3StreamWindow    = 256 << 10
	h3MaxStreamWindow = 2 << 20
	h3ConnWindow      = 1 << 20
	h3MaxConnWindow   = 8 << 20
)

// h3RetryAbove is how many QUIC handshakes may be in progress at once
// before a new connection attempt is asked to prove its address with a
// Retry (RFC 9000 §8.1.2): a flood of Initial packets from spoofed
// addresses leaves handshakes that never complete, and Retry stops them
// costing the server more than a stateless reply. (A variable for the
// tests.)
var h3RetryAbove int64 = 128

// h3Listener is the HTTP/3 side of a TLS listener: its UDP socket, the
// QUIC transport and listener on it, and the http3 server of the moment.
type h3Listener struct {
	l    *listener
	srv  *Server
	conn *net.UDPConn
	tr   *quic.Transport
	ln   *quic.EarlyListener

	conf atomic.Pointer[quic.Config] // the QUIC parameters of the config of the moment

	mu     sync.Mutex
	http3  *http3.Server // serving ln, replaced by each reload
	closed bool
	conns  map[*h3Conn]struct{} // the connections handed to an http3 server

	handshakes atomic.Int64  // handshakes in progress
	open       atomic.Int64  // connections open
	accepted   atomic.Uint64 // connections accepted since the listener opened
	retries    atomic.Uint64 // connection attempts asked to Retry
	gso        atomic.Bool   // a connection sends with UDP GSO (quic-go's choice, where the kernel has it)
}

// h3ConnKey is the context key of a connection's *h3Conn.
type h3ConnKey struct{}

// h3Conn is an HTTP/3 connection, from its first packet (connContext):
// whether its handshake is in progress, its requests in flight (one with
// none is closed at once at shutdown: its client may never close it),
// and its quic-go connection once the http3 server has it. It is the one
// thing the listener keeps per connection, with one context.AfterFunc
// that ends its counts.
type h3Conn struct {
	ctx         context.Context // the connection's, done when it ends
	c           *quic.Conn      // set under h3Listener.mu once served
	inflight    atomic.Int64
	handshaking atomic.Bool
}

// handshakeOver ends hc's count among the handshakes in progress, once.
func (h *h3Listener) handshakeOver(hc *h3Conn) {
	if hc.handshaking.CompareAndSwap(true, false) {
		h.handshakes.Add(-1)
	}
}

// openHTTP3 opens the UDP socket of TLS listener l, on the port its TCP
// socket is bound to (so that ":0" gets one port for both), and starts
// QUIC on it, accepting connections once serveHTTP3 is called. With
// reusePort (a worker among several) the socket is bound with
// SO_REUSEPORT, so that every worker binds its own; s.HTTP3Socket may
// give it instead.
func (s *Server) openHTTP3(l *listener, cfg *config.Config, reusePort bool) (*h3Listener, error) {
	host, _, err := net.SplitHostPort(l.addr.Addr)
	if err != nil {
		return nil, err
	}
	ta, ok := l.ln.Addr().(*net.TCPAddr)
	if !ok {
		return nil, errors.New("http3: the listener is not a TCP one")
	}
	var pc net.PacketConn
	if s.HTTP3Socket != nil {
		c, err := s.HTTP3Socket(l.addr)
		if err != nil {
			return nil, err
		}
		if c != nil {
			pc = c
		}
	}
	if pc == nil {
		addr := net.JoinHostPort(host, strconv.Itoa(ta.Port))
		if reusePort {
			pc, err = sock.ListenPacketShared("udp", addr)
		} else {
			pc, err = net.ListenPacket("udp", addr)
		}
		if err != nil {
			return nil, err
		}
	}
	h := &h3Listener{l: l, srv: s, conn: pc.(*net.UDPConn), conns: map[*h3Conn]struct{}{}}
	h.setConfig(cfg)
	keys, err := s.quicKeys.get(s.quicSecret)
	if err != nil {
		pc.Close()
		return nil, err
	}
	h.tr = &quic.Transport{
		Conn:                  pc,
		ConnectionIDLength:    8,
		ConnectionIDGenerator: s.QUICConnectionIDs, // if set, it makes the IDs, and their length
		StatelessResetKey:     &keys.reset,
		TokenGeneratorKey:     &keys.token,
		VerifySourceAddress:   h.verifySourceAddress,
		ConnContext:           h.connContext,
	}
	// The listener's certificates of the moment; QUIC is TLS 1.3 alone,
	// whatever the config's minimum for TCP.
	tlsConf := l.certs.TLSConfig(http3.NextProtoH3)
	h.ln, err = h.tr.ListenEarly(http3.ConfigureTLSConfig(tlsConf), &quic.Config{
		GetConfigForClient: h.configForClient,
		Allow0RTT:          true, // decided per connection by configForClient
	})
	if err != nil {
		h.tr.Close()
		pc.Close()
		return nil, err
	}
	return h, nil
}

// setConfig makes the QUIC parameters of cfg those of the connections
// that follow: the limits that map (streams, header size, idle timeout),
// the windows, and whether 0-RTT is accepted.
func (h *h3Listener) setConfig(cfg *config.Config) {
	lim := cfg.Limits
	streams := lim.MaxStreams
	if streams <= 0 {
		streams = engine.DefaultMaxStreams
	}
	idle := lim.IdleTimeout
	if idle <= 0 {
		idle = engine.DefaultIdleTimeout
	}
	handshake := lim.HeaderTimeout
	if handshake <= 0 {
		handshake = engine.DefaultHeaderTimeout
	}
	early := false
	if o := cfg.ListenOptions[h.l.addr]; o != nil && o.HTTP3 != nil {
		early = o.HTTP3.EarlyData
	}
	h.conf.Store(&quic.Config{
		HandshakeIdleTimeout:           handshake / 2, // quic-go gives a handshake twice this in all
		MaxIdleTimeout:                 idle,
		InitialStreamReceiveWindow:     h3StreamWindow,
		MaxStreamReceiveWindow:         h3MaxStreamWindow,
		InitialConnectionReceiveWindow: h3ConnWindow,
		MaxConnectionReceiveWindow:     h3MaxConnWindow,
		MaxIncomingStreams:             int64(streams),
		MaxIncomingUniStreams:          8, // control, QPACK encoder and decoder, and room for a few the client may add
		Allow0RTT:                      early,
	})
}

// configForClient is the QUIC config of a new connection: that of the
// config of the moment, or a refusal when the server holds MaxConns
// connections (TCP and QUIC together).
func (h *h3Listener) configForClient(*quic.ClientInfo) (*quic.Config, error) {
	maxConns := h.srv.srv.Limits.MaxConns
	if h.srv.sw != nil {
		maxConns = h.srv.sw.Config().Limits.MaxConns
	}
	if maxConns <= 0 {
		maxConns = engine.DefaultMaxConns
	}
	if int(h.open.Load())+h.srv.srv.OpenConns() >= maxConns {
		return nil, errors.New("http3: too many connections")
	}
	return h.conf.Load(), nil
}

// verifySourceAddress asks a new connection attempt for a Retry while
// h3RetryAbove handshakes are in progress.
func (h *h3Listener) verifySourceAddress(net.Addr) bool {
	if h.handshakes.Load() >= h3RetryAbove {
		h.retries.Add(1)
		return true
	}
	return false
}

// connContext counts a new connection as handshaking until its
// handshake completes (see serveHTTP3's ConnContext) or it ends, and as
// open until it ends, and gives its context the connection's *h3Conn.
func (h *h3Listener) connContext(ctx context.Context, _ *quic.ClientInfo) (context.Context, error) {
	hc := &h3Conn{ctx: ctx}
	hc.handshaking.Store(true)
	h.handshakes.Add(1)
	h.open.Add(1)
	h.accepted.Add(1)
	context.AfterFunc(ctx, func() {
		h.handshakeOver(hc)
		h.open.Add(-1)
		h.mu.Lock()
		delete(h.conns, hc)
		h.mu.Unlock()
	})
	return context.WithValue(ctx, h3ConnKey{}, hc), nil
}

// serveHTTP3 starts serving h with handler, in a new http3 server;
// the previous one, if any, is shut down gracefully (GOAWAY), its
// connections given grace to finish their requests.
func (h *h3Listener) serveHTTP3(handler engine.Handler, grace time.Duration) {
	hs := &http3.Server{
		Handler:        h.handler(h.srv.srv.Bridge(handler)),
		MaxHeaderBytes: h.maxHeaderBytes(),
		IdleTimeout:    h.conf.Load().MaxIdleTimeout,
		// The connection's context carries its *h3Conn (connContext),
		// which its requests find there: nothing more is kept per
		// connection than what connContext made.
		ConnContext: func(ctx context.Context, c *quic.Conn) context.Context {
			hc, ok := ctx.Value(h3ConnKey{}).(*h3Conn)
			if !ok {
				return ctx
			}
			if hc.handshaking.Load() {
				go func() {
					select {
					case <-c.HandshakeComplete():
						if c.ConnectionState().GSO {
							h.gso.Store(true)
						}
					case <-hc.ctx.Done(): // the connection's end; its channel exists already (connContext's AfterFunc)
					}
					h.handshakeOver(hc)
				}()
			}
			h.mu.Lock()
			hc.c = c
			if hc.ctx.Err() == nil { // else it has ended: connContext's AfterFunc need not find it
				h.conns[hc] = struct{}{}
			}
			h.mu.Unlock()
			return ctx
		},
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	old := h.http3
	h.http3 = hs
	h.mu.Unlock()
	if old != nil {
		go shutdownHTTP3(old, grace)
	}
	go func() {
		err := hs.ServeListener(h.ln)
		if err != nil && !errors.Is(err, http.ErrServerClosed) && !h.isClosed() {
			h.srv.logger().Error("HTTP/3 stopped serving", "addr", h.conn.LocalAddr().String(), "error", err)
		}
	}()
}

// maxHeaderBytes is the header size the http3 server accepts: the
// config's max_header_bytes.
func (h *h3Listener) maxHeaderBytes() int {
	n := h.srv.srv.Limits.MaxHeaderBytes
	if h.srv.sw != nil {
		n = h.srv.sw.Config().Limits.MaxHeaderBytes
	}
	if n <= 0 {
		n = engine.DefaultMaxHeaderBytes
	}
	return n
}

func (h *h3Listener) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// shutdownHTTP3 shuts hs down: GOAWAY to its connections, which get
// grace to finish their requests before they are closed.
func shutdownHTTP3(hs *http3.Server, grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	hs.Shutdown(ctx)
}

// safeMethods are the methods a request in 0-RTT may have (RFC 9110
// §9.2.1): replaying them changes nothing.
var safeMethods = map[string]bool{"GET": true, "HEAD": true, "OPTIONS": true, "TRACE": true}

// handler is next behind the 0-RTT rule: a request that arrives before
// its connection's handshake completes (in early data, which an attacker
// may replay) is served only with a safe method, and with Early-Data: 1
// (RFC 8470 §5.1) for an upstream to see; any other is answered 425 Too
// Early, which a client answers by sending it again once the handshake
// is complete.
func (h *h3Listener) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hc, ok := r.Context().Value(h3ConnKey{}).(*h3Conn); ok {
			hc.inflight.Add(1)
			defer hc.inflight.Add(-1)
			select {
			case <-hc.c.HandshakeComplete():
			default:
				if !safeMethods[r.Method] {
					w.Header().Set("Content-Type", "text/plain; charset=utf-8")
					w.WriteHeader(http.StatusTooEarly)
					w.Write([]byte("too early: send the request again once the handshake is complete\n"))
					return
				}
				r.Header.Set("Early-Data", "1")
			}
		}
		next.ServeHTTP(w, r)
	})
}

// shutdown stops h gracefully: GOAWAY to every connection, which has
// until ctx is done to finish its requests; then the socket is closed.
// A connection with no request in flight is closed at once, as an idle
// HTTP/1.1 one is: its client may have gone without a word.
func (h *h3Listener) shutdown(ctx context.Context) {
	h.mu.Lock()
	hs := h.http3
	h.closed = true
	h.mu.Unlock()
	if hs != nil {
		done := make(chan struct{})
		go func() {
			hs.Shutdown(ctx)
			close(done)
		}()
		h.closeIdle()
		<-done
	}
	h.close()
}

// closeIdle closes the connections with no request in flight (a request
// on its way is not lost: the client may send it again, RFC 9114 §5.2).
func (h *h3Listener) closeIdle() {
	h.mu.Lock()
	var idle []*h3Conn
	for hc := range h.conns {
		if hc.inflight.Load() == 0 {
			idle = append(idle, hc)
		}
	}
	h.mu.Unlock()
	for _, hc := range idle {
		hc.c.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")
	}
}

// close closes h's socket, and with it every connection on it.
func (h *h3Listener) close() {
	h.mu.Lock()
	h.closed = true
	hs := h.http3
	h.mu.Unlock()
	if hs != nil {
		hs.Close()
	}
	h.ln.Close()
	h.tr.Close()
	h.conn.Close()
}

// altSvc is the Alt-Svc field value announcing h on the TCP listener's
// responses: HTTP/3 on the same port, for a day.
func (h *h3Listener) altSvc() string {
	return `h3=":` + strconv.Itoa(h.conn.LocalAddr().(*net.UDPAddr).Port) + `"; ma=86400`
}

// h3Counts are the HTTP/3 connection counters of a Server's listeners.
type h3Counts struct {
	accepted uint64
	open     int64
}

// http3Stats adds up the HTTP/3 counters of s's listeners.
func (s *Server) http3Stats() h3Counts {
	var c h3Counts
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	for _, l := range s.lns {
		if l.h3 != nil {
			c.accepted += l.h3.accepted.Load()
			c.open += l.h3.open.Load()
		}
	}
	return c
}

// shutdownHTTP3 shuts down the HTTP/3 side of every listener (see
// h3Listener.shutdown), and returns a channel closed when all are done.
func (s *Server) shutdownHTTP3(ctx context.Context) <-chan struct{} {
	var wg sync.WaitGroup
	s.lnMu.Lock()
	for _, l := range s.lns {
		if l.h3 != nil {
			wg.Go(func() { l.h3.shutdown(ctx) })
		}
	}
	s.lnMu.Unlock()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

// reloadHTTP3 makes the HTTP/3 listeners kept by a reload serve cfg: the
// connections that follow get its QUIC parameters, and those open are
// sent GOAWAY (as HTTP/2 ones are), to finish their requests and
// reconnect.
func (s *Server) reloadHTTP3(kept []*listener, cfg *config.Config) {
	for _, l := range kept {
		if l.h3 != nil {
			l.h3.setConfig(cfg)
			l.h3.serveHTTP3(listenerHandler{l, s.srv.Handler}, s.grace())
		}
	}
}

// quicSecret returns s's QUIC secret: QUICSecret, or the one kept in
// QUICSecretFile, or nil (a warning logged) for a random one.
func (s *Server) quicSecret() []byte {
	if s.QUICSecret != nil || s.QUICSecretFile == "" {
		return s.QUICSecret
	}
	return KeptQUICSecret(s.QUICSecretFile, s.logger())
}

// quicKeys are the keys of a Server's QUIC transports, derived from its
// QUIC secret (or a random one) once, and kept for its life: a reload, a
// listener replaced, keep them.
type quicKeys struct {
	once  sync.Once
	err   error
	reset quic.StatelessResetKey
	token quic.TokenGeneratorKey
}

// get returns the keys derived from the secret that secret returns (32
// bytes; nil: random), calling it and deriving them at the first call.
func (k *quicKeys) get(secretOf func() []byte) (*quicKeys, error) {
	k.once.Do(func() {
		secret := secretOf()
		if secret == nil {
			secret = make([]byte, quicSecretSize)
			rand.Read(secret)
		}
		if len(secret) != quicSecretSize {
			k.err = fmt.Errorf("http3: the QUIC secret has %d bytes, not %d", len(secret), quicSecretSize)
			return
		}
		copy(k.reset[:], quicKey(secret, "sluice quic stateless reset"))
		copy(k.token[:], quicKey(secret, "sluice quic token"))
	})
	return k, k.err
}

// quicKey derives the key for purpose from secret: HMAC-SHA256, so that
// neither key tells anything of the other or of the secret.
func quicKey(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}
