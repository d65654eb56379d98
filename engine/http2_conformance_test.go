//lint:file-ignore SA1019 the tests drive x/net/http2's client and Framer on purpose.

package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// h2spec, the HTTP/2 conformance suite (RFC 9113 and RFC 7541), passes
// every case against the server over TLS, and over h2c every case but
// one: an h2c listener serves HTTP/1.1 too, so a connection that opens
// with something other than the HTTP/2 preface is an HTTP/1.1 request,
// answered (400) rather than cut.
func TestHTTP2Conformance(t *testing.T) {
	h2spec := sluicetest.NeedTool(t, "h2spec", "go install github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible")
	for _, name := range []string{"tls", "h2c"} {
		t.Run(name, func(t *testing.T) {
			var ca *sluicetest.CA
			args := []string{"-o", "5"}
			if name == "tls" {
				ca = sluicetest.NewCA(t)
				args = append(args, "-t", "-k")
			}
			_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
				io.Copy(io.Discard, r.Body)
				w.WriteString("conformance\n")
			}), engine.Limits{})
			host, port, _ := strings.Cut(addr, ":")
			out, err := exec.Command(h2spec, append(args, "-h", host, "-p", port)...).CombinedOutput()
			failed := false
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "×") && (name == "tls" || !strings.Contains(line, "Sends invalid connection preface")) {
					failed = true
				}
			}
			if name == "h2c" && !strings.Contains(string(out), "145 tests, 144 passed, 0 skipped, 1 failed") {
				failed = true // stopped early, or fewer cases
			}
			if failed || err != nil && name == "tls" {
				t.Errorf("h2spec: %v\n%s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			t.Log(lines[len(lines)-1])
		})
	}
}

// rawH2 sends a HEADERS frame with fields (pseudo-header fields included)
// on stream 1 and returns the first frame that answers it: RST_STREAM,
// HEADERS or GOAWAY.
func rawH2(t *testing.T, addr string, ca *sluicetest.CA, fields ...string) http2.Frame {
	t.Helper()
	h := dialH2(t, ca, addr)
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: buf.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	var got http2.Frame
	h.readUntil("the answer", func(f http2.Frame) bool {
		switch f := f.(type) {
		case *http2.RSTStreamFrame, *http2.GoAwayFrame:
			got = f
		case *http2.MetaHeadersFrame:
			got = f
		}
		return got != nil
	})
	return got
}

// A malformed request (RFC 9113 §8.1.1) is reset with PROTOCOL_ERROR, not
// answered: a connection-specific field, TE other than "trailers", an
// uppercase name, a pseudo-header after a regular field, a missing or
// repeated pseudo-header, :authority and Host that disagree.
func TestHTTP2MalformedRequests(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, h2Describe, engine.Limits{})
	get := []string{":method", "GET", ":scheme", "https", ":authority", "x", ":path", "/"}
	for _, tt := range []struct {
		name   string
		fields []string
	}{
		{"connection field", append(get, "connection", "keep-alive")},
		{"keep-alive field", append(get, "keep-alive", "timeout=5")},
		{"TE gzip", append(get, "te", "gzip")},
		{"uppercase name", append(get, "X-Upper", "1")},
		{"pseudo after regular", []string{":method", "GET", ":scheme", "https", "x-a", "1", ":path", "/"}},
		{"no :path", []string{":method", "GET", ":scheme", "https", ":authority", "x"}},
		{"empty :path", []string{":method", "GET", ":scheme", "https", ":authority", "x", ":path", ""}},
		{"two :method", append(get, ":method", "GET")},
		{"unknown pseudo", append(get, ":status", "200")},
		{"host disagrees", append(get, "host", "y")},
		{"value with LF", append(get, "x-a", "1\n2")},
		{"content-length without DATA", append(get, "content-length", "3")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := rawH2(t, addr, ca, tt.fields...)
			rst, ok := f.(*http2.RSTStreamFrame)
			if !ok || rst.ErrCode != http2.ErrCodeProtocol {
				t.Errorf("answered %v, want RST_STREAM PROTOCOL_ERROR", f)
			}
		})
	}
	// TE: trailers is allowed, and the engine's target rules apply to
	// :path as to a request line.
	for _, tt := range []struct {
		name, path, status string
	}{
		{"TE trailers", "/", "200"},
		{"encoded slash", "/a%2fb", "400"},
		{"above the root", "/../etc/passwd", "400"},
		{"absolute form", "https://x/", "400"},
		{"space", "/a b", "400"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := rawH2(t, addr, ca, ":method", "GET", ":scheme", "https", ":authority", "x", ":path", tt.path, "te", "trailers")
			m, ok := f.(*http2.MetaHeadersFrame)
			if !ok || m.PseudoValue("status") != tt.status {
				t.Errorf("answered %v, want status %s", f, tt.status)
			}
		})
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

// A handler writing more than the client's flow-control window allows
// waits for its WINDOW_UPDATE: the server sends no more DATA than the
// window, and the rest once the client opens it.
func TestHTTP2FlowControl(t *testing.T) {
	ca := sluicetest.NewCA(t)
	const size = 100000
	done := make(chan error, 1)
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		_, err := w.Write(bytes.Repeat([]byte("x"), size))
		done <- err
	}), engine.Limits{})
	h := dialH2(t, ca, addr)
	h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1000})
	h.get(1, "/")
	got := 0
	h.readUntil("1,000 bytes", func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok {
			got += len(d.Data())
		}
		return got >= 1000
	})
	// The window is spent: nothing more comes until it opens. (A frame
	// sent in error would arrive before the PING's acknowledgement.)
	h.fr.WritePing(false, [8]byte{7})
	h.readUntil("the PING's ACK", func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok {
			got += len(d.Data())
		}
		p, ok := f.(*http2.PingFrame)
		return ok && p.IsAck()
	})
	if got != 1000 {
		t.Fatalf("%d bytes of DATA with a window of 1,000", got)
	}
	select {
	case err := <-done:
		t.Fatalf("the handler's write returned (%v) before the window opened", err)
	default:
	}
	h.fr.WriteWindowUpdate(1, size)
	h.fr.WriteWindowUpdate(0, size)
	h.readUntil("the rest", func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok {
			got += len(d.Data())
			return d.StreamEnded()
		}
		return false
	})
	if got != size {
		t.Errorf("%d bytes in all, want %d", got, size)
	}
	if err := <-done; err != nil {
		t.Errorf("write: %v", err)
	}
}

// A request body is flow controlled: the server opens the windows as the
// handler reads, so a body far larger than the initial windows arrives
// whole; DATA beyond the declared Content-Length resets the stream.
func TestHTTP2RequestBody(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		w.WriteString(strconv.FormatInt(n, 10))
		if err != nil {
			w.WriteString(" " + err.Error())
		}
	}), engine.Limits{MaxBodyBytes: 8 << 20})
	const size = 5 << 20
	resp, err := h2Client(t, ca).Post("https://"+addr+"/", "application/octet-stream", bytes.NewReader(make([]byte, size)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != strconv.Itoa(size) {
		t.Errorf("handler read %s, want %d", b, size)
	}

	h := dialH2(t, ca, addr)
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: "x"}, {Name: ":path", Value: "/"}, {Name: "content-length", Value: "3"},
	} {
		enc.WriteField(f)
	}
	h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: buf.Bytes(), EndHeaders: true})
	h.fr.WriteData(1, true, []byte("four"))
	h.readUntil("the reset", func(f http2.Frame) bool {
		rst, ok := f.(*http2.RSTStreamFrame)
		if ok && (rst.StreamID != 1 || rst.ErrCode != http2.ErrCodeProtocol) {
			t.Errorf("RST_STREAM %d %v, want 1 PROTOCOL_ERROR", rst.StreamID, rst.ErrCode)
		}
		return ok
	})
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

// A client that keeps its flow-control window shut takes none of the
// response: after WriteTimeout the stream is reset (CANCEL) and the
// handler's write fails, so the handler does not wait for ever.
func TestHTTP2ShutWindow(t *testing.T) {
	ca := sluicetest.NewCA(t)
	done := make(chan error, 1)
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.WriteString("head")
		done <- w.Flush()
	}), engine.Limits{WriteTimeout: 300 * time.Millisecond})
	h := dialH2(t, ca, addr)
	h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	h.get(1, "/")
	h.readUntil("the reset", func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok && len(d.Data()) > 0 {
			t.Errorf("DATA through a shut window")
		}
		rst, ok := f.(*http2.RSTStreamFrame)
		if ok && rst.ErrCode != http2.ErrCodeCancel {
			t.Errorf("RST_STREAM %v, want CANCEL", rst.ErrCode)
		}
		return ok
	})
	if err := <-done; err == nil {
		t.Error("the handler's flush succeeded")
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
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: "x"}, {Name: ":path", Value: "/"},
	} {
		enc.WriteField(f)
	}
	h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: buf.Bytes(), EndHeaders: true})
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
