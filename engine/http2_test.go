//lint:file-ignore SA1019 the tests drive x/net/http2's client and Framer on purpose.

package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// h2Server serves h on a loopback port with sluicetest's server, sending
// "Server: sluice-test": over TLS offering "h2" and "http/1.1" by ALPN
// with a certificate from ca, or, with ca nil, in cleartext with H2C. It
// is closed when the test ends.
func h2Server(t *testing.T, ca *sluicetest.CA, h engine.Handler, lim engine.Limits) (*engine.Server, string) {
	t.Helper()
	opts := []sluicetest.Option{sluicetest.HTTP2(), sluicetest.Configure(func(srv *engine.Server) {
		srv.Limits, srv.ServerHeader = lim, "sluice-test"
	})}
	if ca == nil {
		s := sluicetest.NewServer(t, h, opts...)
		return s.Engine, s.Addr
	}
	s := sluicetest.NewTLSServer(t, h, append(opts, sluicetest.CertificateFrom(ca))...)
	return s.Engine, s.Addr
}

// h2Client is Go's HTTP/2 client for a server of h2Server: over TLS
// trusting ca, or with ca nil over cleartext (prior knowledge).
func h2Client(t testing.TB, ca *sluicetest.CA) *http.Client {
	tr := &http2.Transport{}
	if ca != nil {
		tr.TLSClientConfig = ca.ClientConfig("127.0.0.1")
	} else {
		tr.AllowHTTP = true
		tr.DialTLSContext = func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// h2Describe answers with what the handler saw of the request.
var h2Describe = engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
	alpn := "-"
	if r.TLS != nil {
		alpn = r.TLS.NegotiatedProtocol
	}
	body, _ := io.ReadAll(r.Body)
	fmt.Fprintf(w, "%s %s %s alpn=%s host=%s body=%q", r.Proto(), r.Method, r.Target, alpn, r.Host, body)
	for _, f := range r.Trailer {
		fmt.Fprintf(w, " trailer %s=%s", f.Name, f.Value)
	}
})

// A client offering "h2" by ALPN gets HTTP/2, one offering only
// "http/1.1" gets HTTP/1.1, from the same listener and handler; an h2c
// listener serves HTTP/2 with prior knowledge and HTTP/1.1 alike.
func TestHTTP2Negotiation(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, h2Describe, engine.Limits{})
	resp, body := h2Get(t, h2Client(t, ca), "https://"+addr+"/a?b=1")
	if resp.ProtoMajor != 2 || body != `HTTP/2.0 GET /a?b=1 alpn=h2 host=`+addr+` body=""` {
		t.Errorf("h2: %s %q", resp.Proto, body)
	}
	if got := resp.Header.Get("Server"); got != "sluice-test" {
		t.Errorf("Server field %q", got)
	}

	cfg := ca.ClientConfig("127.0.0.1")
	cfg.NextProtos = []string{"http/1.1"}
	h1 := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	defer h1.CloseIdleConnections()
	resp, body = h2Get(t, h1, "https://"+addr+"/a")
	if resp.ProtoMajor != 1 || !strings.HasPrefix(body, "HTTP/1.1 GET /a alpn=http/1.1 ") {
		t.Errorf("http/1.1 only: %s %q", resp.Proto, body)
	}

	_, caddr := h2Server(t, nil, h2Describe, engine.Limits{})
	resp, body = h2Get(t, h2Client(t, nil), "http://"+caddr+"/c")
	if resp.ProtoMajor != 2 || !strings.HasPrefix(body, "HTTP/2.0 GET /c alpn=- ") {
		t.Errorf("h2c: %s %q", resp.Proto, body)
	}
	resp, body = h2Get(t, http.DefaultClient, "http://"+caddr+"/d")
	if resp.ProtoMajor != 1 || !strings.HasPrefix(body, "HTTP/1.1 GET /d ") {
		t.Errorf("http/1.1 on the h2c listener: %s %q", resp.Proto, body)
	}
}

// Without H2C, a plain listener answers the HTTP/2 preface as an
// HTTP/1.x request of an unsupported version.
func TestHTTP2PrefaceWithoutH2C(t *testing.T) {
	s := sluicetest.NewServer(t, h2Describe)
	c, err := s.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, http2.ClientPreface)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 505 {
		t.Errorf("status %d, want 505", resp.StatusCode)
	}
}

func h2Get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// h2Conn is a raw HTTP/2 client connection over TLS: the preface and an
// empty SETTINGS frame are sent.
type h2Conn struct {
	t  *testing.T
	c  net.Conn
	fr *http2.Framer
}

func dialH2(t *testing.T, ca *sluicetest.CA, addr string) *h2Conn {
	t.Helper()
	cfg := ca.ClientConfig("127.0.0.1")
	cfg.NextProtos = []string{"h2"}
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("ALPN chose %q", p)
	}
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return &h2Conn{t: t, c: c, fr: fr}
}

// headerBlock encodes a GET of path.
func headerBlock(path string, extra ...hpack.HeaderField) []byte {
	return requestBlock("GET", path, extra...)
}

// requestBlock encodes a request of method for path.
func requestBlock(method, path string, extra ...hpack.HeaderField) []byte {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range append([]hpack.HeaderField{
		{Name: ":method", Value: method}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: "x"}, {Name: ":path", Value: path},
	}, extra...) {
		enc.WriteField(f)
	}
	return buf.Bytes()
}

func (h *h2Conn) get(id uint32, path string) {
	h.t.Helper()
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: headerBlock(path), EndStream: true, EndHeaders: true}); err != nil {
		h.t.Fatal(err)
	}
}

// readUntil reads frames, answering the server's SETTINGS, until f
// returns true for one; it fails the test if the connection ends or
// stays silent for 10s first.
func (h *h2Conn) readUntil(what string, f func(http2.Frame) bool) {
	h.t.Helper()
	for {
		h.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		fr, err := h.fr.ReadFrame()
		if err != nil {
			h.t.Fatalf("waiting for %s: %v", what, err)
		}
		if s, ok := fr.(*http2.SettingsFrame); ok && !s.IsAck() {
			h.fr.WriteSettingsAck()
		}
		if f(fr) {
			return
		}
	}
}

// closedAfter reads (and drops) frames until the connection ends, and
// returns the GOAWAY it saw, if any; it fails the test if the connection
// stays silent for 10s.
func (h *h2Conn) closedAfter() *http2.GoAwayFrame {
	h.t.Helper()
	var ga *http2.GoAwayFrame
	for {
		h.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		fr, err := h.fr.ReadFrame()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout") {
				h.t.Fatalf("connection still open: %v", err)
			}
			return ga
		}
		if g, ok := fr.(*http2.GoAwayFrame); ok {
			ga = &http2.GoAwayFrame{FrameHeader: g.FrameHeader, LastStreamID: g.LastStreamID, ErrCode: g.ErrCode}
		}
	}
}

// Shutdown (and Drain, as a worker being replaced does) with a stream in
// flight sends GOAWAY naming it as the last stream served, lets it
// finish, and closes the connection; a stream the client opens after the
// GOAWAY is not served.
func TestHTTP2GracefulShutdown(t *testing.T) {
	for _, name := range []string{"Shutdown", "Drain"} {
		t.Run(name, func(t *testing.T) { testHTTP2GracefulEnd(t, name) })
	}
}

func testHTTP2GracefulEnd(t *testing.T, how string) {
	srv, h, release, served := slowH2(t)
	shut := make(chan error, 1)
	go func() {
		if how == "Drain" {
			shut <- srv.Drain(context.Background())
		} else {
			shut <- srv.Shutdown(context.Background())
		}
	}()
	finishAfterGoAway(t, h, release)
	if err := <-shut; err != nil {
		t.Errorf("%s: %v", how, err)
	}
	if n := served.Load(); n != 1 {
		t.Errorf("%d streams served, want 1", n)
	}
}

// GoAway (a reload) ends HTTP/2 connections gracefully while the server
// serves on: the client's next request goes on a new connection.
func TestHTTP2GoAway(t *testing.T) {
	ca := sluicetest.NewCA(t)
	srv, addr := h2Server(t, ca, h2Describe, engine.Limits{})
	h := dialH2(t, ca, addr)
	h.get(1, "/")
	h.readUntil("the response", func(f http2.Frame) bool {
		d, ok := f.(*http2.DataFrame)
		return ok && d.StreamEnded()
	})
	srv.GoAway()
	if g := h.closedAfter(); g == nil || g.ErrCode != http2.ErrCodeNo || g.LastStreamID != 1 {
		t.Errorf("GOAWAY %+v, want NO_ERROR after stream 1", g)
	}
	if _, body := h2Get(t, h2Client(t, ca), "https://"+addr+"/again"); !strings.HasPrefix(body, "HTTP/2.0 GET /again") {
		t.Errorf("after GoAway: %q", body)
	}
}

// An idle HTTP/2 connection is sent GOAWAY and closed after IdleTimeout.
func TestHTTP2IdleTimeout(t *testing.T) {
	ca := sluicetest.NewCA(t)
	srv, addr := h2Server(t, ca, h2Describe, engine.Limits{IdleTimeout: 200 * time.Millisecond})
	h := dialH2(t, ca, addr)
	if g := h.closedAfter(); g == nil || g.ErrCode != http2.ErrCodeNo {
		t.Errorf("GOAWAY %+v, want NO_ERROR", g)
	}
	sluicetest.WaitFor(t, "the connection closed", func() bool { return srv.OpenConns() == 0 })
}

// BenchmarkHTTP2 measures small GETs over one HTTP/2 connection (Go's
// client and the server in this process): cleartext (h2c), and TLS. For the server's own CPU per request against nginx, use h2load
// (docs/benchmarks/).
func BenchmarkHTTP2(b *testing.B) {
	hello := engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteString("Hello, world!\n")
	})
	for _, name := range []string{"h2c", "tls"} {
		b.Run(name, func(b *testing.B) {
			newServer := sluicetest.NewServer
			if name == "tls" {
				newServer = sluicetest.NewTLSServer
			}
			s := newServer(b, hello, sluicetest.HTTP2())
			client := h2Client(b, s.CA)
			url := s.URL + "/"
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Get(url)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		})
	}
}

// slowH2 starts a server whose handlers answer "done " and the path,
// that of /slow once release closes, and a connection whose stream 1
// (/slow) the handler holds; served counts the streams served.
func slowH2(t *testing.T) (srv *engine.Server, h *h2Conn, release chan struct{}, served *atomic.Int32) {
	t.Helper()
	ca := sluicetest.NewCA(t)
	started, release := make(chan struct{}), make(chan struct{})
	served = new(atomic.Int32)
	srv, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		served.Add(1)
		if string(r.Path) == "/slow" {
			close(started)
			<-release
		}
		w.WriteString("done " + string(r.Path))
	}), engine.Limits{})
	h = dialH2(t, ca, addr)
	h.get(1, "/slow")
	<-started
	return srv, h, release, served
}

// finishAfterGoAway is the end of a graceful close that stream 1 (a GET
// of /slow, held by its handler until release closes) outlives: the
// server's GOAWAY names stream 1 as the last it serves; stream 3, opened
// after it, is not served; once released, stream 1 is answered "done
// /slow" in full; then the connection closes.
func finishAfterGoAway(t *testing.T, h *h2Conn, release chan struct{}) {
	t.Helper()
	h.readUntil("GOAWAY", func(f http2.Frame) bool {
		g, ok := f.(*http2.GoAwayFrame)
		if ok && (g.LastStreamID != 1 || g.ErrCode != http2.ErrCodeNo) {
			t.Errorf("GOAWAY last stream %d, code %v; want 1, NO_ERROR", g.LastStreamID, g.ErrCode)
		}
		return ok
	})
	h.get(3, "/late")
	close(release)
	var body []byte
	h.readUntil("the end of stream 1", func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok && d.StreamID == 1 {
			body = append(body, d.Data()...)
			return d.StreamEnded()
		}
		return false
	})
	if string(body) != "done /slow" {
		t.Errorf("stream 1: %q", body)
	}
	h.closedAfter()
}
