package conditional_test

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/conditional"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

const (
	lastMod = "Wed, 21 Oct 2015 07:28:00 GMT"
	earlier = "Tue, 20 Oct 2015 07:28:00 GMT"
	later   = "Thu, 22 Oct 2015 07:28:00 GMT"
)

// repBody is the 200-byte representation every path serves.
var repBody = []byte(strings.Repeat("0123456789", 20))

// repServer serves repBody over a real socket with the validators its
// path names: /strong (a strong tag and a date, the date's time with a
// fraction of a second that must not count), /weak (a weak tag only) and
// /none.
func repServer(t *testing.T) *sluicetest.Server {
	mod := time.Date(2015, 10, 21, 7, 28, 0, 500_000_000, time.UTC)
	reps := map[string]*conditional.Validators{
		"/strong": {ETag: `"v1"`, LastModified: lastMod, ModTime: mod},
		"/weak":   {ETag: `W/"w1"`},
		"/none":   {},
	}
	return sluicetest.NewServer(t, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		v, ok := reps[string(r.Path)]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		serveBytes(w, r, v, repBody, "text/plain")
	}))
}

// The preconditions and ranges, from raw request fields over a socket.
func TestPreconditionsAndRanges(t *testing.T) {
	s := repServer(t)
	tests := []struct {
		path, fields string // fields: raw header lines, each ending in CRLF
		status       int
		body, crange string // body "*": all of repBody
	}{
		{"/strong", "", 200, "*", ""},
		// If-None-Match, weak comparison; it wins over If-Modified-Since.
		{"/strong", "If-None-Match: \"v1\"\r\n", 304, "", ""},
		{"/strong", "If-None-Match: W/\"v1\"\r\n", 304, "", ""},
		{"/strong", "If-None-Match: \"x\", \"v1\"\r\n", 304, "", ""},
		{"/strong", "If-None-Match: \"x\"\r\nIf-None-Match: \"v1\"\r\n", 304, "", ""}, // lines joined into one list
		{"/strong", "If-None-Match: *\r\n", 304, "", ""},
		{"/strong", "If-None-Match: \"v2\"\r\n", 200, "*", ""},
		{"/strong", "If-None-Match: \"v2\"\r\nIf-Modified-Since: " + lastMod + "\r\n", 200, "*", ""},
		{"/strong", "If-None-Match: v1\r\n", 200, "*", ""}, // malformed: matches nothing
		// If-Modified-Since: the echo, the other formats, later and
		// earlier dates; invalid or repeated is ignored.
		{"/strong", "If-Modified-Since: " + lastMod + "\r\n", 304, "", ""},
		{"/strong", "If-Modified-Since: Wednesday, 21-Oct-15 07:28:00 GMT\r\n", 304, "", ""},
		{"/strong", "If-Modified-Since: Wed Oct 21 07:28:00 2015\r\n", 304, "", ""},
		{"/strong", "If-Modified-Since: " + later + "\r\n", 304, "", ""},
		{"/strong", "If-Modified-Since: " + earlier + "\r\n", 200, "*", ""},
		{"/strong", "If-Modified-Since: yesterday\r\n", 200, "*", ""},
		{"/strong", "If-Modified-Since: " + lastMod + "\r\nIf-Modified-Since: " + lastMod + "\r\n", 200, "*", ""},
		// If-Match, strong comparison, first of all.
		{"/strong", "If-Match: \"v1\"\r\n", 200, "*", ""},
		{"/strong", "If-Match: *\r\n", 200, "*", ""},
		{"/strong", "If-Match: W/\"v1\"\r\n", 412, "", ""},
		{"/strong", "If-Match: \"v2\"\r\n", 412, "", ""},
		{"/strong", "If-Match: \"v2\"\r\nIf-None-Match: \"v1\"\r\n", 412, "", ""},
		// If-Unmodified-Since, only without If-Match.
		{"/strong", "If-Unmodified-Since: " + lastMod + "\r\n", 200, "*", ""},
		{"/strong", "If-Unmodified-Since: " + earlier + "\r\n", 412, "", ""},
		{"/strong", "If-Unmodified-Since: nonsense\r\n", 200, "*", ""},
		{"/strong", "If-Match: \"v1\"\r\nIf-Unmodified-Since: " + earlier + "\r\n", 200, "*", ""},
		// Range, and If-Range: a strong tag or the exact date.
		{"/strong", "Range: bytes=0-3\r\n", 206, "0123", "bytes 0-3/200"},
		{"/strong", "Range: bytes=-5\r\n", 206, "56789", "bytes 195-199/200"},
		{"/strong", "Range: bytes=195-\r\n", 206, "56789", "bytes 195-199/200"},
		{"/strong", "Range: bytes=0-1,50-51\r\n", 206, "0123456789012345678901234567890123456789012345678901", "bytes 0-51/200"}, // merged: 48 bytes apart
		{"/strong", "Range: bytes=0-3\r\nIf-Range: \"v1\"\r\n", 206, "0123", "bytes 0-3/200"},
		{"/strong", "Range: bytes=0-3\r\nIf-Range: " + lastMod + "\r\n", 206, "0123", "bytes 0-3/200"},
		{"/strong", "Range: bytes=0-3\r\nIf-Range: W/\"v1\"\r\n", 200, "*", ""},
		{"/strong", "Range: bytes=0-3\r\nIf-Range: \"v2\"\r\n", 200, "*", ""},
		{"/strong", "Range: bytes=0-3\r\nIf-Range: " + later + "\r\n", 200, "*", ""},
		{"/strong", "Range: bytes=0-3\r\nIf-Range: \"v1\"\r\nIf-Range: \"v1\"\r\n", 200, "*", ""},
		{"/strong", "Range: bytes=200-\r\n", 416, "", "bytes */200"},
		{"/strong", "Range: bytes=-0\r\n", 416, "", "bytes */200"},
		{"/strong", "Range: pages=0-3\r\n", 200, "*", ""},
		{"/strong", "Range: bytes=3-0\r\n", 200, "*", ""},
		{"/strong", "Range: bytes=0-3\r\nIf-None-Match: \"v1\"\r\n", 304, "", ""}, // preconditions come first
		// A weak tag: If-None-Match matches, If-Match and If-Range never;
		// without a date, date fields are ignored.
		{"/weak", "If-None-Match: \"w1\"\r\n", 304, "", ""},
		{"/weak", "If-None-Match: W/\"w1\"\r\n", 304, "", ""},
		{"/weak", "If-Match: W/\"w1\"\r\n", 412, "", ""},
		{"/weak", "If-Match: *\r\n", 200, "*", ""},
		{"/weak", "Range: bytes=0-3\r\nIf-Range: W/\"w1\"\r\n", 200, "*", ""},
		{"/weak", "If-Modified-Since: " + later + "\r\n", 200, "*", ""},
		{"/weak", "If-Unmodified-Since: " + earlier + "\r\n", 200, "*", ""},
		// No validators: only "*" matches.
		{"/none", "If-None-Match: *\r\n", 304, "", ""},
		{"/none", "If-None-Match: \"\"\r\n", 200, "*", ""},
		{"/none", "If-Match: \"x\"\r\n", 412, "", ""},
		{"/none", "Range: bytes=0-3\r\nIf-Range: " + lastMod + "\r\n", 200, "*", ""},
		{"/none", "Range: bytes=0-3\r\n", 206, "0123", "bytes 0-3/200"},
	}
	for _, tt := range tests {
		raw := "GET " + tt.path + " HTTP/1.1\r\nHost: a\r\n" + tt.fields + "\r\n"
		resp, body := sluicetest.RoundTrip(t, s.URL, raw)
		want := tt.body
		if want == "*" {
			want = string(repBody)
		}
		if resp.StatusCode != tt.status || body != want || resp.Header.Get("Content-Range") != tt.crange {
			t.Errorf("GET %s with %q = %d %q, Content-Range %q; want %d %q, %q",
				tt.path, tt.fields, resp.StatusCode, body, resp.Header.Get("Content-Range"), tt.status, want, tt.crange)
		}
	}
}

// Several ranges make a multipart/byteranges body whose Content-Length
// is exact, in the order asked, a merged range where its first member
// was.
func TestMultipart(t *testing.T) {
	s := repServer(t)
	resp, body := sluicetest.RoundTrip(t, s.URL, "GET /strong HTTP/1.1\r\nHost: a\r\nRange: bytes=100-101,0-1,-10,2-5\r\n\r\n")
	mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != 206 || err != nil || mt != "multipart/byteranges" || params["boundary"] == "" {
		t.Fatalf("= %d %q, want 206 multipart/byteranges", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp.ContentLength != int64(len(body)) {
		t.Errorf("Content-Length %d, body %d bytes", resp.ContentLength, len(body))
	}
	want := []struct{ crange, body string }{
		{"bytes 100-101/200", "01"},
		{"bytes 0-5/200", "012345"}, // 0-1 and 2-5 merged
		{"bytes 190-199/200", "0123456789"},
	}
	mr := multipart.NewReader(bytes.NewReader([]byte(body)), params["boundary"])
	for i := 0; ; i++ {
		p, err := mr.NextPart()
		if err == io.EOF {
			if i != len(want) {
				t.Errorf("%d parts, want %d", i, len(want))
			}
			break
		}
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		b, _ := io.ReadAll(p)
		if i >= len(want) || p.Header.Get("Content-Type") != "text/plain" || p.Header.Get("Content-Range") != want[i].crange || string(b) != want[i].body {
			t.Errorf("part %d: %q %q %q", i, p.Header.Get("Content-Type"), p.Header.Get("Content-Range"), b)
		}
	}
}

func TestContentRange(t *testing.T) {
	if got := conditional.ContentRange(conditional.Range{Off: 5, N: 10}, 100); got != "bytes 5-14/100" {
		t.Errorf("ContentRange = %q", got)
	}
	if got := conditional.UnsatisfiedRange(0); got != "bytes */0" {
		t.Errorf("UnsatisfiedRange = %q", got)
	}
	if v := (&conditional.Validators{ETag: `W/"x"`}); !v.Weak() {
		t.Error(`W/"x" is not weak`)
	}
	if v := (&conditional.Validators{ETag: `"W/"`}); v.Weak() {
		t.Error(`"W/" is weak`)
	}
}
