package daemon

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/quicvarint"

	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/sluicetest"
)

// h3Dial opens a QUIC connection to addr from a socket of its own
// (0-RTT if the session cache allows it), and an HTTP/3 client on it.
func h3Dial(t *testing.T, addr string, tlsConf *tls.Config) (*quic.Conn, *http3.ClientConn) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	qt := &quic.Transport{Conn: pc}
	t.Cleanup(func() { qt.Close(); pc.Close() })
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tlsConf = tlsConf.Clone()
	tlsConf.NextProtos = []string{http3.NextProtoH3}
	conn, err := qt.DialEarly(context.Background(), ua, tlsConf, &quic.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseWithError(0, "") })
	return conn, (&http3.Transport{}).NewClientConn(conn)
}

// h3Get asks path of the site on cc, and returns the status and body.
func h3Get(t *testing.T, cc *http3.ClientConn, site *h3Site, method, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, site.base()+path, nil)
	resp, err := cc.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}

// A reload keeps the UDP socket and the connections on it: a request in
// flight finishes, its connection is sent GOAWAY (its client closes it
// once idle), and new connections are served on the same port. Shutdown
// lets a request in flight finish too.
func TestHTTP3ReloadAndShutdown(t *testing.T) {
	site := newH3Site(t, "true")
	conn, cc := h3Dial(t, site.tcp.String(), site.ca.ClientConfig("a.example"))
	req, _ := http.NewRequest("GET", site.base()+"/up/stream", nil)
	resp, err := cc.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, len("first;"))
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	if err := site.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	site.finishStream()
	rest, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(rest) != "second" {
		t.Errorf("the request in flight across the reload: rest %q, %v", rest, err)
	}
	select {
	case <-conn.Context().Done(): // GOAWAY, then closed by the client once idle
	case <-time.After(sluicetest.WaitTimeout):
		t.Fatal("the connection open across the reload was not sent GOAWAY")
	}
	_, cc2 := h3Dial(t, site.tcp.String(), site.ca.ClientConfig("a.example"))
	if status, body := h3Get(t, cc2, site, "GET", "/big.txt"); status != 200 || len(body) != len(site.big) {
		t.Errorf("after the reload: %d, %d bytes", status, len(body))
	}
	if st := site.srv.Stats(); st.Accepted < 2 {
		t.Errorf("Stats counts %d connections accepted, want the two HTTP/3 ones at least", st.Accepted)
	}

	// Shutdown: the request in flight gets its answer.
	site.newStream()
	req, _ = http.NewRequest("GET", site.base()+"/up/stream", nil)
	resp, err = cc2.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), sluicetest.WaitTimeout)
		defer cancel()
		done <- site.srv.Shutdown(ctx)
	}()
	sluicetest.WaitFor(t, "shutdown to begin", func() bool {
		select {
		case <-site.srv.stopped:
			return true
		default:
			return false
		}
	})
	site.finishStream()
	rest, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(rest) != "second" {
		t.Errorf("the request in flight at shutdown: rest %q, %v", rest, err)
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// A client that moves to another address (a new UDP socket: a phone
// leaving Wi-Fi, a NAT rebinding) keeps its QUIC connection: the server
// answers on the new path, and counts no new connection.
func TestHTTP3Migration(t *testing.T) {
	site := newH3Site(t, "true")
	conn, cc := h3Dial(t, site.tcp.String(), site.ca.ClientConfig("a.example"))
	status, before := h3Get(t, cc, site, "GET", "/addr")
	if status != 200 || before != conn.LocalAddr().String() {
		t.Fatalf("before moving: %d %q, want the client's address %s", status, before, conn.LocalAddr())
	}
	accepted := site.srv.http3Stats().accepted
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	qt := &quic.Transport{Conn: pc}
	defer func() { qt.Close(); pc.Close() }()
	path, err := conn.AddPath(qt)
	if err != nil {
		t.Fatal(err)
	}
	if err := path.Probe(context.Background()); err != nil {
		t.Fatalf("probing the new path: %v", err)
	}
	if err := path.Switch(); err != nil {
		t.Fatal(err)
	}
	// The server moves to the new path once it has validated it: until
	// then it may answer on the old one.
	sluicetest.WaitFor(t, "the server to see the new address", func() bool {
		status, after := h3Get(t, cc, site, "GET", "/addr")
		if status != 200 {
			t.Fatalf("after moving: %d %q", status, after)
		}
		return after == pc.LocalAddr().String()
	})
	if got := site.srv.http3Stats().accepted; got != accepted {
		t.Errorf("%d connections accepted after moving, want %d: the move made a new connection", got, accepted)
	}
}

// Many streams on one connection, most cancelled part way through a
// large download, release what they held: with max_streams 100 (the
// default), 300 streams opened at once, two in three cancelled, all
// get served, and leave room for more.
func TestHTTP3CancelledStreams(t *testing.T) {
	site := newH3Site(t, "true")
	_, cc := h3Dial(t, site.tcp.String(), site.ca.ClientConfig("a.example"))
	if status, _ := h3Get(t, cc, site, "GET", "/big.txt"); status != 200 {
		t.Fatal(status)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 300)
	for i := range 300 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			path, size := "/huge.bin", len(site.huge)
			if i%3 == 0 {
				path, size = "/big.txt", len(site.big)
			}
			req, _ := http.NewRequestWithContext(ctx, "GET", site.base()+path, nil)
			resp, err := cc.RoundTrip(req)
			if err != nil {
				errs <- err
				return
			}
			if i%3 == 0 { // read it all
				n, err := io.Copy(io.Discard, resp.Body)
				if err != nil || n != int64(size) {
					errs <- fmt.Errorf("a whole download got %d bytes of %d, %v", n, size, err)
				}
			} else { // read a little, then cancel
				io.ReadFull(resp.Body, make([]byte, 1000))
				cancel()
			}
			resp.Body.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if status, body := h3Get(t, cc, site, "GET", "/big.txt"); status != 200 || len(body) != len(site.big) {
		t.Errorf("after 300 streams: %d, %d bytes", status, len(body))
	}
}

// holdingRelay relays UDP datagrams between a client and the server.
// While holdUp is set it keeps back the client's datagrams that carry
// Handshake or 1-RTT packets: the server cannot complete the handshake,
// so what it serves meanwhile it serves on 0-RTT data. While holdDown is
// set it keeps back every datagram of the server's: the client, which
// has heard nothing, sends its requests in 0-RTT.
type holdingRelay struct {
	pc               net.PacketConn // the client's side
	up               *net.UDPConn   // to the server
	mu               sync.Mutex
	client           net.Addr
	holdUp, holdDown bool
	heldUp, heldDown [][]byte
}

func newHoldingRelay(t *testing.T, server string, hold bool) *holdingRelay {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ua, _ := net.ResolveUDPAddr("udp", server)
	up, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		t.Fatal(err)
	}
	r := &holdingRelay{pc: pc, up: up, holdUp: hold, holdDown: hold}
	t.Cleanup(func() { pc.Close(); up.Close() })
	go func() { // client to server
		buf := make([]byte, 65536)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			b := append([]byte(nil), buf[:n]...)
			r.mu.Lock()
			r.client = addr
			if r.holdUp && carriesHandshake(b) {
				r.heldUp = append(r.heldUp, b)
				r.mu.Unlock()
				continue
			}
			r.mu.Unlock()
			up.Write(b)
		}
	}()
	go func() { // server to client
		buf := make([]byte, 65536)
		for {
			n, err := up.Read(buf)
			if err != nil {
				return
			}
			b := append([]byte(nil), buf[:n]...)
			r.mu.Lock()
			if r.holdDown {
				r.heldDown = append(r.heldDown, b)
				r.mu.Unlock()
				continue
			}
			c := r.client
			r.mu.Unlock()
			pc.WriteTo(b, c)
		}
	}()
	return r
}

// releaseDown stops holding the server's datagrams, sending those held.
func (r *holdingRelay) releaseDown() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holdDown = false
	for _, b := range r.heldDown {
		r.pc.WriteTo(b, r.client)
	}
	r.heldDown = nil
}

// releaseUp stops holding the client's datagrams, sending those held.
func (r *holdingRelay) releaseUp() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holdUp = false
	for _, b := range r.heldUp {
		r.up.Write(b)
	}
	r.heldUp = nil
}

// carriesHandshake reports whether datagram b holds a Handshake packet
// or a 1-RTT one (RFC 9000 §17: coalesced long-header packets, a short
// header last).
func carriesHandshake(b []byte) bool {
	for len(b) > 0 {
		if b[0]&0x80 == 0 {
			return true // short header: 1-RTT
		}
		typ := b[0] & 0x30 >> 4
		if typ == 2 {
			return true
		}
		if typ == 3 || len(b) < 7 {
			return false
		}
		i := 5
		i += 1 + int(b[i]) // destination connection ID
		if i >= len(b) {
			return false
		}
		i += 1 + int(b[i]) // source connection ID
		if typ == 0 {      // Initial: a token
			tl, n, err := quicvarint.Parse(b[min(i, len(b)):])
			if err != nil {
				return false
			}
			i += n + int(tl)
		}
		l, n, err := quicvarint.Parse(b[min(i, len(b)):])
		if err != nil {
			return false
		}
		i += n + int(l)
		if i > len(b) {
			return false
		}
		b = b[i:]
	}
	return false
}

// 0-RTT is refused unless early_data is on; with it, a request that
// arrives before the handshake completes is served if its method is
// safe (with Early-Data: 1 for the upstream) and answered 425 Too Early
// otherwise; once the handshake completes, the same request is served.
func TestHTTP3EarlyData(t *testing.T) {
	for _, c := range []struct {
		option string
		early  bool
	}{{"true", false}, {"{early_data: true}", true}} {
		t.Run(c.option, func(t *testing.T) {
			site := newH3Site(t, c.option)
			tlsConf := site.ca.ClientConfig("a.example")
			tickets := &ticketCache{ClientSessionCache: tls.NewLRUClientSessionCache(4), put: make(chan struct{}, 8)}
			tlsConf.ClientSessionCache = tickets
			conn, cc := h3Dial(t, site.tcp.String(), tlsConf)
			if status, _ := h3Get(t, cc, site, "GET", "/big.txt"); status != 200 {
				t.Fatal(status)
			}
			select {
			case <-tickets.put:
			case <-time.After(sluicetest.WaitTimeout):
				t.Fatal("no session ticket")
			}
			conn.CloseWithError(0, "")

			relay := newHoldingRelay(t, site.tcp.String(), c.early)
			conn, cc = h3Dial(t, relay.pc.LocalAddr().String(), tlsConf)
			send := func(method, path string) *http3.RequestStream {
				str, err := cc.OpenRequestStream(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				req, _ := http.NewRequest(method, site.base()+path, nil)
				if err := str.SendRequestHeader(req); err != nil {
					t.Fatal(err)
				}
				str.Close()
				return str
			}
			answer := func(str *http3.RequestStream) (int, string) {
				resp, err := str.ReadResponse()
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(str)
				return resp.StatusCode, string(b)
			}
			if !c.early {
				<-conn.HandshakeComplete()
				if conn.ConnectionState().Used0RTT {
					t.Error("0-RTT accepted without early_data")
				}
				if status, body := answer(send("POST", "/up/x")); status != 200 || !strings.Contains(body, `early=""`) {
					t.Errorf("POST: %d %q", status, body)
				}
				return
			}
			// Sent before the client hears from the server: in 0-RTT.
			get, post := send("GET", "/up/x"), send("POST", "/up/x")
			relay.releaseDown()
			if status, body := answer(get); status != 200 || !strings.Contains(body, `early="1"`) {
				t.Errorf("GET in 0-RTT: %d %q, want 200 with Early-Data: 1 upstream", status, body)
			}
			if status, body := answer(post); status != 425 {
				t.Errorf("POST in 0-RTT: %d %q, want 425", status, body)
			}
			relay.releaseUp()
			<-conn.HandshakeComplete()
			if !conn.ConnectionState().Used0RTT {
				t.Error("the server did not accept 0-RTT")
			}
			if status, body := answer(send("POST", "/up/x")); status != 200 || !strings.Contains(body, `early=""`) {
				t.Errorf("POST after the handshake: %d %q", status, body)
			}
		})
	}
}

// ticketCache is a session cache that tells when it is given a ticket.
type ticketCache struct {
	tls.ClientSessionCache
	put chan struct{}
}

func (c *ticketCache) Put(key string, cs *tls.ClientSessionState) {
	c.ClientSessionCache.Put(key, cs)
	if cs != nil {
		select {
		case c.put <- struct{}{}:
		default:
		}
	}
}

// Past h3RetryAbove handshakes in progress, a new connection attempt is
// sent a Retry: the client proves its address and is served.
func TestHTTP3Retry(t *testing.T) {
	defer func(n int64) { h3RetryAbove = n }(h3RetryAbove)
	h3RetryAbove = 0 // every attempt
	site := newH3Site(t, "true")
	_, cc := h3Dial(t, site.tcp.String(), site.ca.ClientConfig("a.example"))
	if status, _ := h3Get(t, cc, site, "GET", "/big.txt"); status != 200 {
		t.Fatal(status)
	}
	var retries uint64
	site.srv.lnMu.Lock()
	for _, l := range site.srv.lns {
		retries += l.h3.retries.Load()
	}
	site.srv.lnMu.Unlock()
	if retries == 0 {
		t.Error("no Retry sent")
	}
}

// handshakeDropper is a client's UDP socket that never sends its
// Handshake packets: the server's handshakes with it stay in progress,
// as with a flood of Initial packets from spoofed addresses.
// Once pass is set it sends them again.
type handshakeDropper struct {
	net.PacketConn
	pass *atomic.Bool
}

func (d handshakeDropper) WriteTo(b []byte, addr net.Addr) (int, error) {
	if !d.pass.Load() && carriesHandshake(b) {
		return len(b), nil
	}
	return d.PacketConn.WriteTo(b, addr)
}

// A flood of connection attempts that never complete their handshake:
// past h3RetryAbove in progress, a new attempt is sent a Retry, and a
// real client still gets through; when the flood ends, so do the
// handshakes it left.
func TestHTTP3InitialFlood(t *testing.T) {
	t.Setenv("QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING", "true") // the flood's socket is no *net.UDPConn
	defer func(n int64) { h3RetryAbove = n }(h3RetryAbove)
	h3RetryAbove = 16 // a smaller flood: 128 dials at once made the test slow and, under -race, flaky
	site := newH3Site(t, "true")
	site.srv.lnMu.Lock()
	h := site.srv.lns[0].h3
	site.srv.lnMu.Unlock()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pass := new(atomic.Bool)
	flood := &quic.Transport{Conn: handshakeDropper{pc, pass}}
	defer func() { flood.Close(); pc.Close() }()
	ua, _ := net.ResolveUDPAddr("udp", site.tcp.String())
	tlsConf := site.ca.ClientConfig("a.example")
	tlsConf.NextProtos = []string{http3.NextProtoH3}
	// The client's handshake completes (it has the server's Finished);
	// the server's never does.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []*quic.Conn
	for range h3RetryAbove {
		wg.Go(func() {
			if conn, err := flood.Dial(ctx, ua, tlsConf, &quic.Config{}); err == nil {
				mu.Lock()
				conns = append(conns, conn)
				mu.Unlock()
			}
		})
	}
	sluicetest.WaitFor(t, "the flood's handshakes to be in progress", func() bool { return h.handshakes.Load() >= h3RetryAbove })
	if n := h.retries.Load(); n != 0 {
		t.Errorf("%d Retry sent below the threshold", n)
	}
	_, cc := h3Dial(t, site.tcp.String(), site.ca.ClientConfig("a.example"))
	if status, _ := h3Get(t, cc, site, "GET", "/big.txt"); status != 200 {
		t.Errorf("a real client during the flood: %d", status)
	}
	if h.retries.Load() == 0 {
		t.Error("no Retry sent during the flood")
	}
	wg.Wait() // every client's handshake done: it has the server's Finished
	cancel()
	pass.Store(true) // the flood's connections end, the server told
	for _, c := range conns {
		c.CloseWithError(0, "")
	}
	sluicetest.WaitFor(t, "the flood's handshakes to end", func() bool { return h.handshakes.Load() == 0 })
}

// A reload that turns http3 on replaces the listener, on the same port,
// and serves HTTP/3 there; one that turns it off closes the UDP socket.
func TestHTTP3ReloadToggles(t *testing.T) {
	site := newTLSSite(t)
	write := func(port, http3 string) {
		writeFile(t, site.file, "listen:\n  - {address: \"127.0.0.1:"+port+"\", tls: {cert: a.example.crt, key: a.example.key}"+http3+"}\nroutes:\n  - match: /\n    pipeline:\n      - text: ok\n")
	}
	write("0", "")
	s, _ := newServer(t, fileLoad(site.file))
	start(t, s)
	addr := onlyAddr(t, s).String()
	_, port, _ := net.SplitHostPort(addr)
	write(port, ", http3: true")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := onlyAddr(t, s).String(); got != addr {
		t.Fatalf("the reload moved the listener from %s to %s", addr, got)
	}
	tr := &http3.Transport{TLSClientConfig: site.ca.ClientConfig("a.example")}
	defer tr.Close()
	resp, err := (&http.Client{Transport: tr}).Get("https://" + addr + "/")
	if err != nil {
		t.Fatalf("HTTP/3 after turning it on: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Errorf("HTTP/3 after turning it on: %q", b)
	}
	write(port, ", http3: false")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, "the UDP port to be free", func() bool {
		pc, err := net.ListenPacket("udp", addr)
		if err == nil {
			pc.Close()
		}
		return err == nil
	})
}

// HTTP/3 handshakes get the listener's certificates: the one whose name
// the client asks for (SNI), and after a reload that renewed it, the
// new one, on the same socket.
func TestHTTP3Certificates(t *testing.T) {
	site := newTLSSite(t)
	writeFile(t, site.file, `listen:
  - address: "127.0.0.1:0"
    http3: true
    tls:
      certificates:
        - {cert: a.example.crt, key: a.example.key}
        - {cert: b.example.crt, key: b.example.key}
routes:
  - match: /
    pipeline:
      - text: ok
`)
	s, _ := newServer(t, fileLoad(site.file))
	start(t, s)
	addr := onlyAddr(t, s).String()
	serial := func(name string) string {
		t.Helper()
		conn, cc := h3Dial(t, addr, site.ca.ClientConfig(name))
		req, _ := http.NewRequest("GET", "https://"+addr+"/", nil)
		resp, err := cc.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		resp.Body.Close()
		cs := conn.ConnectionState().TLS
		if len(cs.PeerCertificates) == 0 || cs.PeerCertificates[0].VerifyHostname(name) != nil {
			t.Fatalf("%s: the server presented a certificate for another name", name)
		}
		conn.CloseWithError(0, "")
		return cs.PeerCertificates[0].SerialNumber.String()
	}
	before := serial("a.example")
	serial("b.example") // verified against b.example's name
	site.ca.IssueFiles(t, site.dir, "a.example")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if after := serial("a.example"); after == before {
		t.Error("after the reload, HTTP/3 handshakes still get the old certificate")
	}
}

// A certificate obtained by ACME (TLS-ALPN-01, over TCP) is served to
// HTTP/3 handshakes too: they share the listener's certificates.
func TestHTTP3ACME(t *testing.T) {
	plainLn, tlsLn := loopbackListener(t), loopbackListener(t)
	p := sluicetest.StartPebble(t, portOfListener(plainLn), portOfListener(tlsLn), time.Hour)
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	writeFile(t, file, fmt.Sprintf(`listen:
  - %s
  - address: %s
    http3: true
    tls:
      acme: {email: admin@example.com, domains: [%s], directory: %s, data: acme, ca_roots: %s}
routes:
  - match: /
    pipeline:
      - text: hi
`, plainLn.Addr(), tlsLn.Addr(), acmeDomain, p.Directory, p.CAFile))
	s, _ := newServer(t, fileLoad(file))
	s.Listen = func(a config.Address) (net.Listener, error) {
		for _, ln := range []net.Listener{plainLn, tlsLn} {
			if a.Addr == ln.Addr().String() {
				return ln, nil
			}
		}
		return nil, fmt.Errorf("no listener for %s", a)
	}
	start(t, s)
	client := &tls.Config{RootCAs: p.Roots(t), ServerName: acmeDomain}
	sluicetest.WaitFor(t, "a certificate from pebble", func() bool {
		c, err := tls.Dial("tcp", tlsLn.Addr().String(), client)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	conn, cc := h3Dial(t, tlsLn.Addr().String(), client)
	req, _ := http.NewRequest("GET", "https://"+acmeDomain+"/", nil)
	resp, err := cc.RoundTrip(req)
	if err != nil {
		t.Fatalf("HTTP/3 with the ACME certificate: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hi" || conn.ConnectionState().TLS.PeerCertificates[0].DNSNames[0] != acmeDomain {
		t.Errorf("HTTP/3: %q, certificate for %v", b, conn.ConnectionState().TLS.PeerCertificates[0].DNSNames)
	}
}

// status counts HTTP/3 connections among the open ones and HTTP/3
// requests among the requests, as it counts the others.
func TestHTTP3Status(t *testing.T) {
	site := newTLSSite(t)
	writeFile(t, site.file, `listen:
  - {address: "127.0.0.1:0", tls: {cert: a.example.crt, key: a.example.key}, http3: true}
routes:
  - match: /status
    pipeline:
      - status: json
  - match: /
    pipeline:
      - count
      - text: ok
`)
	s, _ := newServer(t, fileLoad(site.file))
	start(t, s)
	addr := onlyAddr(t, s).String()
	_, cc := h3Dial(t, addr, site.ca.ClientConfig("a.example"))
	get := func(path string) string {
		req, _ := http.NewRequest("GET", "https://"+addr+path, nil)
		resp, err := cc.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(b)
	}
	get("/")
	get("/")
	var snap struct{ Connections, Requests int }
	if err := json.Unmarshal([]byte(get("/status")), &snap); err != nil {
		t.Fatal(err)
	}
	if snap.Connections != 1 || snap.Requests < 2 {
		t.Errorf("status over HTTP/3 says %d connections, %d requests; want 1 (this one) and 2 at least", snap.Connections, snap.Requests)
	}
	if st := s.Stats(); st.Open != 1 || st.Accepted != 1 || st.Requests != 3 {
		t.Errorf("Stats: %d open, %d accepted, %d requests; want 1, 1, 3", st.Open, st.Accepted, st.Requests)
	}
}

// Floods a client may send on one connection are bounded by what the
// server advertised, and cost the other requests nothing:
//   - streams: at most max_streams (100) request streams are open at
//     once, however many the client tries, each here holding a HEADERS
//     frame it never finishes; another connection is served meanwhile,
//     and once the client gives the streams up the server gives their
//     credit back;
//   - QPACK: the server keeps no dynamic table (capacity 0) and does not
//     read a peer's QPACK encoder stream, so a flood of table
//     instructions on it stops at the stream's flow-control window
//     rather than filling the server's memory, and requests on the same
//     connection are still answered.
func TestHTTP3Floods(t *testing.T) {
	site := newH3Site(t, "true")
	t.Run("streams", func(t *testing.T) {
		conn, _ := h3Dial(t, site.tcp.String(), site.ca.ClientConfig("a.example"))
		// A HEADERS frame (type 1) announcing 100 bytes, with 3 of them.
		partial := append(quicvarint.Append(quicvarint.Append(nil, 1), 100), 0, 0, 0)
		var held []*quic.Stream
		for range 1000 {
			str, err := conn.OpenStream()
			if err != nil {
				break // the server's MAX_STREAMS: no more until some end
			}
			if _, err := str.Write(partial); err != nil {
				t.Fatal(err)
			}
			held = append(held, str)
		}
		if len(held) != 100 {
			t.Fatalf("%d request streams open at once, want max_streams 100", len(held))
		}
		_, other := h3Dial(t, site.tcp.String(), site.ca.ClientConfig("a.example"))
		if status, body := h3Get(t, other, site, "GET", "/big.txt"); status != 200 || len(body) != len(site.big) {
			t.Fatalf("another connection during the flood: %d, %d bytes", status, len(body))
		}
		for _, str := range held {
			str.CancelWrite(0x10c) // H3_REQUEST_CANCELLED
			str.CancelRead(0x10c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for i := range 100 {
			str, err := conn.OpenStreamSync(ctx)
			if err != nil {
				t.Fatalf("stream %d after the flood's were cancelled: %v (their credit not given back)", i, err)
			}
			str.CancelWrite(0x10c)
			str.CancelRead(0x10c)
		}
	})
	t.Run("qpack", func(t *testing.T) {
		conn, cc := h3Dial(t, site.tcp.String(), site.ca.ClientConfig("a.example"))
		enc, err := conn.OpenUniStream()
		if err != nil {
			t.Fatal(err)
		}
		// Stream type 2 (QPACK encoder), then Insert With Literal Name
		// instructions (RFC 9204 §4.3.3: 01NHxxxx), over and over.
		insert := []byte{0x40 | 5, 'x', '-', 'a', 'b', 'c', 3, '1', '2', '3'}
		chunk := bytes.Repeat(insert, 1<<10)
		if _, err := enc.Write(quicvarint.Append(nil, 2)); err != nil {
			t.Fatal(err)
		}
		var written atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			enc.SetWriteDeadline(time.Now().Add(time.Second))
			for written.Load() < 16<<20 {
				n, err := enc.Write(chunk)
				written.Add(int64(n))
				if err != nil {
					return // the deadline: flow control holds the rest back
				}
			}
		}()
		if status, body := h3Get(t, cc, site, "GET", "/big.txt"); status != 200 || len(body) != len(site.big) {
			t.Fatalf("a request on the flooding connection: %d, %d bytes", status, len(body))
		}
		<-done
		n := written.Load()
		if n > h3MaxStreamWindow {
			t.Fatalf("the server took %d bytes of QPACK instructions, more than a stream's largest window %d", n, h3MaxStreamWindow)
		}
		t.Logf("the flood stopped at %d bytes of QPACK instructions (stream window %d)", n, h3StreamWindow)
	})
}
