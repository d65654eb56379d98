package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/upstream"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// holdingUpstream reads each request head and never answers: it waits
// for the proxy to close the connection, and counts the requests it got
// and the connections the proxy closed.
func holdingUpstream(t *testing.T) (url string, got, closed *atomic.Int64) {
	got, closed = new(atomic.Int64), new(atomic.Int64)
	url = rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := readHead(br); err != nil {
			return
		}
		got.Add(1)
		io.Copy(io.Discard, br) // until the proxy closes
		closed.Add(1)
	})
	return url, got, closed
}

// A client that goes away while the proxy waits for a slow upstream's
// response head ends the wait: the upstream connection is closed long
// before the (60 s) header timeout, its place under max_conns given back,
// and the request is not counted against the upstream.
func TestClientGoneReleasesUpstream(t *testing.T) {
	url0, got0, closed0 := holdingUpstream(t)
	url1, got1, closed1 := holdingUpstream(t)
	srv, p := front(t, Options{Upstreams: []string{url0, url1}, ResponseHeaderTimeout: time.Minute,
		Passive: PassiveHealth{Failures: 1, DownFor: time.Hour}})
	const clients = 10
	conns := make([]*sluicetest.Conn, clients)
	for i := range conns {
		c := sluicetest.Dial(t, srv.Addr)
		if _, err := c.Write([]byte("GET /slow HTTP/1.1\r\nHost: example.com\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	sluicetest.WaitFor(t, "the upstreams to get every request", func() bool { return got0.Load()+got1.Load() == clients })
	for _, c := range conns {
		c.Close()
	}
	sluicetest.WaitFor(t, "the proxy to close the upstream connections of the clients gone", func() bool {
		return closed0.Load()+closed1.Load() == clients
	})
	sluicetest.WaitFor(t, "the pool to count no connection open", func() bool {
		return p.grp.Hosts()[0].Open()+p.grp.Hosts()[1].Open() == 0
	})
	for i, h := range p.grp.Hosts() {
		if !h.Up(upstream.Now()) {
			t.Errorf("upstream %d marked down by requests whose clients went away", i)
		}
	}
}

// Over HTTP/2 a stream reset (HEADERS, then RST_STREAM) ends the wait as
// a closed connection does, the client's connection staying open.
func TestStreamResetReleasesUpstream(t *testing.T) {
	url, got, closed := holdingUpstream(t)
	logger, _ := sluicetest.Logger()
	p, err := New(Options{Upstreams: []string{url}, ResponseHeaderTimeout: time.Minute, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	srv := sluicetest.NewServer(t, pipe.Handler(p), sluicetest.HTTP2())
	c := sluicetest.Dial(t, srv.Addr)
	c.Write([]byte(http2.ClientPreface))
	fr := http2.NewFramer(c, c.R)
	fr.WriteSettings()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	const streams = 5
	for i := range streams {
		hb.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "example.com"}, {":path", "/slow"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		id := uint32(2*i + 1)
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
	sluicetest.WaitFor(t, "the upstream to get every request", func() bool { return got.Load() == streams })
	for i := range streams {
		if err := fr.WriteRSTStream(uint32(2*i+1), http2.ErrCodeCancel); err != nil {
			t.Fatal(err)
		}
	}
	sluicetest.WaitFor(t, "the proxy to close the upstream connections of the streams reset", func() bool {
		return closed.Load() == streams && p.grp.Hosts()[0].Open() == 0
	})
}

// A malformed response head to a request that carried a percent-encoded
// control byte, which the application may have decoded into it, is not
// counted against the upstream; one to a request without is.
func TestMalformedReflectionNotCounted(t *testing.T) {
	malformed := func(c net.Conn, br *bufio.Reader) {
		for {
			if _, err := readHead(br); err != nil {
				return
			}
			c.Write([]byte("HTTP/1.1 200 OK\r\nX-Echo: a\x01b\r\nContent-Length: 2\r\n\r\nok"))
		}
	}
	urls := []string{rawServer(t, malformed), rawServer(t, malformed)}
	srv, p := front(t, Options{Upstreams: urls, Retries: -1, Passive: PassiveHealth{Failures: 1, DownFor: time.Hour}})
	down := func() (n int) {
		for _, h := range p.grp.Hosts() {
			if !h.Up(upstream.Now()) {
				n++
			}
		}
		return n
	}
	for i := range 4 {
		if resp, _ := sluicetest.Get(t, srv.URL+"/echo?x=%01"); resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("request %d: %d, want 502", i+1, resp.StatusCode)
		}
	}
	if n := down(); n != 0 {
		t.Fatalf("%d upstreams marked down for responses the requests' own bytes made malformed", n)
	}
	sluicetest.Get(t, srv.URL+"/echo?x=1")
	if n := down(); n != 1 {
		t.Fatalf("a malformed response to a plain request marked %d upstreams down, want 1", n)
	}
}

// TestArmHeadCutsTheWaitShort drives armHead as a busy connection does,
// a request every millisecond for three seconds, under the default
// header timeout: the first deadline of every wait falls goneAfter/2 to
// goneAfter after its request, and is moved about once every
// goneAfter/2, not once a request. A timeout of at most goneAfter is
// armRead's.
func TestArmHeadCutsTheWaitShort(t *testing.T) {
	nc := &deadlineConn{}
	uc := &upConn{nc: nc}
	start := upstream.Instant(1_000_000 * time.Second)
	const requests = 3000
	for i := range requests {
		now := start.Add(time.Duration(i) * time.Millisecond)
		uc.armHead(now, DefaultResponseHeaderTimeout)
		d := upstream.InstantOf(nc.set[len(nc.set)-1])
		if d.Sub(now) < goneAfter/2 || d.Sub(now) > goneAfter {
			t.Fatalf("request %d: first deadline %v after its send, want %v to %v", i, d.Sub(now), goneAfter/2, goneAfter)
		}
	}
	span := time.Duration(requests) * time.Millisecond
	if max := int(span/(goneAfter/2)) + 1; len(nc.set) > max {
		t.Errorf("%d deadlines set for %d requests over %v, want at most %d", len(nc.set), requests, span, max)
	}
	short := &deadlineConn{}
	uc = &upConn{nc: short}
	uc.armHead(start, goneAfter)
	if d := upstream.InstantOf(short.set[0]); d < start.Add(goneAfter) {
		t.Errorf("timeout %v: deadline %v after the send, want the timeout's", goneAfter, d.Sub(start))
	}
}
