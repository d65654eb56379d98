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

// No CR, LF or NUL a handler puts in a response field, whether taken
// from the request (a percent-decoded path) or its own, and whether set
// with Set, Add or SetSafe, splits the response: the head holds exactly
// the fields set, those bytes replaced by spaces.
func TestResponseFieldsNeverSplit(t *testing.T) {
	cases := []struct {
		name   string
		target string
		set    func(h *Header, path string)
		want   string // the field line, without CRLF
	}{
		{"Set value from the path", "/a%0d%0aSet-Cookie:%20x=1", func(h *Header, p string) { h.Set("Location", p) },
			"Location: /a  Set-Cookie: x=1"},
		{"Add value from the path", "/a%0aSet-Cookie:%20x=1", func(h *Header, p string) { h.Add("Location", p) },
			"Location: /a Set-Cookie: x=1"},
		{"SetSafe value from the path", "/a%0d%0a%0d%0a<html>", func(h *Header, p string) { h.SetSafe(MakeSafe("Location"), MakeSafe(p)) },
			"Location: /a    <html>"},
		{"Set name from the path", "/X-A:%201%0d%0aX-B", func(h *Header, p string) { h.Set(p[1:], "v") },
			"X-A: 1  X-B: v"},
		{"SetSafe name from the path", "/X-A:%201%0aX-B", func(h *Header, p string) { h.SetSafe(MakeSafe(p[1:]), MakeSafe("v")) },
			"X-A: 1 X-B: v"},
		{"a bare CR and a NUL", "/a%0db", func(h *Header, p string) { h.Set("X-P", p+"\x00c") },
			"X-P: /a b c"},
		{"Set over SetSafe", "/%0d%0aX-Evil:%201", func(h *Header, p string) {
			h.SetSafe(MakeSafe("X-P"), MakeSafe("safe"))
			h.Set("x-p", p)
		}, "x-p: /  X-Evil: 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := HandlerFunc(func(w ResponseWriter, r *Request) {
				c.set(w.Header(), string(r.Path))
				w.WriteString("ok")
			})
			addr := startServer(t, &Server{Handler: h, ServerHeader: "s"})
			out := exchange(t, addr, "GET "+c.target+" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
			head, body, ok := strings.Cut(out, "\r\n\r\n")
			if !ok || body != "ok" {
				t.Fatalf("response split or cut:\n%q", out)
			}
			lines := strings.Split(head, "\r\n")
			var fields []string
			for _, l := range lines[1:] {
				if strings.ContainsAny(l, "\r\n\x00") {
					t.Errorf("line %q holds a line break or NUL", l)
				}
				if !strings.HasPrefix(l, "Date: ") {
					fields = append(fields, l)
				}
			}
			want := []string{"Server: s", c.want, "Content-Length: 2", "Connection: close"}
			if strings.Join(fields, "|") != strings.Join(want, "|") {
				t.Errorf("fields\n%q\nwant\n%q", fields, want)
			}
		})
	}
}

// A handler's Date or Server field replaces the engine's: one of each is
// sent, and Set("Server", "") removes a Server field set before.
func TestSetDateServerReplacesEngines(t *testing.T) {
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		w.Header().Set("Date", "Mon, 07 Dec 2026 05:41:07 GMT")
		w.Header().Set("server", "mine")
		if string(r.Path) == "/none" {
			w.Header().Set("Server", "")
		}
		w.WriteHeader(204)
	})
	addr := startServer(t, &Server{Handler: h, ServerHeader: "sluice"})
	out := exchange(t, addr, "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	want := "HTTP/1.1 204 No Content\r\nDate: Mon, 07 Dec 2026 05:41:07 GMT\r\nserver: mine\r\nConnection: close\r\n\r\n"
	if out != want {
		t.Errorf("got\n%q\nwant\n%q", out, want)
	}
	out = exchange(t, addr, "GET /none HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	if strings.Contains(strings.ToLower(out), "server:") {
		t.Errorf("a Server field was sent:\n%q", out)
	}
}

func TestMakeSafe(t *testing.T) {
	for in, want := range map[string]string{"": "", "text/html": "text/html", "a\r\nb": "a  b", "\x00": " ", "a\nb\rc": "a b c"} {
		if got := MakeSafe(in).String(); got != want {
			t.Errorf("MakeSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

func BenchmarkHeaderSetSafe(b *testing.B) {
	var h Header
	names := []SafeString{MakeSafe("Content-Type"), MakeSafe("Last-Modified"), MakeSafe("ETag"), MakeSafe("Accept-Ranges")}
	values := []SafeString{MakeSafe("text/html; charset=utf-8"), MakeSafe("Sun, 22 Nov 2026 05:00:00 GMT"), MakeSafe(`"97-abcdef"`), MakeSafe("bytes")}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		h.reset()
		for i := range names {
			h.SetSafe(names[i], values[i])
		}
		h.SetContentLength(151)
		buf = h.appendFields(buf[:0])
	}
}

// BenchmarkHeaderSetWrite sets and writes a static file's fields with Set.
func BenchmarkHeaderSetWrite(b *testing.B) {
	var h Header
	names := []string{"Content-Type", "Last-Modified", "ETag", "Accept-Ranges"}
	values := []string{"text/html; charset=utf-8", "Sun, 22 Nov 2026 05:00:00 GMT", `"97-abcdef"`, "bytes"}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		h.reset()
		for i := range names {
			h.Set(names[i], values[i])
		}
		h.SetContentLength(151)
		buf = h.appendFields(buf[:0])
	}
}
