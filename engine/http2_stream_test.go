//lint:file-ignore SA1019 the tests drive x/net/http2's client and Framer on purpose.

package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

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

// A handler's trailer fields (Header.AddTrailer) are sent after the body
// in a HEADERS frame that ends the stream, as Go's client reads them.
func TestHTTP2ResponseTrailer(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.Header().Set("Trailer", "X-Digest")
		w.WriteString("body")
		w.Header().AddTrailer("X-Digest", "abc")
	}), engine.Limits{})
	resp, body := h2Get(t, h2Client(t, ca), "https://"+addr+"/")
	if body != "body" || resp.Trailer.Get("X-Digest") != "abc" {
		t.Errorf("body %q, trailer %v", body, resp.Trailer)
	}
}

// A request the engine refuses on an HTTP/2 stream reaches the server's
// OnRefused hook, as it does on HTTP/1.x, with a request line of its
// method and :path.
func TestHTTP2OnRefused(t *testing.T) {
	ca := sluicetest.NewCA(t)
	srv, addr := h2Server(t, ca, h2Describe, engine.Limits{})
	got := make(chan string, 1)
	srv.OnRefused = func(r *engine.Refusal) {
		got <- fmt.Sprintf("%d %s %d", r.Status, r.Line, r.BodyBytes)
	}
	req, _ := http.NewRequest("BREW", "https://"+addr+"/pot", nil)
	resp, err := h2Client(t, ca).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf("501 BREW /pot HTTP/2.0 %d", len(b)); resp.StatusCode != 501 || <-got != want {
		t.Errorf("status %d; hook saw something other than %q", resp.StatusCode, want)
	}
}

// Cookie fields a client split (RFC 9113 §8.2.3) reach the handler as
// one, joined by "; ".
func TestHTTP2CookiesJoined(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.Write(r.Header("Cookie"))
	}), engine.Limits{})
	h := dialH2(t, ca, addr)
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: "x"}, {Name: ":path", Value: "/"},
		{Name: "cookie", Value: "a=1"}, {Name: "x-other", Value: "y"}, {Name: "cookie", Value: "b=2"},
	} {
		enc.WriteField(f)
	}
	h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: buf.Bytes(), EndStream: true, EndHeaders: true})
	var body []byte
	h.readUntil("the response", func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok {
			body = append(body, d.Data()...)
			return d.StreamEnded()
		}
		return false
	})
	if string(body) != "a=1; b=2" {
		t.Errorf("Cookie %q, want \"a=1; b=2\"", body)
	}
}

// A response shorter than its declared Content-Length does not end its
// stream as if complete: the stream is reset with INTERNAL_ERROR.
func TestHTTP2ShortBody(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.Header().SetContentLength(10)
		w.WriteString("four")
	}), engine.Limits{})
	h := dialH2(t, ca, addr)
	h.get(1, "/")
	h.readUntil("the end of stream 1", func(f http2.Frame) bool {
		switch f := f.(type) {
		case *http2.DataFrame:
			if f.StreamEnded() {
				t.Fatalf("a 4-byte body of 10 ended the stream")
			}
		case *http2.RSTStreamFrame:
			if f.ErrCode != http2.ErrCodeInternal {
				t.Errorf("RST_STREAM %v, want INTERNAL_ERROR", f.ErrCode)
			}
			return true
		}
		return false
	})
}

// A request body that stalls is cut off after BodyTimeout, as on
// HTTP/1.x: the handler's read fails and, as it did not answer, the
// stream is answered 408.
func TestHTTP2BodyTimeout(t *testing.T) {
	ca := sluicetest.NewCA(t)
	readErr := make(chan error, 1)
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	}), engine.Limits{BodyTimeout: 300 * time.Millisecond, MinBodyRate: -1})
	h := dialH2(t, ca, addr)
	h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: requestBlock("POST", "/"), EndHeaders: true})
	h.fr.WriteData(1, false, []byte("a"))
	h.readUntil("the answer", func(f http2.Frame) bool {
		m, ok := f.(*http2.MetaHeadersFrame)
		if ok && m.PseudoValue("status") != "408" {
			t.Errorf("status %s, want 408", m.PseudoValue("status"))
		}
		return ok
	})
	if err := <-readErr; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the handler's read: %v", err)
	}
}

// A Set-Cookie field is sent never indexed (RFC 7541 §7.1.3), so it does
// not enter the HPACK table where a compression oracle could probe it.
func TestHTTP2SetCookieNeverIndexed(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.Header().Set("Set-Cookie", "session=secret")
	}), engine.Limits{})
	h := dialH2(t, ca, addr)
	h.get(1, "/")
	h.readUntil("the response", func(f http2.Frame) bool {
		m, ok := f.(*http2.MetaHeadersFrame)
		if !ok {
			return false
		}
		for _, hf := range m.Fields {
			if hf.Name == "set-cookie" && !hf.Sensitive {
				t.Errorf("set-cookie sent indexable")
			}
		}
		return true
	})
}

// A trailer that comes as the stream's handler ends is taken, or the
// stream found closed, under one hold of the connection's lock: the
// stream the reader looked up is never one its handler has just given
// back to the pool. Each stream's handler answers at once, without
// reading the body, while the client sends the trailer right behind the
// request; the connection then still serves a request. Under the race
// detector, a trailer read from a stream given back was reported (and
// could dereference a nil connection).
func TestHTTP2TrailerAsHandlerEnds(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.WriteString("done")
	}), engine.Limits{})
	c := dialH2(t, ca, addr)
	const streams = 500
	// The encoder's dynamic table is the connection's: one for all.
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	block := func(fields ...hpack.HeaderField) []byte {
		buf.Reset()
		for _, f := range fields {
			enc.WriteField(f)
		}
		return buf.Bytes()
	}
	post := func(id uint32) {
		req := block(hpack.HeaderField{Name: ":method", Value: "POST"}, hpack.HeaderField{Name: ":scheme", Value: "https"},
			hpack.HeaderField{Name: ":authority", Value: "x"}, hpack.HeaderField{Name: ":path", Value: "/t"})
		if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: req, EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
		trailer := block(hpack.HeaderField{Name: "x-sum", Value: "1"})
		if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: trailer, EndStream: true, EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
	// The server's SETTINGS, acknowledged here: from then on only this
	// goroutine writes. The client reads as it writes, so that neither
	// side's buffers fill: a reader goroutine counts the streams answered.
	c.readUntil("the server's SETTINGS", func(fr http2.Frame) bool {
		s, ok := fr.(*http2.SettingsFrame)
		return ok && !s.IsAck()
	})
	// The reader ends at the connection's end or a GOAWAY, which it
	// keeps for this goroutine to report: it may outlive a failed test.
	answered := make(chan uint32, streams)
	var goAway *http2.GoAwayFrame
	go func() {
		defer close(answered)
		for {
			c.c.SetReadDeadline(time.Now().Add(20 * time.Second))
			fr, err := c.fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := fr.(type) {
			case *http2.GoAwayFrame:
				goAway = &http2.GoAwayFrame{ErrCode: f.ErrCode}
				return
			case *http2.DataFrame:
				if f.StreamEnded() {
					answered <- f.StreamID
				}
			}
		}
	}()
	ended := func(what string) {
		t.Helper()
		for range answered { // the reader has returned once it is closed
		}
		if goAway != nil {
			t.Fatalf("%s: GOAWAY %v", what, goAway.ErrCode)
		}
		t.Fatalf("%s: the connection ended", what)
	}
	for i := range streams {
		post(uint32(2*i + 1))
		if i >= 50 {
			// Keep under MaxStreams open at once.
			if _, ok := <-answered; !ok {
				ended(fmt.Sprintf("after %d streams", i))
			}
		}
	}
	for i := streams - 50; i < streams; i++ {
		if _, ok := <-answered; !ok {
			ended(fmt.Sprintf("with %d streams unanswered", streams-i))
		}
	}
}
