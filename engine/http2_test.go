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

// h2Server serves h on a loopback port: over TLS offering "h2" and
// "http/1.1" by ALPN with a certificate for 127.0.0.1 from ca, or, with
// ca nil, in cleartext with H2C. It is shut down when the test ends.
func h2Server(t *testing.T, ca *sluicetest.CA, h engine.Handler, lim engine.Limits) (*engine.Server, string) {
	t.Helper()
	ln, err := engine.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &engine.Server{Handler: h, Limits: lim, ServerHeader: "sluice-test"}
	o := engine.ListenerOptions{H2C: true}
	if ca != nil {
		o = engine.ListenerOptions{TLS: &tls.Config{
			Certificates: []tls.Certificate{ca.Issue(t, "127.0.0.1")},
			NextProtos:   []string{"h2", "http/1.1"},
		}}
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeWith(ln, o) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; !errors.Is(err, engine.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv, ln.Addr().String()
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

// A request body and its trailer reach the handler of an HTTP/2 stream.
func TestHTTP2BodyAndTrailer(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, h2Describe, engine.Limits{})
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", "https://"+addr+"/p", pr)
	req.Trailer = http.Header{"X-Sum": nil}
	go func() {
		io.WriteString(pw, "hello")
		req.Trailer.Set("X-Sum", "42")
		pw.Close()
	}()
	resp, err := h2Client(t, ca).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if want := `body="hello" trailer X-Sum=42`; !strings.HasSuffix(string(b), want) {
		t.Errorf("got %q, want it to end %q", b, want)
	}
}

// A handler's flush sends what it wrote on the stream at once: the
// client reads the first part before the handler writes the second.
func TestHTTP2Flush(t *testing.T) {
	ca := sluicetest.NewCA(t)
	next := make(chan struct{})
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.WriteString("first\n")
		w.Flush()
		<-next
		w.WriteString("second\n")
	}), engine.Limits{})
	resp, err := h2Client(t, ca).Get("https://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	close(next)
	rest, _ := io.ReadAll(br)
	if string(rest) != "second\n" {
		t.Errorf("rest %q", rest)
	}
}

// The engine's limits apply to HTTP/2 streams: methods, target length,
// field count and body size.
func TestHTTP2Limits(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, h2Describe, engine.Limits{MaxTargetBytes: 64, MaxHeaderCount: 10, MaxBodyBytes: 10})
	c := h2Client(t, ca)
	do := func(method, path, body string, fields int) int {
		req, _ := http.NewRequest(method, "https://"+addr+path, strings.NewReader(body))
		if body == "" {
			req.Body = nil
		}
		for i := range fields {
			req.Header.Set(fmt.Sprintf("X-F%d", i), "v")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tt := range []struct {
		method, path, body string
		fields, want       int
	}{
		{"GET", "/ok", "", 0, 200},
		{"BREW", "/", "", 0, 501},
		{"GET", "/" + strings.Repeat("a", 100), "", 0, 414},
		{"GET", "/", "", 20, 431},
		{"POST", "/", strings.Repeat("b", 11), 0, 413},
	} {
		if got := do(tt.method, tt.path, tt.body, tt.fields); got != tt.want {
			t.Errorf("%s %.20s with %d fields and a %d-byte body: %d, want %d", tt.method, tt.path, tt.fields, len(tt.body), got, tt.want)
		}
	}
}

// A handler panic on a stream is a 500 there, counted, and the
// connection goes on serving.
func TestHTTP2Panic(t *testing.T) {
	ca := sluicetest.NewCA(t)
	srv, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		if string(r.Path) == "/panic" {
			panic("boom")
		}
		w.WriteString("ok")
	}), engine.Limits{})
	c := h2Client(t, ca)
	if resp, _ := h2Get(t, c, "https://"+addr+"/panic"); resp.StatusCode != 500 {
		t.Errorf("status %d, want 500", resp.StatusCode)
	}
	if _, body := h2Get(t, c, "https://"+addr+"/"); body != "ok" {
		t.Errorf("after the panic: %q", body)
	}
	if n := srv.Stats().Panics; n != 1 {
		t.Errorf("%d panics counted, want 1", n)
	}
}

// A client that cancels a stream (RST_STREAM) releases its handler: the
// handler's Gone channel closes, and the connection serves on.
func TestHTTP2CancelReleasesHandler(t *testing.T) {
	ca := sluicetest.NewCA(t)
	started, gone := make(chan struct{}), make(chan struct{})
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		if string(r.Path) != "/wait" {
			w.WriteString("ok")
			return
		}
		w.WriteString("started")
		w.Flush()
		close(started)
		<-w.(engine.GoneNotifier).Gone()
		close(gone)
	}), engine.Limits{})
	c := h2Client(t, ca)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", "https://"+addr+"/wait", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	resp.Body.Close()
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not told its client went")
	}
	if _, body := h2Get(t, c, "https://"+addr+"/"); body != "ok" {
		t.Errorf("after the reset: %q", body)
	}
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
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range append([]hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "https"},
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
	ca := sluicetest.NewCA(t)
	started, release := make(chan struct{}), make(chan struct{})
	var served atomic.Int32
	srv, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		served.Add(1)
		if string(r.Path) == "/slow" {
			close(started)
			<-release
		}
		w.WriteString("done " + string(r.Path))
	}), engine.Limits{})
	h := dialH2(t, ca, addr)
	h.get(1, "/slow")
	<-started
	shut := make(chan error, 1)
	go func() {
		if how == "Drain" {
			shut <- srv.Drain(context.Background())
		} else {
			shut <- srv.Shutdown(context.Background())
		}
	}()
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

// Rapid reset (CVE-2023-44487): a client that opens streams and resets
// them at once cannot make the server run more handlers at a time than
// MaxStreams: the streams it resets keep their handlers counted until
// they return, further streams wait, and a client that piles up more
// than four times MaxStreams of them is sent GOAWAY ENHANCE_YOUR_CALM.
func TestHTTP2RapidReset(t *testing.T) {
	ca := sluicetest.NewCA(t)
	release := make(chan struct{})
	var running, most, served atomic.Int32
	srv, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		n := running.Add(1)
		defer running.Add(-1)
		served.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release // a slow handler that does not watch Gone
	}), engine.Limits{MaxStreams: 10})
	defer close(release)
	h := dialH2(t, ca, addr)
	bw := bufio.NewWriter(h.c)
	fr := http2.NewFramer(bw, h.c)
	go func() {
		for id := uint32(1); id < 20000; id += 2 {
			if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: headerBlock("/"), EndStream: true, EndHeaders: true}) != nil ||
				fr.WriteRSTStream(id, http2.ErrCodeCancel) != nil {
				return
			}
		}
		bw.Flush()
	}()
	g := h.closedAfter()
	if g == nil || g.ErrCode != http2.ErrCodeEnhanceYourCalm {
		t.Errorf("GOAWAY %+v, want ENHANCE_YOUR_CALM", g)
	}
	if n := most.Load(); n > 10 {
		t.Errorf("%d handlers ran at once, over MaxStreams 10", n)
	}
	if n := served.Load(); n > 10 {
		t.Errorf("%d streams reached the handler; want at most 10", n)
	}
	_ = srv
}

// A header block that grows past MaxHeaderBytes over CONTINUATION frames
// (CVE-2024-27316) ends the connection with GOAWAY PROTOCOL_ERROR as
// soon as it is over the limit, however many frames the client still
// sends: the server does not buffer them.
func TestHTTP2ContinuationFlood(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, h2Describe, engine.Limits{MaxHeaderBytes: 8 << 10})
	h := dialH2(t, ca, addr)
	big := strings.Repeat("v", 1000)
	var sent atomic.Int64
	go func() {
		var buf bytes.Buffer
		enc := hpack.NewEncoder(&buf)
		h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: headerBlock("/")})
		for i := range 100000 { // 100 MB if nothing stopped it
			buf.Reset()
			enc.WriteField(hpack.HeaderField{Name: fmt.Sprintf("x-%d", i), Value: big, Sensitive: true})
			if h.fr.WriteContinuation(1, false, buf.Bytes()) != nil {
				return
			}
			sent.Add(int64(buf.Len()))
		}
	}()
	if g := h.closedAfter(); g == nil || g.ErrCode != http2.ErrCodeProtocol {
		t.Errorf("GOAWAY %+v, want PROTOCOL_ERROR", g)
	}
	if n := sent.Load(); n >= 100000*1000 {
		t.Errorf("the client sent all %d bytes of CONTINUATION", n)
	}
}

// A flood of empty CONTINUATION frames, which never grows the header
// block, does not hold the connection past IdleTimeout: no stream is
// open, so the connection is idle, and is sent GOAWAY and closed.
func TestHTTP2EmptyContinuationFlood(t *testing.T) {
	ca := sluicetest.NewCA(t)
	srv, addr := h2Server(t, ca, h2Describe, engine.Limits{IdleTimeout: 300 * time.Millisecond})
	h := dialH2(t, ca, addr)
	go func() {
		h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: headerBlock("/")})
		for h.fr.WriteContinuation(1, false, nil) == nil {
		}
	}()
	h.closedAfter()
	sluicetest.WaitFor(t, "the connection closed", func() bool { return srv.OpenConns() == 0 })
}

// An HPACK bomb, a small header block that decodes to far more than
// MaxHeaderBytes by repeating a reference to a large dynamic-table
// entry, is refused with 431 on its stream without decoding it whole;
// the connection serves on.
func TestHTTP2HPACKBomb(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, h2Describe, engine.Limits{MaxHeaderBytes: 16 << 10})
	h := dialH2(t, ca, addr)
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: "x"}, {Name: ":path", Value: "/"},
		{Name: "x-bomb", Value: strings.Repeat("b", 3000)}, // into the dynamic table, as entry 62
	} {
		enc.WriteField(f)
	}
	block := append(buf.Bytes(), bytes.Repeat([]byte{0x80 | 62}, 4000)...) // 4,000 references: 12 MB decoded
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block, EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	h.get(3, "/after")
	status := map[uint32]string{}
	h.readUntil("both responses", func(f http2.Frame) bool {
		if m, ok := f.(*http2.MetaHeadersFrame); ok {
			status[m.StreamID] = m.PseudoValue("status")
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			t.Fatalf("GOAWAY %v", g.ErrCode)
		}
		return len(status) == 2
	})
	if status[1] != "431" || status[3] != "200" {
		t.Errorf("statuses %v, want 431 for the bomb and 200 after it", status)
	}
}

// A PING flood: a client that sends PINGs without reading the
// acknowledgements is disconnected once 10,000 of them are queued,
// rather than the server buffering them without bound.
func TestHTTP2PingFlood(t *testing.T) {
	ca := sluicetest.NewCA(t)
	srv, addr := h2Server(t, ca, h2Describe, engine.Limits{})
	h := dialH2(t, ca, addr)
	bw := bufio.NewWriterSize(h.c, 64<<10)
	fr := http2.NewFramer(bw, h.c)
	n := 0
	for ; n < 2000000 && fr.WritePing(false, [8]byte{1}) == nil; n++ { // 34 MB at most
	}
	bw.Flush()
	sluicetest.WaitFor(t, "the connection closed", func() bool { return srv.OpenConns() == 0 })
}

// A SETTINGS flood costs the server no memory: the acknowledgements of
// frames that arrive before the server could answer are one (x/net keeps
// a flag, not a queue), and the connection serves on.
func TestHTTP2SettingsFlood(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, h2Describe, engine.Limits{})
	h := dialH2(t, ca, addr)
	bw := bufio.NewWriterSize(h.c, 64<<10)
	fr := http2.NewFramer(bw, h.c)
	const sent = 100000
	for range sent {
		if err := fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 0}); err != nil {
			t.Fatal(err)
		}
	}
	bw.Flush()
	h.get(1, "/")
	acks := 0
	h.readUntil("the response", func(f http2.Frame) bool {
		if s, ok := f.(*http2.SettingsFrame); ok && s.IsAck() {
			acks++
		}
		d, ok := f.(*http2.DataFrame)
		return ok && d.StreamEnded()
	})
	t.Logf("%d SETTINGS frames, %d acknowledgements", sent, acks)
	if acks >= sent/2 {
		t.Errorf("%d acknowledgements for %d SETTINGS frames: queued one by one", acks, sent)
	}
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
			var ca *sluicetest.CA
			scheme := "http"
			if name == "tls" {
				ca, scheme = sluicetest.NewCA(b), "https"
			}
			ln, err := engine.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := &engine.Server{Handler: hello}
			o := engine.ListenerOptions{H2C: ca == nil}
			if ca != nil {
				o.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Issue(b, "127.0.0.1")}, NextProtos: []string{"h2"}}
			}
			go srv.ServeWith(ln, o)
			defer srv.Close()
			client := h2Client(b, ca)
			url := scheme + "://" + ln.Addr().String() + "/"
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

// A handler's connection-specific fields (from a CGI program or a
// proxied response, say) are not sent on HTTP/2, where a client must
// treat them as malformed; "Connection: close" does not end the
// connection, which other streams share.
func TestHTTP2ConnectionFields(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		h := w.Header()
		h.Set("Connection", "close")
		h.Set("Keep-Alive", "timeout=5")
		h.Set("Proxy-Connection", "keep-alive")
		h.Set("Upgrade", "h2c")
		h.Set("X-End", "1")
		w.WriteString("ok")
	}), engine.Limits{})
	h := dialH2(t, ca, addr)
	for _, id := range []uint32{1, 3} {
		h.get(id, "/")
		h.readUntil("the response", func(f http2.Frame) bool {
			switch f := f.(type) {
			case *http2.GoAwayFrame:
				t.Fatalf("GOAWAY %v", f.ErrCode)
			case *http2.MetaHeadersFrame:
				var names []string
				for _, hf := range f.RegularFields() {
					names = append(names, hf.Name)
				}
				if got := strings.Join(names, " "); strings.Contains(got, "connection") || strings.Contains(got, "keep-alive") || strings.Contains(got, "upgrade") || !strings.Contains(got, "x-end") {
					t.Errorf("stream %d: fields %s", id, got)
				}
			case *http2.DataFrame:
				return f.StreamEnded()
			}
			return false
		})
	}
}

// The server does not announce extended CONNECT (RFC 8441), so a
// browser opens WebSockets (any Upgrade) over HTTP/1.1, where the proxy
// tunnels them, rather than as HTTP/2 streams no component serves.
func TestHTTP2NoExtendedConnect(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, h2Describe, engine.Limits{MaxStreams: 7})
	h := dialH2(t, ca, addr)
	h.readUntil("the server's SETTINGS", func(f http2.Frame) bool {
		s, ok := f.(*http2.SettingsFrame)
		if !ok || s.IsAck() {
			return false
		}
		if v, ok := s.Value(http2.SettingEnableConnectProtocol); ok && v != 0 {
			t.Errorf("SETTINGS_ENABLE_CONNECT_PROTOCOL = %d", v)
		}
		if v, _ := s.Value(http2.SettingMaxConcurrentStreams); v != 7 {
			t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS = %d, want MaxStreams 7", v)
		}
		if v, _ := s.Value(http2.SettingMaxHeaderListSize); v != engine.DefaultMaxHeaderBytes+320 {
			t.Errorf("SETTINGS_MAX_HEADER_LIST_SIZE = %d, want MaxHeaderBytes + 320", v)
		}
		return true
	})
}
