package files_test

import (
	"bufio"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/sluicetest"
)

// benchIndex is the 151-byte index.html of bench/engine.sh.
const benchIndex = "<!DOCTYPE html>\n<html><head><title>Sluice bench</title></head>\n" +
	"<body><p>Hello from the Sluice engine benchmark.</p></body>\n</html>\n" +
	"<!--xxxxxxxxxxxx-->\n"

// keepAliveClient sends req on one connection and reads responses of a
// fixed length (the Date field is fixed-width), so the client side costs
// little and allocates nothing.
type keepAliveClient struct {
	c   net.Conn
	req []byte
	buf []byte
}

func newKeepAliveClient(tb testing.TB, addr, req string) *keepAliveClient {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(time.Hour))
	k := &keepAliveClient{c: c, req: []byte(req)}
	// Learn the response length from a first exchange.
	c.Write(k.req)
	br := bufio.NewReader(c)
	resp, body := sluicetest.ReadResponse(tb, br, "GET")
	if resp.StatusCode != 200 || body != benchIndex {
		tb.Fatalf("GET = %d %q", resp.StatusCode, body)
	}
	c.Write(k.req)
	var n int
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			tb.Fatal(err)
		}
		n += len(line)
		if string(line) == "\r\n" {
			break
		}
	}
	io.ReadFull(br, make([]byte, len(benchIndex)))
	k.buf = make([]byte, n+len(benchIndex))
	return k
}

func (k *keepAliveClient) do(tb testing.TB) {
	if _, err := k.c.Write(k.req); err != nil {
		tb.Fatal(err)
	}
	if _, err := io.ReadFull(k.c, k.buf); err != nil {
		tb.Fatal(err)
	}
}

func benchDir(tb testing.TB) string {
	dir := tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte(benchIndex), 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}

const benchRequest = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n"

// BenchmarkServeSmallFile measures a keep-alive GET / of a 151-byte
// index.html, as bench/engine.sh does against nginx: over a real socket
// (engine and client included), and the files.Server handler alone.
func BenchmarkServeSmallFile(b *testing.B) {
	if len(benchIndex) != 151 {
		b.Fatalf("benchIndex is %d bytes, want 151", len(benchIndex))
	}
	b.Run("socket", func(b *testing.B) {
		base := serveDir(b, benchDir(b), files.Options{})
		k := newKeepAliveClient(b, hostOf(base), benchRequest)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			k.do(b)
		}
	})
	b.Run("handler", func(b *testing.B) {
		s, err := files.New(benchDir(b), files.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		r := &engine.Request{
			Method: []byte("GET"), Target: []byte("/"), RawPath: []byte("/"), Path: []byte("/"),
			ProtoMinor: 1, Fields: []engine.Field{{Name: []byte("Host"), Value: []byte("a")}},
		}
		w := &discardWriter{}
		b.ReportAllocs()
		for b.Loop() {
			w.reset()
			s.Serve(w, r)
		}
		if w.n != len(benchIndex) {
			b.Fatalf("wrote %d bytes", w.n)
		}
	})
}

// BenchmarkServeConditional measures the handler alone on a revalidation
// (If-None-Match matching: 304) and a single range (206), the paths of
// package conditional.
func BenchmarkServeConditional(b *testing.B) {
	s, err := files.New(benchDir(b), files.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	w := &discardWriter{}
	base := []engine.Field{{Name: []byte("Host"), Value: []byte("a")}}
	r := &engine.Request{Method: []byte("GET"), Target: []byte("/"), RawPath: []byte("/"), Path: []byte("/"), ProtoMinor: 1, Fields: base}
	s.Serve(w, r)
	etag := w.h.Get("ETag")
	for _, c := range []struct {
		name   string
		field  engine.Field
		status int
	}{
		{"304", engine.Field{Name: []byte("If-None-Match"), Value: []byte(etag)}, 304},
		{"206", engine.Field{Name: []byte("Range"), Value: []byte("bytes=10-19")}, 206},
	} {
		b.Run(c.name, func(b *testing.B) {
			r.Fields = append(base[:1:1], c.field)
			b.ReportAllocs()
			for b.Loop() {
				w.reset()
				s.Serve(w, r)
			}
			if w.status != c.status {
				b.Fatalf("status %d, want %d", w.status, c.status)
			}
		})
	}
}

// discardWriter is a minimal engine.ResponseWriter for measuring a
// handler alone.
type discardWriter struct {
	h      engine.Header
	status int
	n      int
}

func (w *discardWriter) reset() {
	w.h.Del("Content-Type")
	w.h.Del("ETag")
	w.h.Del("Last-Modified")
	w.h.SetContentLength(-1)
	w.status, w.n = 0, 0
}
func (w *discardWriter) Header() *engine.Header { return &w.h }
func (w *discardWriter) WriteHeader(s int)      { w.status = s }
func (w *discardWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}
func (w *discardWriter) WriteString(s string) (int, error) { w.n += len(s); return len(s), nil }
func (w *discardWriter) Flush() error                      { return nil }
