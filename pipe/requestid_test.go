package pipe

import (
	"html/template"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

func TestSetRequestID(t *testing.T) {
	for _, tt := range []struct {
		id string
		ok bool
	}{
		{"abc", true},
		{strings.Repeat("a", MaxRequestIDLen), true},
		{strings.Repeat("a", MaxRequestIDLen+1), false},
		{"a b", false},
		{"a\x7f", false},
		{"\xe9", false},
	} {
		var c Conn
		c.SetRequestID([]byte("before"))
		if got := c.SetRequestID([]byte(tt.id)); got != tt.ok {
			t.Errorf("SetRequestID(%q) = %v, want %v", tt.id, got, tt.ok)
		}
		want := "before"
		if tt.ok {
			want = tt.id
		}
		if got := string(c.RequestID()); got != want {
			t.Errorf("after SetRequestID(%q): %q, want %q", tt.id, got, want)
		}
		if a := c.RequestIDAttr(); a.Key != "request_id" || a.Value.String() != want {
			t.Errorf("RequestIDAttr %v", a)
		}
	}
	var c Conn
	if c.RequestID() != nil || c.RequestIDAttr().Key != "" {
		t.Error("a Conn without an ID has one")
	}
}

// The short text of a server error and an error page show the request's
// ID; a client error's short text and a request without an ID show none.
func TestErrorShowsRequestID(t *testing.T) {
	ep, err := NewErrorPages(map[string]*template.Template{
		"403": template.Must(template.New("403").Parse("<p>{{.Status}} id={{.RequestID}}</p>")),
	})
	if err != nil {
		t.Fatal(err)
	}
	withID := func(status int) Component {
		return Pipe(func(c *Conn) bool {
			if c.Request.Header("X-Id") != nil {
				c.SetRequestID(c.Request.Header("X-Id"))
			}
			return c.Error(status, "no")
		})
	}
	rt, err := NewRouter(Route{Match: []string{"/404"}, Pipeline: withID(404)}, Route{Match: []string{"/403"}, Pipeline: withID(403)}, Route{Match: []string{"/503"}, Pipeline: withID(503)})
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, Handler(Chain{ep, rt}))
	for _, tt := range []struct{ path, id, want string }{
		{"/503", "abc-1", "503 Service Unavailable: no\nrequest id: abc-1\n"},
		{"/503", "", "503 Service Unavailable: no\n"},
		{"/404", "abc-1", "404 Not Found: no\n"},
		{"/403", "abc-2", "<p>403 id=abc-2</p>"},
		{"/403", "", "<p>403 id=</p>"},
	} {
		fields := ""
		if tt.id != "" {
			fields = "X-Id: " + tt.id + "\r\n"
		}
		_, body := sluicetest.RoundTrip(t, srv.Addr, "GET "+tt.path+" HTTP/1.1\r\nHost: a\r\n"+fields+"\r\n")
		if body != tt.want {
			t.Errorf("%s with ID %q: body %q, want %q", tt.path, tt.id, body, tt.want)
		}
	}
}

// visibleASCII agrees with a byte-by-byte test for every byte value at
// every position of IDs of 0 to 24 bytes.
func TestVisibleASCII(t *testing.T) {
	want := func(b []byte) bool {
		for _, c := range b {
			if c <= ' ' || c >= 0x7f {
				return false
			}
		}
		return true
	}
	for n := 0; n <= 24; n++ {
		for _, fill := range []byte{'!', '~', 'a', '0'} {
			base := []byte(strings.Repeat(string(fill), n))
			if !visibleASCII(base) {
				t.Fatalf("visibleASCII(%q) = false", base)
			}
			for i := 0; i < n; i++ {
				for c := 0; c < 256; c++ {
					b := append([]byte(nil), base...)
					b[i] = byte(c)
					if got := visibleASCII(b); got != want(b) {
						t.Fatalf("visibleASCII(%q) = %v", b, got)
					}
				}
			}
		}
	}
}

func FuzzVisibleASCII(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef"))
	f.Add([]byte("abc\x7fdefgh\x20"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ok := true
		for _, c := range b {
			if c <= ' ' || c >= 0x7f {
				ok = false
			}
		}
		if got := visibleASCII(b); got != ok {
			t.Fatalf("visibleASCII(%q) = %v, want %v", b, got, ok)
		}
	})
}

// BenchmarkSetRequestID records a made ID (32 hexadecimal digits).
func BenchmarkSetRequestID(b *testing.B) {
	var c Conn
	id := []byte("0123456789abcdef0123456789abcdef")
	for b.Loop() {
		if !c.SetRequestID(id) {
			b.Fatal("refused")
		}
	}
}
