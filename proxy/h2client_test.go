package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// scriptConn is the upstream's end of a connection in a scripted test:
// raw frames, read and written by the script.
type scriptConn struct {
	t   testing.TB
	nc  net.Conn
	fr  *http2.Framer
	enc *hpack.Encoder
	buf bytes.Buffer
}

// scripted starts an upstream that runs script on its one connection,
// and returns a client connection to it (response heads bounded by
// maxHead bytes).
func scripted(t testing.TB, maxHead int, script func(sc *scriptConn)) *h2ClientConn {
	t.Helper()
	cc, err := scriptedErr(t, maxHead, script)
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// scriptedErr is scripted, returning the error of the client's start.
func scriptedErr(t testing.TB, maxHead int, script func(sc *scriptConn)) (*h2ClientConn, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { ln.Close() })
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		if sc := newScriptConn(t, nc); sc != nil {
			script(sc)
		}
	}()
	t.Cleanup(func() { <-done })
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return nil, err
	}
	cc, err := newH2ClientConn(nc, maxHead, DefaultMaxHeaderCount, 0, time.Now().Add(10*time.Second))
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { cc.Close() })
	return cc, nil
}

// newScriptConn reads the client's preface on nc, the upstream's end of
// a new connection, and returns the script's view of it; nil (the test
// failed) when the preface is wrong.
func newScriptConn(t testing.TB, nc net.Conn) *scriptConn {
	sc := &scriptConn{t: t, nc: nc, fr: http2.NewFramer(nc, nc)}
	sc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	sc.enc = hpack.NewEncoder(&sc.buf)
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(nc, preface); err != nil || string(preface) != http2.ClientPreface {
		t.Errorf("preface %q, %v", preface, err)
		return nil
	}
	return sc
}

// scriptServer starts an upstream that runs script on every connection
// it accepts (n counts them from 0), for a Proxy to dial, and returns
// its URL.
func scriptServer(t testing.TB, script func(n int, sc *scriptConn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	sluicetest.ServeConns(t, ln, func(nc net.Conn) {
		n := int(conns.Add(1)) - 1
		if sc := newScriptConn(t, nc); sc != nil {
			script(n, sc)
		}
	})
	return "http://" + ln.Addr().String()
}

// settings sends the upstream's SETTINGS.
func (sc *scriptConn) settings(s ...http2.Setting) {
	if err := sc.fr.WriteSettings(s...); err != nil {
		sc.t.Error(err)
	}
}

// next reads the client's next frame that is not SETTINGS, its ACK or a
// connection WINDOW_UPDATE; nil when the connection ended.
func (sc *scriptConn) next() http2.Frame {
	for {
		f, err := sc.fr.ReadFrame()
		if err != nil {
			return nil
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				sc.fr.WriteSettingsAck()
			}
			continue
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				continue
			}
		}
		return f
	}
}

// headers reads the client's next frame, which must be a request head.
func (sc *scriptConn) headers() *http2.MetaHeadersFrame {
	f := sc.next()
	h, ok := f.(*http2.MetaHeadersFrame)
	if !ok {
		sc.t.Errorf("got %v, want a request head", f)
		return &http2.MetaHeadersFrame{HeadersFrame: &http2.HeadersFrame{}}
	}
	return h
}

// respond writes a head of fields (name, value pairs) on stream id.
func (sc *scriptConn) respond(id uint32, end bool, fields ...string) {
	sc.buf.Reset()
	for i := 0; i < len(fields); i += 2 {
		sc.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	sc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: sc.buf.Bytes(), EndHeaders: true, EndStream: end})
}

// get sends a GET on cc and returns its response body read whole, and
// the error of the round trip or of the body.
func get(cc *h2ClientConn, ctx context.Context) (*http.Response, string, error) {
	resp, err := cc.roundTrip(ctx, &h2Request{method: "GET", scheme: "http", authority: "up", path: "/"})
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// The client against an upstream scripted frame by frame: what it must
// accept, and what it must refuse, with which error, and whether the
// connection lives on.
func TestH2ClientScripted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script func(sc *scriptConn)
		want   string // the body, or the error's text
		check  func(t *testing.T, resp *http.Response, err error)
		alive  bool // the connection takes new streams after
	}{
		{name: "response with trailers", alive: true, want: "hi", script: func(sc *scriptConn) {
			sc.settings()
			h := sc.headers()
			sc.respond(h.StreamID, false, ":status", "200", "content-type", "application/grpc")
			sc.fr.WriteData(h.StreamID, false, []byte("hi"))
			sc.respond(h.StreamID, true, "grpc-status", "0")
			sc.next()
		}, check: func(t *testing.T, resp *http.Response, err error) {
			if err != nil || resp.Trailer.Get("Grpc-Status") != "0" || resp.ContentLength != -1 {
				t.Fatalf("trailer %v, length %d, %v", resp.Trailer, resp.ContentLength, err)
			}
		}},
		{name: "interim head then the final", alive: true, want: "", script: func(sc *scriptConn) {
			sc.settings()
			h := sc.headers()
			sc.respond(h.StreamID, false, ":status", "103", "link", "</a>")
			sc.respond(h.StreamID, true, ":status", "204")
			sc.next()
		}},
		{name: "RST_STREAM from the upstream", alive: true, want: "reset the stream: INTERNAL_ERROR", script: func(sc *scriptConn) {
			sc.settings()
			h := sc.headers()
			sc.fr.WriteRSTStream(h.StreamID, http2.ErrCodeInternal)
			sc.next()
		}, check: func(t *testing.T, _ *http.Response, err error) {
			if refusedStream(err) {
				t.Fatal("a reset stream taken as unprocessed")
			}
		}},
		{name: "REFUSED_STREAM", alive: true, want: "did not process", script: func(sc *scriptConn) {
			sc.settings()
			h := sc.headers()
			sc.fr.WriteRSTStream(h.StreamID, http2.ErrCodeRefusedStream)
			sc.next()
		}, check: func(t *testing.T, _ *http.Response, err error) {
			if !refusedStream(err) {
				t.Fatal("not taken as unprocessed")
			}
		}},
		{name: "reset part way through the body", alive: true, want: "reset the stream: CANCEL", script: func(sc *scriptConn) {
			sc.settings()
			h := sc.headers()
			sc.respond(h.StreamID, false, ":status", "200")
			sc.fr.WriteData(h.StreamID, false, []byte("part"))
			sc.fr.WriteRSTStream(h.StreamID, http2.ErrCodeCancel)
			sc.next()
		}},
		{name: "response head too large", alive: true, want: "too large", script: func(sc *scriptConn) {
			sc.settings()
			h := sc.headers()
			sc.respond(h.StreamID, true, ":status", "200", "x-big", strings.Repeat("a", 2000))
			if f, ok := sc.next().(*http2.RSTStreamFrame); !ok || f.StreamID != h.StreamID {
				t.Errorf("got %v, want the stream reset", f)
			}
			sc.next()
		}},
		{name: "no :status", alive: true, want: "malformed", script: func(sc *scriptConn) {
			sc.settings()
			h := sc.headers()
			sc.respond(h.StreamID, true, "content-type", "text/plain")
			sc.next()
			sc.next()
		}},
		{name: "Content-Length disagrees with the DATA", alive: true, want: "malformed", script: func(sc *scriptConn) {
			sc.settings()
			h := sc.headers()
			sc.respond(h.StreamID, false, ":status", "200", "content-length", "3")
			sc.fr.WriteData(h.StreamID, true, []byte("toolong"))
			sc.next()
			sc.next()
		}},
		{name: "DATA on stream 0", want: "closed", script: func(sc *scriptConn) {
			sc.settings()
			h := sc.headers()
			sc.respond(h.StreamID, false, ":status", "200")
			sc.nc.Write([]byte{0, 0, 1, byte(http2.FrameData), 0, 0, 0, 0, 0, 'x'})
			wantGoAway(t, sc, http2.ErrCodeProtocol)
		}},
		{name: "DATA on a stream never opened", want: "closed", script: func(sc *scriptConn) {
			sc.settings()
			h := sc.headers()
			sc.respond(h.StreamID, false, ":status", "200")
			sc.fr.WriteData(h.StreamID+100, false, []byte("x"))
			wantGoAway(t, sc, http2.ErrCodeProtocol)
		}},
		{name: "a frame past SETTINGS_MAX_FRAME_SIZE", want: "closed", script: func(sc *scriptConn) {
			sc.settings()
			h := sc.headers()
			sc.respond(h.StreamID, false, ":status", "200")
			sc.fr.WriteData(h.StreamID, false, make([]byte, h2MaxFrame+1))
			wantGoAway(t, sc, http2.ErrCodeFrameSize)
		}},
		{name: "HPACK garbage", want: "closed", script: func(sc *scriptConn) {
			sc.settings()
			h := sc.headers()
			sc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: h.StreamID, BlockFragment: []byte{0xff, 0xff, 0xff, 0xff}, EndHeaders: true})
			wantGoAway(t, sc, http2.ErrCodeCompression)
		}},
		{name: "PUSH_PROMISE while push is off", want: "closed", script: func(sc *scriptConn) {
			sc.settings()
			h := sc.headers()
			sc.buf.Reset()
			sc.enc.WriteField(hpack.HeaderField{Name: ":method", Value: "GET"})
			sc.fr.WritePushPromise(http2.PushPromiseParam{StreamID: h.StreamID, PromiseID: 2, BlockFragment: sc.buf.Bytes(), EndHeaders: true})
			wantGoAway(t, sc, http2.ErrCodeProtocol)
		}},
		{name: "the upstream closes the connection", want: "closed", script: func(sc *scriptConn) {
			sc.settings()
			sc.headers()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := scripted(t, 1024, tc.script)
			resp, body, err := get(cc, context.Background())
			got := body
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.want) || err == nil && tc.want == "closed" {
				t.Fatalf("got %.100q, %v; want %q", body, err, tc.want)
			}
			if tc.check != nil {
				tc.check(t, resp, err)
			}
			if tc.alive != (cc.limit() > 0) {
				t.Fatalf("connection takes streams: %v, want %v (%v)", cc.limit() > 0, tc.alive, cc.Err())
			}
		})
	}
}

// wantGoAway reads the client's frames until its GOAWAY, which must carry
// code.
func wantGoAway(t *testing.T, sc *scriptConn, code http2.ErrCode) {
	for {
		f := sc.next()
		if f == nil {
			t.Errorf("the connection closed without GOAWAY %v", code)
			return
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			if g.ErrCode != code {
				t.Errorf("GOAWAY %v, want %v", g.ErrCode, code)
			}
			return
		}
	}
}

// DATA past the stream's receive window (its reader not reading, so that
// none was credited) resets the stream with FLOW_CONTROL_ERROR; what
// came within the window is read, then the error.
func TestH2ClientReceiveWindow(t *testing.T) {
	reset := make(chan http2.ErrCode, 1)
	cc := scripted(t, 1024, func(sc *scriptConn) {
		sc.settings()
		h := sc.headers()
		sc.respond(h.StreamID, false, ":status", "200")
		chunk := make([]byte, h2MaxFrame)
		for range h2StreamWindow / h2MaxFrame {
			sc.fr.WriteData(h.StreamID, false, chunk)
		}
		sc.fr.WriteData(h.StreamID, false, []byte("x"))
		for {
			f := sc.next()
			if f == nil {
				break
			}
			if r, ok := f.(*http2.RSTStreamFrame); ok {
				reset <- r.ErrCode
				break
			}
		}
		close(reset)
		sc.next()
	})
	resp, err := cc.roundTrip(context.Background(), &h2Request{method: "GET", scheme: "http", authority: "up", path: "/"})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if code := <-reset; code != http2.ErrCodeFlowControl {
		t.Fatalf("reset with %v, want FLOW_CONTROL_ERROR", code)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if n != h2StreamWindow || err == nil || !strings.Contains(err.Error(), "window") {
		t.Fatalf("read %d bytes, then %v; want the window's %d, then the error", n, err, h2StreamWindow)
	}
	if cc.limit() == 0 {
		t.Fatal("the connection failed with the stream")
	}
}

// A GOAWAY in the middle of streams: those at or below its last stream
// id finish, those above fail as not processed (to be sent again), and
// the connection takes no new stream.
func TestH2ClientGoAway(t *testing.T) {
	cc := scripted(t, 1024, func(sc *scriptConn) {
		sc.settings()
		a, b, c := sc.headers(), sc.headers(), sc.headers()
		sc.fr.WriteGoAway(b.StreamID, http2.ErrCodeNo, nil)
		sc.respond(a.StreamID, true, ":status", "200")
		sc.respond(b.StreamID, true, ":status", "201")
		_ = c
		sc.next()
	})
	type result struct {
		status int
		err    error
	}
	results := make(chan result, 3)
	for range 3 {
		go func() {
			resp, _, err := get(cc, context.Background())
			if err != nil {
				results <- result{0, err}
				return
			}
			results <- result{resp.StatusCode, nil}
		}()
	}
	var ok, refused int
	for range 3 {
		r := <-results
		switch {
		case r.err == nil && (r.status == 200 || r.status == 201):
			ok++
		case refusedStream(r.err):
			refused++
		default:
			t.Errorf("status %d, %v", r.status, r.err)
		}
	}
	if ok != 2 || refused != 1 {
		t.Fatalf("%d answered, %d refused; want 2 and 1", ok, refused)
	}
	if cc.limit() != 0 {
		t.Fatal("the connection takes new streams after GOAWAY")
	}
	if _, _, err := get(cc, context.Background()); !refusedStream(err) {
		t.Fatalf("a new stream got %v, want it refused", err)
	}
}

// A request body larger than the upstream's stream window is sent
// within it: never a byte past what WINDOW_UPDATE allowed, and whole in
// the end, with its trailer fields.
func TestH2ClientWindowExhausted(t *testing.T) {
	const window, size = 100, 1000
	got := make(chan string, 1)
	cc := scripted(t, 1024, func(sc *scriptConn) {
		sc.settings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window})
		h := sc.headers()
		var body []byte
		avail := window
		for {
			f := sc.next()
			switch f := f.(type) {
			case *http2.DataFrame:
				if len(f.Data()) > avail {
					t.Errorf("DATA of %d bytes with a window of %d", len(f.Data()), avail)
				}
				avail -= len(f.Data())
				body = append(body, f.Data()...)
				if avail == 0 {
					sc.fr.WriteWindowUpdate(h.StreamID, window)
					sc.fr.WriteWindowUpdate(0, window)
					avail = window
				}
				if f.StreamEnded() {
					t.Error("END_STREAM on DATA, want it on the trailer")
				}
				continue
			case *http2.MetaHeadersFrame:
				got <- string(body) + " " + f.Fields[0].Name + "=" + f.Fields[0].Value
				sc.respond(h.StreamID, true, ":status", "200")
			default:
				t.Errorf("got %v", f)
			}
			break
		}
		sc.next()
	})
	want := strings.Repeat("0123456789", size/10)
	r := &engine.Request{Body: strings.NewReader(want), Trailer: []engine.Field{{Name: []byte("X-Sum"), Value: []byte("s")}}}
	resp, err := cc.roundTrip(context.Background(), &h2Request{method: "POST", scheme: "http", authority: "up", path: "/", body: bodyOf(r)})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if g := <-got; g != want+" x-sum=s" {
		t.Fatalf("the upstream got %q", g)
	}
}

// A call whose context ends resets its upstream stream (CANCEL), and
// the round trip fails with the context's cause.
func TestH2ClientCancel(t *testing.T) {
	reset := make(chan http2.ErrCode, 1)
	cause := errors.New("the client went")
	ctx, cancel := context.WithCancelCause(context.Background())
	cc := scripted(t, 1024, func(sc *scriptConn) {
		sc.settings()
		sc.headers()
		cancel(cause)
		if f, ok := sc.next().(*http2.RSTStreamFrame); ok {
			reset <- f.ErrCode
		}
		close(reset)
		sc.next()
	})
	if _, _, err := get(cc, ctx); err != cause {
		t.Fatalf("got %v, want the context's cause", err)
	}
	if code := <-reset; code != http2.ErrCodeCancel {
		t.Fatalf("reset with %v, want CANCEL", code)
	}
}

// The upstream's SETTINGS_MAX_HEADER_LIST_SIZE: a request head larger
// is not sent as a request (its stream is reset at once), and fails.
func TestH2ClientRequestHeadTooLarge(t *testing.T) {
	cc := scripted(t, 1024, func(sc *scriptConn) {
		sc.settings(http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: 200})
		sc.headers()
		if _, ok := sc.next().(*http2.RSTStreamFrame); !ok {
			t.Error("the stream was not reset")
		}
		sc.next()
	})
	_, err := cc.roundTrip(context.Background(), &h2Request{method: "GET", scheme: "http", authority: "up", path: "/",
		fields: []hpack.HeaderField{{Name: "x-big", Value: strings.Repeat("b", 300)}}})
	if !errors.Is(err, errH2ReqHead) {
		t.Fatalf("got %v, want errH2ReqHead", err)
	}
}

// FuzzH2ClientFrames feeds the client whatever an upstream might send
// after its SETTINGS, with a request in flight: the client must neither
// panic nor hang (the upstream then closes the connection, which ends
// every stream), and reads no response body past its windows.
func FuzzH2ClientFrames(f *testing.F) {
	var enc bytes.Buffer
	e := hpack.NewEncoder(&enc)
	e.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	head := enc.Bytes()
	frame := func(t http2.FrameType, flags http2.Flags, id uint32, p []byte) []byte {
		return append(appendFrameHeader(nil, len(p), t, flags, id), p...)
	}
	f.Add(frame(http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, 1, head))
	f.Add(append(frame(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 1, head), frame(http2.FrameData, http2.FlagDataEndStream, 1, []byte("body"))...))
	f.Add(append(frame(http2.FrameHeaders, 0, 1, head[:1]), frame(http2.FrameContinuation, http2.FlagContinuationEndHeaders, 1, head[1:])...))
	f.Add(frame(http2.FrameGoAway, 0, 0, []byte{0, 0, 0, 0, 0, 0, 0, 0}))
	f.Add(frame(http2.FrameWindowUpdate, 0, 1, []byte{0x7f, 0xff, 0xff, 0xff}))
	f.Add(frame(http2.FrameSettings, 0, 0, []byte{0, 4, 0x80, 0, 0, 0}))
	f.Add(frame(http2.FramePing, 0, 0, make([]byte, 8)))
	f.Add(frame(http2.FrameRSTStream, 0, 1, []byte{0, 0, 0, 7}))
	f.Fuzz(func(t *testing.T, in []byte) {
		cc, err := scriptedErr(t, 4096, func(sc *scriptConn) {
			sc.settings()
			sc.nc.Write(in)
			sc.nc.(*net.TCPConn).CloseWrite() // the end of what it sends
			io.Copy(io.Discard, sc.nc)        // until the client closes
		})
		if err != nil {
			return // the client failed at once: fine
		}
		resp, err := cc.roundTrip(context.Background(), &h2Request{method: "POST", scheme: "http", authority: "up", path: "/"})
		if err != nil {
			return
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n > h2StreamWindow {
			t.Fatalf("read %d bytes, past the stream's window", n)
		}
	})
}

// An h2c upstream that shuts down gracefully (GOAWAY) while POSTs with
// small bodies stream in from an HTTP/2 client loses none of them: a
// body that had all arrived was sent with its head and kept, so a
// stream the upstream did not process is sent again, to the other.
func TestH2GoAwayMidLoadWithBodies(t *testing.T) {
	var served atomic.Int64
	h := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			served.Add(1)
			io.WriteString(w, name+" "+string(b))
		})
	}
	a := httptest.NewUnstartedServer(h("a"))
	a.Config.Protocols = new(http.Protocols)
	a.Config.Protocols.SetUnencryptedHTTP2(true)
	a.Start()
	t.Cleanup(a.Close)
	urlB, _ := h2cUpstream(t, 0, h("b"))
	srv, client := h2Front(t, Options{Upstreams: []string{a.URL, urlB}, Transport: TransportH2C})
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	shut := make(chan struct{})
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				if i == 10 {
					<-shut
				}
				want := strconv.Itoa(g*100 + i)
				resp, err := client.Post(srv.URL+"/", "text/plain", strings.NewReader(want))
				if err != nil {
					errs <- err.Error()
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.HasSuffix(string(body), " "+want) {
					errs <- resp.Status + " " + string(body)
				}
			}
		})
	}
	sluicetest.WaitFor(t, "requests served", func() bool { return served.Load() >= 20 })
	done := make(chan struct{})
	go func() {
		a.Config.Shutdown(context.Background())
		close(done)
	}()
	close(shut)
	wg.Wait()
	<-done
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// bodyArrived is a pipe that waits until the request's body has all
// arrived (an HTTP/2 client's: its END_STREAM came), so that the proxy
// after it finds the body whole and sends it with its head.
func bodyArrived(t *testing.T) pipe.Pipe {
	return func(c *pipe.Conn) bool {
		rb, ok := c.Request.Body.(interface{ Buffered() (int, bool) })
		if !ok {
			t.Errorf("the request body %T does not say what has arrived", c.Request.Body)
			return false
		}
		for deadline := time.Now().Add(sluicetest.WaitTimeout); ; time.Sleep(time.Millisecond) {
			if _, whole := rb.Buffered(); whole {
				return true
			}
			if time.Now().After(deadline) {
				t.Error("timed out waiting for the request body")
				return false
			}
		}
	}
}

// A small request body that went in one write with its head (HEADERS,
// then one DATA with END_STREAM) and that the upstream did not process
// (REFUSED_STREAM, or a stream above GOAWAY's last stream id) is sent
// again, whole, on another stream (of another connection after GOAWAY),
// and the client gets the upstream's answer to it.
func TestH2RefusedWholeBodySentAgain(t *testing.T) {
	for _, tc := range []struct {
		name     string
		refuse   func(sc *scriptConn, id uint32)
		sameConn bool // the second attempt goes on the first's connection
	}{
		{"REFUSED_STREAM", func(sc *scriptConn, id uint32) {
			sc.fr.WriteRSTStream(id, http2.ErrCodeRefusedStream)
		}, true},
		{"GOAWAY", func(sc *scriptConn, id uint32) {
			sc.fr.WriteGoAway(max(id, 2)-2, http2.ErrCodeNo, nil) // the last stream before id
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type attempt struct {
				conn   int
				stream uint32
				body   string
				frames int // the DATA frames it came in
			}
			attempts := make(chan attempt, 8)
			var refused atomic.Bool
			url := scriptServer(t, func(n int, sc *scriptConn) {
				sc.settings()
				open := map[uint32]*attempt{}
				for {
					switch f := sc.next().(type) {
					case nil:
						return
					case *http2.MetaHeadersFrame:
						if f.StreamEnded() {
							t.Errorf("stream %d: END_STREAM on the head of a POST", f.StreamID)
						}
						open[f.StreamID] = &attempt{conn: n, stream: f.StreamID}
					case *http2.DataFrame:
						a := open[f.StreamID]
						if a == nil {
							t.Errorf("DATA on stream %d, not open", f.StreamID)
							continue
						}
						a.body += string(f.Data())
						a.frames++
						if !f.StreamEnded() {
							continue
						}
						delete(open, f.StreamID)
						attempts <- *a
						if refused.CompareAndSwap(false, true) {
							tc.refuse(sc, f.StreamID)
							continue
						}
						sc.respond(f.StreamID, false, ":status", "200")
						sc.fr.WriteData(f.StreamID, true, []byte("got "+a.body))
					}
				}
			})
			srv, client := h2Front(t, Options{Upstreams: []string{url}, Transport: TransportH2C}, bodyArrived(t))
			const body = "a small body, whole"
			resp, err := client.Post(srv.URL+"/", "text/plain", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || string(got) != "got "+body {
				t.Fatalf("%s %q, %v; want 200 %q", resp.Status, got, err, "got "+body)
			}
			first, second := <-attempts, <-attempts
			for i, a := range []attempt{first, second} {
				if a.body != body || a.frames != 1 {
					t.Errorf("attempt %d: the upstream got %q in %d DATA frames; want %q in one, with the head", i+1, a.body, a.frames, body)
				}
			}
			if first.conn == second.conn && first.stream == second.stream {
				t.Errorf("both attempts on stream %d of connection %d", first.stream, first.conn)
			}
			if (first.conn == second.conn) != tc.sameConn {
				t.Errorf("attempts on connections %d and %d", first.conn, second.conn)
			}
			select {
			case a := <-attempts:
				t.Errorf("a third attempt: %+v", a)
			default:
			}
		})
	}
}

// A connection on which nothing was read for a while is PINGed; one
// whose PING is answered lives on, one whose PING is not fails, and so
// do its streams. (checkAlive is called here as its timer would, with
// its periods made zero, so that no test waits.)
func TestH2ClientPing(t *testing.T) {
	for _, answer := range []bool{true, false} {
		t.Run(map[bool]string{true: "answered", false: "unanswered"}[answer], func(t *testing.T) {
			pinged := make(chan struct{})
			cc := scripted(t, 1024, func(sc *scriptConn) {
				sc.settings()
				sc.headers()
				for {
					f := sc.next()
					if f == nil {
						return
					}
					if p, ok := f.(*http2.PingFrame); ok && !p.IsAck() {
						if answer {
							sc.fr.WritePing(true, p.Data)
						}
						close(pinged)
					}
				}
			})
			done := make(chan error, 1)
			go func() {
				_, err := cc.roundTrip(context.Background(), &h2Request{method: "GET", scheme: "http", authority: "up", path: "/"})
				done <- err
			}()
			sluicetest.WaitFor(t, "the stream open", func() bool {
				cc.mu.Lock()
				defer cc.mu.Unlock()
				return len(cc.streams) == 1
			})
			cc.mu.Lock()
			cc.pingEvery, cc.pingTO = 0, time.Hour
			cc.mu.Unlock()
			cc.checkAlive()
			<-pinged
			if answer {
				sluicetest.WaitFor(t, "the PING's answer read", func() bool {
					cc.mu.Lock()
					defer cc.mu.Unlock()
					return !cc.pinged
				})
			}
			cc.mu.Lock()
			cc.pingEvery, cc.pingTO = time.Hour, 0
			cc.mu.Unlock()
			cc.checkAlive()
			if answer {
				if cc.limit() == 0 {
					t.Fatalf("the connection failed: %v", cc.Err())
				}
				cc.Close()
				<-done
				return
			}
			if err := <-done; !errors.Is(err, errH2Ping) {
				t.Fatalf("the stream ended with %v, want errH2Ping", err)
			}
		})
	}
}

// wholeBody is a request body that has all arrived, as an HTTP/2
// client's unary gRPC call has by the time the proxy sends it.
type wholeBody struct{ r bytes.Reader }

func (b *wholeBody) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *wholeBody) Buffered() (int, bool)      { return b.r.Len(), true }

// bodyOf returns the first attempt's reader of r's body.
func bodyOf(r *engine.Request) *h2BodyReader {
	rd, _ := newH2Body(r).rewind()
	return rd
}

// writeLog is a connection that records each Write's frames.
type writeLog struct {
	net.Conn
	mu     sync.Mutex
	writes [][]http2.Frame
}

func (w *writeLog) Write(p []byte) (int, error) {
	fr := http2.NewFramer(nil, bytes.NewReader(p))
	var frames []http2.Frame
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			break
		}
		frames = append(frames, f)
	}
	w.mu.Lock()
	w.writes = append(w.writes, frames)
	w.mu.Unlock()
	return w.Conn.Write(p)
}

// A request whose small body has all arrived goes in one write: its
// HEADERS and its DATA with END_STREAM.
func TestH2ClientOneWrite(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		sc := newScriptConn(t, nc)
		if sc == nil {
			close(got)
			return
		}
		sc.settings()
		h := sc.headers()
		if d, ok := sc.next().(*http2.DataFrame); ok {
			got <- string(d.Data())
		}
		close(got)
		sc.respond(h.StreamID, true, ":status", "200")
		sc.next()
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	log := &writeLog{Conn: nc}
	cc, err := newH2ClientConn(log, 1024, DefaultMaxHeaderCount, 0, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	r := &engine.Request{ProtoMajor: 2, Body: &wholeBody{r: *bytes.NewReader([]byte("hello"))}}
	resp, err := cc.roundTrip(context.Background(), &h2Request{method: "POST", scheme: "http", authority: "up", path: "/",
		body: bodyOf(r)})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if g := <-got; g != "hello" {
		t.Fatalf("the upstream got %q", g)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, w := range log.writes {
		if len(w) == 2 {
			h, hok := w[0].(*http2.HeadersFrame)
			d, dok := w[1].(*http2.DataFrame)
			if hok && dok && h.StreamID == 1 && d.StreamID == 1 && d.StreamEnded() && !h.StreamEnded() {
				return
			}
		}
	}
	t.Fatalf("no write with the request's HEADERS and DATA with END_STREAM: %v", log.writes)
}

// Bodies larger than every flow-control window pass whole both ways at
// once through an h2c upstream that echoes as it reads, from HTTP/2 and
// HTTP/1.1 clients, several at a time on one connection.
func TestH2LargeBodiesBothWays(t *testing.T) {
	url, _ := h2cUpstream(t, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		buf := make([]byte, 7000)
		for {
			n, err := r.Body.Read(buf)
			w.Write(buf[:n])
			w.(http.Flusher).Flush()
			if err != nil {
				return
			}
		}
	}))
	srv, h2client := h2Front(t, Options{Upstreams: []string{url}, Transport: TransportH2C})
	body := make([]byte, 3<<20)
	for i := range body {
		body[i] = byte(i * 7 / 5)
	}
	h1 := &http.Transport{TLSClientConfig: srv.ClientConfig(), Protocols: new(http.Protocols)}
	h1.Protocols.SetHTTP1(true)
	defer h1.CloseIdleConnections()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			client := h2client
			if i%2 == 1 {
				client = &http.Client{Transport: h1}
			}
			resp, err := client.Post(srv.URL+"/", "application/octet-stream", bytes.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !bytes.Equal(got, body) {
				t.Errorf("%s: %d of %d bytes back, %v", resp.Proto, len(got), len(body), err)
			}
		})
	}
	wg.Wait()
}

// chunked is a body that arrives in parts, each Read one of them.
type chunked struct{ parts []string }

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	c.parts[0] = c.parts[0][n:]
	if c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	return n, nil
}

// A request body read in part by an attempt given up is sent whole by
// the next (what was read was kept), and the first reads no more; from
// an HTTP/1.x client, or past h2SmallBody, what was read is gone and it
// cannot be sent again.
func TestH2BodyRewind(t *testing.T) {
	big := strings.Repeat("x", h2SmallBody)
	for _, tc := range []struct {
		name   string
		proto  int
		parts  []string
		rewind bool
	}{
		{"HTTP/2, small", 2, []string{"hello ", "big ", "world"}, true},
		{"HTTP/2, past h2SmallBody", 2, []string{big, "!", "more"}, false},
		{"HTTP/1.1", 1, []string{"hello ", "big ", "world"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := strings.Join(tc.parts, "")
			b := newH2Body(&engine.Request{ProtoMajor: tc.proto, Body: &chunked{parts: slices.Clone(tc.parts)}})
			first, _ := b.rewind()
			buf := make([]byte, 2*h2SmallBody)
			got := ""
			for range 2 {
				n, err := first.Read(buf)
				if err != nil {
					t.Fatal(err)
				}
				got += string(buf[:n])
			}
			if !strings.HasPrefix(want, got) {
				t.Fatalf("first attempt read %q", got)
			}
			if b.canRewind() != tc.rewind {
				t.Fatalf("canRewind %v, want %v", b.canRewind(), tc.rewind)
			}
			second, ok := b.rewind()
			if ok != tc.rewind {
				t.Fatalf("rewind %v, want %v", ok, tc.rewind)
			}
			if !ok {
				return
			}
			if _, err := first.Read(buf); err != errBodyGiven {
				t.Fatalf("the first attempt read on: %v", err)
			}
			all, err := io.ReadAll(second)
			if err != nil || string(all) != want {
				t.Fatalf("second attempt read %q, %v; want %q", all, err, want)
			}
		})
	}
}

// gatedBody is a request body each of whose Reads says so on entered,
// then waits for its part on parts (closed: the end of the body).
type gatedBody struct {
	entered chan struct{}
	parts   chan string
}

func (g *gatedBody) Read(p []byte) (int, error) {
	g.entered <- struct{}{}
	part, ok := <-g.parts
	if !ok {
		return 0, io.EOF
	}
	return copy(p, part), nil
}

// read waits for a Read to enter g, and gives it part; the end of the
// body when end is true.
func (g *gatedBody) read(t *testing.T, part string, end bool) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(sluicetest.WaitTimeout):
		t.Fatalf("no read of the body came for %.20q", part)
	}
	if end {
		close(g.parts)
		return
	}
	g.parts <- part
}

// A read of an attempt the upstream refused that is still in the
// client's body when the next attempt begins (the stale read): what it
// reads goes to the next attempt, which sends the body exactly, and
// nothing more goes on the refused stream. The body is gated part by
// part, so that the read is stale every time: no timing decides it.
func TestH2StaleBodyRead(t *testing.T) {
	big := strings.Repeat("b", h2SmallBody-10)
	for _, tc := range []struct {
		name     string
		proto    int
		refuseAt string   // the first stream is refused once it sent this
		parts    []string // the body; the stale read reads parts[len(refuseAt's parts)]
		sent     int      // the parts sent before the refusal
	}{
		{"HTTP/2, stale read of the second part", 2, "hello ", []string{"hello ", "stale ", "world"}, 1},
		{"HTTP/2, stale read of the first part", 2, "", []string{"stale ", "world"}, 0},
		{"HTTP/2, stale read past h2SmallBody", 2, big, []string{big, strings.Repeat("s", 20), "end"}, 1},
		{"HTTP/1.1, stale read of the first part", 1, "", []string{"stale ", "world"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := strings.Join(tc.parts, "")
			got := make(chan string, 1)
			cc := scripted(t, 1024, func(sc *scriptConn) {
				sc.settings()
				bodies := map[uint32]string{}
				refused := uint32(0)
				refuse := func(id uint32) {
					refused = id
					sc.fr.WriteRSTStream(id, http2.ErrCodeRefusedStream)
				}
				for {
					switch f := sc.next().(type) {
					case nil:
						return
					case *http2.MetaHeadersFrame:
						if refused == 0 && tc.refuseAt == "" {
							refuse(f.StreamID)
						}
					case *http2.DataFrame:
						id := f.StreamID
						if id == refused {
							t.Errorf("%q on stream %d after it was refused", f.Data(), id)
							continue
						}
						bodies[id] += string(f.Data())
						if refused == 0 && bodies[id] == tc.refuseAt {
							refuse(id)
							continue
						}
						if f.StreamEnded() {
							got <- bodies[id]
							sc.respond(id, true, ":status", "200")
						}
					case *http2.RSTStreamFrame:
						if f.StreamID == refused {
							t.Errorf("RST_STREAM %v on the refused stream", f.ErrCode)
						}
					}
				}
			})
			gb := &gatedBody{entered: make(chan struct{}), parts: make(chan string)}
			b := newH2Body(&engine.Request{ProtoMajor: tc.proto, ContentLength: -1, Body: gb})
			defer b.stop()
			send := func(rd *h2BodyReader) (*http.Response, error) {
				return cc.roundTrip(context.Background(), &h2Request{method: "POST", scheme: "http", authority: "up", path: "/", body: rd})
			}
			rd1, _ := b.rewind()
			first := make(chan error, 1)
			go func() {
				_, err := send(rd1)
				first <- err
			}()
			for _, part := range tc.parts[:tc.sent] {
				gb.read(t, part, false)
			}
			<-gb.entered // the first attempt's read, in the client's body now
			if err := <-first; !refusedStream(err) {
				t.Fatalf("the first attempt got %v, want it refused", err)
			}
			rd2, ok := b.rewind()
			if !ok {
				t.Fatal("the body cannot be sent again")
			}
			type result struct {
				resp *http.Response
				err  error
			}
			second := make(chan result, 1)
			go func() {
				resp, err := send(rd2)
				second <- result{resp, err}
			}()
			gb.parts <- tc.parts[tc.sent] // the stale read returns
			for _, part := range tc.parts[tc.sent+1:] {
				gb.read(t, part, false)
			}
			gb.read(t, "", true)
			r := <-second
			if r.err != nil {
				t.Fatalf("the second attempt failed: %v", r.err)
			}
			r.resp.Body.Close()
			if g := <-got; g != want {
				t.Fatalf("the upstream got %d bytes %.40q…; want %d bytes %.40q…", len(g), g, len(want), want)
			}
		})
	}
}

// fieldPairs returns n fields (name, value pairs) x-f-0: v … for a
// scripted head.
func fieldPairs(n int, first ...string) []string {
	for i := range n {
		first = append(first, "x-f-"+strconv.Itoa(i), "v")
	}
	return first
}

// An HTTP/2 upstream's response head, or trailer section, of more
// fields than max_header_count is refused as the HTTP/1.1 client refuses
// one: a head is answered 502, a trailer section cuts the response; the
// stream is reset (CANCEL), the reason logged, and the connection serves
// the next request.
func TestH2FieldCount(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limit   int  // max_header_count (0: the default)
		fields  int  // the head's or the trailer section's
		trailer bool // the fields are in the trailer section
		ok      bool
		log     string // what the log says when not ok
	}{
		{"head at the default", 0, DefaultMaxHeaderCount, false, true, ""},
		{"head over the default", 0, DefaultMaxHeaderCount + 1, false, false, "too many fields in the upstream's response head: 257, over max_header_count 256"},
		{"head at the limit", 8, 8, false, true, ""},
		{"head over the limit", 8, 9, false, false, "too many fields in the upstream's response head: 9, over max_header_count 8"},
		{"trailer at the limit", 8, 8, true, true, ""},
		{"trailer over the limit", 8, 9, true, false, "too many fields in the upstream's trailer section: 9, over max_header_count 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resets := make(chan http2.ErrCode, 4)
			url := scriptServer(t, func(n int, sc *scriptConn) {
				sc.settings()
				for {
					switch f := sc.next().(type) {
					case nil:
						return
					case *http2.RSTStreamFrame:
						resets <- f.ErrCode
					case *http2.MetaHeadersFrame:
						switch id := f.StreamID; {
						case f.PseudoValue("path") == "/next":
							sc.respond(id, false, ":status", "200")
							sc.fr.WriteData(id, true, []byte("next on connection "+strconv.Itoa(n)))
						case tc.trailer:
							sc.respond(id, false, ":status", "200", "trailer", "x-f-0")
							sc.fr.WriteData(id, false, []byte("body"))
							sc.respond(id, true, fieldPairs(tc.fields)...)
						default:
							sc.respond(id, false, fieldPairs(tc.fields, ":status", "200")...)
							sc.fr.WriteData(id, true, []byte("body"))
						}
					}
				}
			})
			logger, log := sluicetest.Logger()
			srv, client := h2Front(t, Options{Upstreams: []string{url}, Transport: TransportH2C, MaxHeaderCount: tc.limit, Logger: logger})
			resp, err := client.Get(srv.URL + "/")
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case tc.ok:
				n := len(resp.Header)
				if tc.trailer {
					n = len(resp.Trailer)
				}
				if err != nil || resp.StatusCode != 200 || string(body) != "body" || n < tc.fields {
					t.Fatalf("%s %q, %v, %d fields; want 200 %q, %d fields", resp.Status, body, err, n, "body", tc.fields)
				}
				if strings.Contains(log.String(), "too many fields") {
					t.Fatalf("logged %s", log)
				}
			case !tc.trailer:
				if resp.StatusCode != 502 || resp.Header.Get("X-F-0") != "" {
					t.Fatalf("%s %q, %v; want 502 without the upstream's fields", resp.Status, body, err)
				}
			default:
				if err == nil {
					t.Fatalf("%s %q, trailer %v: the response was not cut", resp.Status, body, resp.Trailer)
				}
			}
			if !tc.ok {
				if code := <-resets; code != http2.ErrCodeCancel {
					t.Fatalf("the stream reset with %v, want CANCEL", code)
				}
				if !strings.Contains(log.String(), tc.log) {
					t.Fatalf("the log says %s; want %q", log, tc.log)
				}
			}
			resp, err = client.Get(srv.URL + "/next")
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "next on connection 0" {
				t.Fatalf("the next request got %s %q", resp.Status, body)
			}
		})
	}
}
