package engine

import (
	"strings"
	"testing"
)

func TestHeaderSetAddDel(t *testing.T) {
	var h Header
	h.reset()
	h.Set("X-A", "1")
	h.Add("x-a", "2")
	h.Set("Content-Type", "text/plain")
	if got := h.Get("X-a"); got != "1" {
		t.Errorf("Get = %q, want the first value", got)
	}
	h.Set("x-A", "3")
	var all []string
	h.Values(func(n, v string) bool { all = append(all, n+"="+v); return true })
	if len(all) != 2 || all[0] != "Content-Type=text/plain" || all[1] != "x-A=3" {
		t.Errorf("after Set: %v", all)
	}
	h.Set("Content-Length", " 42 ")
	if h.ContentLength() != 42 || h.Get("content-length") != "42" {
		t.Errorf("Content-Length = %d %q", h.ContentLength(), h.Get("content-length"))
	}
	h.Del("CONTENT-LENGTH")
	if h.ContentLength() != -1 {
		t.Errorf("Content-Length after Del = %d", h.ContentLength())
	}
	h.Set("Connection", "keep-alive, close")
	if !h.close {
		t.Error("Connection: close not recorded")
	}
	h.Del("connection")
	h.Set("Transfer-Encoding", "chunked")
	h.Values(func(n, v string) bool {
		if n == "Transfer-Encoding" || n == "Connection" {
			t.Errorf("framing field %s stored", n)
		}
		return true
	})
}

func BenchmarkHeaderSet(b *testing.B) {
	var h Header
	b.ReportAllocs()
	for b.Loop() {
		h.reset()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Last-Modified", "Sun, 22 Nov 2026 05:00:00 GMT")
		h.Set("ETag", `"97-abcdef"`)
		h.Set("Cache-Control", "max-age=60")
		h.SetContentLength(151)
	}
}

func TestEmptyServerFieldSuppressesServerHeader(t *testing.T) {
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		if string(r.Path) == "/none" {
			w.Header().Set("Server", "")
		}
		w.WriteHeader(204)
		w.Write(nil) // an empty write is fine on a 204
	})
	addr := startServer(t, &Server{Handler: h, ServerHeader: "sluice"})
	if out := exchange(t, addr, "GET /none HTTP/1.1\r\nHost: a\r\n\r\n"); strings.Contains(out, "Server:") {
		t.Errorf("Server field sent:\n%s", out)
	}
	if out := exchange(t, addr, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"); !strings.Contains(out, "Server: sluice\r\n") {
		t.Errorf("default Server field missing:\n%s", out)
	}
}

// lineBreakAt finds the first CR, LF or NUL at every position and length,
// next to bytes that differ from them by one bit or borrow in the word
// test (0x0b, 0x0c, 0x0e, 0x8a, 0x8d, 0x80, 0x01, 0xff).
func TestLineBreakAt(t *testing.T) {
	want := func(s string) int { return strings.IndexAny(s, "\r\n\x00") }
	fill := []byte{'a', 0x0b, 0x0c, 0x0e, 0x8a, 0x8d, 0x80, 0x01, 0xff, 0x09}
	for n := 0; n <= 40; n++ {
		for _, f := range fill {
			base := strings.Repeat(string(f), n)
			if got := lineBreakAt(base); got != want(base) {
				t.Fatalf("lineBreakAt(%q) = %d, want %d", base, got, want(base))
			}
			for i := 0; i < n; i++ {
				for _, c := range []byte{'\r', '\n', 0} {
					b := []byte(base)
					b[i] = c
					if i+3 < n {
						b[i+3] = '\n' // a later one does not hide the first
					}
					if got := lineBreakAt(string(b)); got != i {
						t.Fatalf("lineBreakAt(%q) = %d, want %d", b, got, i)
					}
				}
			}
		}
	}
}

func FuzzLineBreakAt(f *testing.F) {
	f.Add("Content-Type: text/html\r\n")
	f.Add("\x00\x01\x0d\x8d")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := lineBreakAt(s), strings.IndexAny(s, "\r\n\x00"); got != want {
			t.Fatalf("lineBreakAt(%q) = %d, want %d", s, got, want)
		}
	})
}

// BenchmarkLineBreakAt scans the values of a static file's response
// head, none with a line break.
func BenchmarkLineBreakAt(b *testing.B) {
	values := []string{"Date", "Mon, 07 Dec 2026 05:41:07 GMT", "Content-Type", "text/html; charset=utf-8",
		"Last-Modified", "Sun, 06 Dec 2026 22:47:01 GMT", "ETag", `"6753a1b5-97"`, "Accept-Ranges", "bytes",
		"Content-Length", "151", "Server", "sluice"}
	n := 0
	for _, v := range values {
		n += len(v)
	}
	b.SetBytes(int64(n))
	for b.Loop() {
		for _, v := range values {
			if lineBreakAt(v) >= 0 {
				b.Fatal(v)
			}
		}
	}
}
