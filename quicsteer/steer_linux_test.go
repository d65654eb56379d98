package quicsteer

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/sock"
)

// group binds n UDP sockets to one loopback port with SO_REUSEPORT, in
// order: their indices in the group.
func group(t *testing.T, n int) []*net.UDPConn {
	t.Helper()
	addr := "127.0.0.1:0"
	var socks []*net.UDPConn
	for range n {
		pc, err := sock.ListenPacketShared("udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		addr = pc.LocalAddr().String()
		socks = append(socks, pc.(*net.UDPConn))
	}
	return socks
}

func attach(t *testing.T, c *net.UDPConn, tab Table) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := Attach(rc, tab); err != nil {
		t.Fatal(err)
	}
}

// The kernel runs the program on the UDP payload, and a socket's index
// is the order in which it joined the group: each tag's datagram reaches
// the socket the table gives it.
func TestAttachSteers(t *testing.T) {
	socks := group(t, 3)
	tags := []uint32{0xa0a0a0a0, 0xb1b1b1b1, 0xc2c2c2c2}
	tab := Table{Owners: map[uint32]uint32{tags[0]: 2, tags[1]: 0, tags[2]: 1}, Current: []uint32{1}}
	attach(t, socks[1], tab) // any socket of the group
	client, err := net.DialUDP("udp", nil, socks[0].LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for _, tag := range tags {
		for _, p := range [][]byte{short(id(tag, 1)), long(id(tag, 2))} {
			if _, err := client.Write(p); err != nil {
				t.Fatal(err)
			}
			want := socks[tab.Owners[tag]]
			want.SetReadDeadline(time.Now().Add(10 * time.Second)) // a guard against hanging, not a timing
			buf := make([]byte, 2048)
			n, _, err := want.ReadFrom(buf)
			if err != nil {
				t.Fatalf("tag %x: socket %d got nothing: %v", tag, tab.Owners[tag], err)
			}
			if string(buf[:n]) != string(p) {
				t.Fatalf("tag %x: socket %d got another datagram", tag, tab.Owners[tag])
			}
		}
	}
	// A client's own connection ID goes to the current socket, 1.
	client.Write(long(id(0x12345678, 9)))
	socks[1].SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := socks[1].ReadFrom(make([]byte, 2048)); err != nil {
		t.Fatalf("the current socket got nothing: %v", err)
	}
}

// watched counts the datagrams that reach a server's socket carrying the
// tag of another server.
type watched struct {
	net.PacketConn
	tag, other uint32
	stray      atomic.Int64
	got        atomic.Int64
}

// SetReadBuffer and SetWriteBuffer let quic-go size the socket's
// buffers, as on the socket itself.
func (w *watched) SetReadBuffer(n int) error {
	return w.PacketConn.(*net.UDPConn).SetReadBuffer(n)
}

func (w *watched) SetWriteBuffer(n int) error {
	return w.PacketConn.(*net.UDPConn).SetWriteBuffer(n)
}

func (w *watched) ReadFrom(b []byte) (int, net.Addr, error) {
	n, a, err := w.PacketConn.ReadFrom(b)
	if err == nil {
		w.got.Add(1)
		p := b[:n]
		off := 1
		if len(p) > 5 && p[0]&0x80 != 0 {
			off = 6
		}
		if tag, ok := TagOf(p[min(off, len(p)):]); ok && tag == w.other {
			w.stray.Add(1)
		}
	}
	return n, a, err
}

// server is one of the two QUIC servers of the tests: a transport on its
// socket of the group, echoing each stream.
type server struct {
	tr    *quic.Transport
	w     *watched
	conns chan *quic.Conn
}

func startServers(t *testing.T, ca *sluicetest.CA, sameKey bool) ([]*server, Table, []*net.UDPConn) {
	t.Helper()
	socks := group(t, 2)
	tags := []uint32{0x5ca1ab1e, 0x0ddba11}
	tab := Table{Owners: map[uint32]uint32{tags[0]: 0, tags[1]: 1}, Current: []uint32{0, 1}}
	attach(t, socks[0], tab)
	tlsConf := &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "a.example")}, NextProtos: []string{"echo"}}
	var servers []*server
	for i, sock := range socks {
		key := quic.StatelessResetKey{1, 2, 3}
		if !sameKey {
			key[0] += byte(i)
		}
		w := &watched{PacketConn: sock, tag: tags[i], other: tags[1-i]}
		s := &server{w: w, conns: make(chan *quic.Conn, 64)}
		s.tr = &quic.Transport{Conn: w, ConnectionIDGenerator: Generator{Tag: tags[i]}, StatelessResetKey: &key}
		t.Cleanup(func() { s.tr.Close() })
		ln, err := s.tr.Listen(tlsConf, &quic.Config{MaxIdleTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				c, err := ln.Accept(context.Background())
				if err != nil {
					return
				}
				s.conns <- c
				go echo(c)
			}
		}()
		servers = append(servers, s)
	}
	return servers, tab, socks
}

func echo(c *quic.Conn) {
	for {
		st, err := c.AcceptStream(context.Background())
		if err != nil {
			return
		}
		go func() {
			b, _ := io.ReadAll(st)
			st.Write(b)
			st.Close()
		}()
	}
}

func roundTrip(t *testing.T, c *quic.Conn, msg string) {
	t.Helper()
	st, err := c.OpenStreamSync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st.SetDeadline(time.Now().Add(20 * time.Second)) // a guard against hanging
	st.Write([]byte(msg))
	st.Close()
	b, err := io.ReadAll(st)
	if err != nil || string(b) != msg {
		t.Fatalf("echo of %q: %q, %v", msg, b, err)
	}
}

func clientTransport(t *testing.T) *quic.Transport {
	t.Helper()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	tr := &quic.Transport{Conn: pc}
	t.Cleanup(func() { tr.Close(); pc.Close() })
	return tr
}

// Connections spread over both servers, and a client that migrates to a
// new address (a new source port, which the kernel's hash would send to
// either socket) keeps its connection: every datagram that carries a
// server's connection ID reaches that server.
func TestMigrationKeepsOwner(t *testing.T) {
	ca := sluicetest.NewCA(t)
	servers, _, socks := startServers(t, ca, true)
	clientTLS := ca.ClientConfig("a.example")
	clientTLS.NextProtos = []string{"echo"}
	const n = 8 // the chance that the kernel's hash alone kept all 8 on their servers is 1/256
	for i := range n {
		tr := clientTransport(t)
		c, err := tr.Dial(context.Background(), socks[0].LocalAddr(), clientTLS, &quic.Config{MaxIdleTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseWithError(0, "")
		roundTrip(t, c, "before")
		path, err := c.AddPath(clientTransport(t))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a guard against hanging
		err = path.Probe(ctx)
		cancel()
		if err != nil {
			t.Fatalf("connection %d: probing the new path: %v", i, err)
		}
		if err := path.Switch(); err != nil {
			t.Fatal(err)
		}
		roundTrip(t, c, "after")
		// Its close reaches the server too.
		c.CloseWithError(0, "")
		var sc *quic.Conn
		select {
		case sc = <-servers[0].conns:
		case sc = <-servers[1].conns:
		}
		<-sc.Context().Done()
	}
	for i, s := range servers {
		if s.w.stray.Load() != 0 {
			t.Errorf("server %d got %d datagrams of the other's connections", i, s.w.stray.Load())
		}
	}
}

// A connection whose datagrams reach a server that does not know it (its
// owner's tag dropped from the table: the owner has gone) ends at once
// with a stateless reset, made with the key the servers share, not after
// its idle timeout (a minute).
func TestStatelessResetFromAnotherServer(t *testing.T) {
	ca := sluicetest.NewCA(t)
	servers, tab, socks := startServers(t, ca, true)
	clientTLS := ca.ClientConfig("a.example")
	clientTLS.NextProtos = []string{"echo"}
	c, err := clientTransport(t).Dial(context.Background(), socks[0].LocalAddr(), clientTLS, &quic.Config{MaxIdleTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c, "hello")
	owner := 0
	select {
	case <-servers[0].conns:
	case <-servers[1].conns:
		owner = 1
	}
	for tag, i := range tab.Owners {
		if i == uint32(owner) {
			delete(tab.Owners, tag)
		}
	}
	tab.Current = []uint32{uint32(1 - owner)}
	attach(t, socks[0], tab)
	st, err := c.OpenStream()
	if err == nil {
		st.Write(make([]byte, 100)) // a datagram for the other server to answer
		st.Close()
	}
	<-c.Context().Done()
	var reset *quic.StatelessResetError
	if err := context.Cause(c.Context()); !errors.As(err, &reset) {
		t.Fatalf("the connection ended with %v, want a stateless reset", err)
	}
}
