package files_test

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/sluicetest"
)

// rfcDate is the date of RFC 9110's examples (§13.1.3, §13.1.4, §13.1.5);
// the files of these tests are last modified then.
const rfcDate = "Sat, 29 Oct 1994 19:43:31 GMT"

// rfcContent is n bytes where byte i is 'a'+i%26.
func rfcContent(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

// rfcSite serves files of the sizes the RFC's examples use, modified at
// rfcDate. It returns the base URL and the ETag of each file.
func rfcSite(t *testing.T) (base string, etags map[string]string) {
	dir := t.TempDir()
	mod, _ := http.ParseTime(rfcDate)
	for name, size := range map[string]int{"r10000.bin": 10000, "r1234.bin": 1234, "r47022.bin": 47022, "example.pdf": 8000} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, rfcContent(size), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, mod, mod)
	}
	base = serveDir(t, dir, files.Options{})
	etags = map[string]string{}
	for _, name := range []string{"r10000.bin", "r1234.bin", "r47022.bin", "example.pdf"} {
		resp, _ := sluicetest.Send(t, "HEAD", base+"/"+name)
		if resp.Header.Get("Last-Modified") != rfcDate {
			t.Fatalf("%s: Last-Modified %q, want %q", name, resp.Header.Get("Last-Modified"), rfcDate)
		}
		etags[name] = resp.Header.Get("ETag")
	}
	return base, etags
}

// The conditional request examples of RFC 9110 §13.1 and the precedence
// of §13.2.2, with the file's real entity tag standing for "xyzzy".
func TestRFC9110Conditionals(t *testing.T) {
	base, etags := rfcSite(t)
	x := etags["r10000.bin"] // "xyzzy": the current tag
	weak := "W/" + x
	const later, earlier = "Sun, 30 Oct 1994 19:43:31 GMT", "Fri, 28 Oct 1994 19:43:31 GMT"
	tests := []struct {
		name   string
		fields []string
		want   int
	}{
		// §13.1.1 If-Match (strong comparison).
		{"If-Match xyzzy", []string{"If-Match", x}, 200},
		{"If-Match list", []string{"If-Match", x + `, "r2d2xxxx", "c3piozzzz"`}, 200},
		{"If-Match list without it", []string{"If-Match", `"r2d2xxxx", "c3piozzzz"`}, 412},
		{"If-Match *", []string{"If-Match", "*"}, 200},
		{"If-Match weak never matches", []string{"If-Match", weak}, 412},
		// §13.1.2 If-None-Match (weak comparison).
		{"If-None-Match xyzzy", []string{"If-None-Match", x}, 304},
		{"If-None-Match W/xyzzy", []string{"If-None-Match", weak}, 304},
		{"If-None-Match list", []string{"If-None-Match", `"r2d2xxxx", ` + x + `, "c3piozzzz"`}, 304},
		{"If-None-Match weak list", []string{"If-None-Match", `W/"r2d2xxxx", ` + weak + `, W/"c3piozzzz"`}, 304},
		{"If-None-Match *", []string{"If-None-Match", "*"}, 304},
		{"If-None-Match other", []string{"If-None-Match", `"r2d2xxxx"`}, 200},
		// §13.1.3 If-Modified-Since.
		{"If-Modified-Since the date", []string{"If-Modified-Since", rfcDate}, 304},
		{"If-Modified-Since later", []string{"If-Modified-Since", later}, 304},
		{"If-Modified-Since earlier", []string{"If-Modified-Since", earlier}, 200},
		{"If-Modified-Since RFC 850 date", []string{"If-Modified-Since", "Saturday, 29-Oct-94 19:43:31 GMT"}, 304},
		{"If-Modified-Since asctime date", []string{"If-Modified-Since", "Sat Oct 29 19:43:31 1994"}, 304},
		{"If-Modified-Since invalid", []string{"If-Modified-Since", "yesterday"}, 200},
		// §5.6.7: an HTTP-date is in GMT; one in another zone is invalid,
		// and an invalid date is ignored.
		{"If-Modified-Since RFC 850 date in PST", []string{"If-Modified-Since", "Saturday, 29-Oct-94 19:43:31 PST"}, 200},
		{"If-Modified-Since in UTC", []string{"If-Modified-Since", "Sat, 29 Oct 1994 19:43:31 UTC"}, 200},
		// §13.1.4 If-Unmodified-Since.
		{"If-Unmodified-Since the date", []string{"If-Unmodified-Since", rfcDate}, 200},
		{"If-Unmodified-Since earlier", []string{"If-Unmodified-Since", earlier}, 412},
		{"If-Unmodified-Since invalid", []string{"If-Unmodified-Since", "never"}, 200},
		{"If-Unmodified-Since earlier in PST", []string{"If-Unmodified-Since", "Friday, 28-Oct-94 19:43:31 PST"}, 200},
		// §13.2.2 precedence.
		{"1 before 3: If-Match fails", []string{"If-Match", `"r2d2xxxx"`, "If-None-Match", x}, 412},
		{"1 then 3", []string{"If-Match", x, "If-None-Match", x}, 304},
		{"1 skips 2", []string{"If-Match", x, "If-Unmodified-Since", earlier}, 200},
		{"2 before 4", []string{"If-Unmodified-Since", earlier, "If-Modified-Since", rfcDate}, 412},
		{"3 skips 4", []string{"If-None-Match", `"r2d2xxxx"`, "If-Modified-Since", rfcDate}, 200},
		{"3 before 5", []string{"If-None-Match", x, "Range", "bytes=0-9"}, 304},
		{"4 before 5", []string{"If-Modified-Since", rfcDate, "Range", "bytes=0-9"}, 304},
		// §13.1.5 If-Range.
		{"If-Range tag", []string{"If-Range", x, "Range", "bytes=0-9"}, 206},
		{"If-Range other tag", []string{"If-Range", `"r2d2xxxx"`, "Range", "bytes=0-9"}, 200},
		{"If-Range weak tag", []string{"If-Range", weak, "Range", "bytes=0-9"}, 200},
		{"If-Range date", []string{"If-Range", rfcDate, "Range", "bytes=0-9"}, 206},
		{"If-Range later date", []string{"If-Range", later, "Range", "bytes=0-9"}, 200},
		{"If-Range without Range", []string{"If-Range", x}, 200},
	}
	for _, tt := range tests {
		resp, body := sluicetest.Get(t, base+"/r10000.bin", tt.fields...)
		if resp.StatusCode != tt.want {
			t.Errorf("%s (%q) = %d, want %d", tt.name, tt.fields, resp.StatusCode, tt.want)
			continue
		}
		switch tt.want {
		case 200:
			if len(body) != 10000 {
				t.Errorf("%s: %d bytes, want 10000", tt.name, len(body))
			}
		case 304:
			if body != "" || resp.Header.Get("ETag") != x {
				t.Errorf("%s: 304 with body %q, ETag %q", tt.name, body, resp.Header.Get("ETag"))
			}
		}
	}
	// HEAD gets the same answers as GET.
	resp, _ := sluicetest.Send(t, "HEAD", base+"/r10000.bin", "If-None-Match", x)
	if resp.StatusCode != 304 {
		t.Errorf("HEAD with If-None-Match = %d, want 304", resp.StatusCode)
	}
	resp, _ = sluicetest.Send(t, "HEAD", base+"/r10000.bin", "If-Match", `"r2d2xxxx"`)
	if resp.StatusCode != 412 {
		t.Errorf("HEAD with a failing If-Match = %d, want 412", resp.StatusCode)
	}
}

// The byte range examples of RFC 9110 §14.1.2, §14.4, §15.3.7 and
// §15.5.17.
func TestRFC9110Ranges(t *testing.T) {
	base, _ := rfcSite(t)
	content := map[string][]byte{
		"r10000.bin": rfcContent(10000), "r1234.bin": rfcContent(1234),
		"r47022.bin": rfcContent(47022), "example.pdf": rfcContent(8000),
	}
	single := []struct {
		file, rng, crange string
	}{
		// §14.1.2
		{"r10000.bin", "bytes=0-499", "bytes 0-499/10000"},
		{"r10000.bin", "bytes=500-999", "bytes 500-999/10000"},
		{"r10000.bin", "bytes=-500", "bytes 9500-9999/10000"},
		{"r10000.bin", "bytes=9500-", "bytes 9500-9999/10000"},
		{"r10000.bin", "bytes=500-600,601-999", "bytes 500-999/10000"},
		{"r10000.bin", "bytes=500-700,601-999", "bytes 500-999/10000"},
		// §14.4 and §15.3.7.1
		{"r1234.bin", "bytes=42-1233", "bytes 42-1233/1234"},
		{"r47022.bin", "bytes=21010-47021", "bytes 21010-47021/47022"},
		// Beyond the end: clamped. Unit case-insensitive, spaces allowed.
		{"r1234.bin", "bytes=1000-99999", "bytes 1000-1233/1234"},
		{"r1234.bin", "BYTES= 0-1 , 2-3", "bytes 0-3/1234"},
		{"r1234.bin", "bytes=-99999", "bytes 0-1233/1234"},
	}
	for _, tt := range single {
		resp, body := sluicetest.Get(t, base+"/"+tt.file, "Range", tt.rng)
		var first, last, size int
		if resp.StatusCode != 206 || resp.Header.Get("Content-Range") != tt.crange {
			t.Errorf("%s %s = %d Content-Range %q, want 206 %q", tt.file, tt.rng, resp.StatusCode, resp.Header.Get("Content-Range"), tt.crange)
			continue
		}
		if _, err := sscanRange(tt.crange, &first, &last, &size); err != nil {
			t.Fatal(err)
		}
		if want := content[tt.file][first : last+1]; body != string(want) || resp.ContentLength != int64(len(want)) {
			t.Errorf("%s %s: %d bytes (Content-Length %d), want %d", tt.file, tt.rng, len(body), resp.ContentLength, len(want))
		}
	}

	// §15.3.7.1: "Content-Range: bytes 21010-47021/47022", "Content-Length: 26012".
	resp, _ := sluicetest.Get(t, base+"/r47022.bin", "Range", "bytes=21010-47021")
	if resp.ContentLength != 26012 {
		t.Errorf("§15.3.7.1: Content-Length %d, want 26012", resp.ContentLength)
	}

	// §15.3.7.2: two parts of an 8000-byte application/pdf.
	resp, body := sluicetest.Get(t, base+"/example.pdf", "Range", "bytes=500-999,7000-7999")
	parts := rfcParts(t, resp, body)
	want := []struct{ crange, body string }{
		{"bytes 500-999/8000", string(content["example.pdf"][500:1000])},
		{"bytes 7000-7999/8000", string(content["example.pdf"][7000:8000])},
	}
	if len(parts) != len(want) {
		t.Fatalf("§15.3.7.2: %d parts, want %d", len(parts), len(want))
	}
	for i, p := range parts {
		if p.ctype != "application/pdf" || p.crange != want[i].crange || p.body != want[i].body {
			t.Errorf("§15.3.7.2 part %d: %q %q, %d bytes; want application/pdf %q, %d bytes", i, p.ctype, p.crange, len(p.body), want[i].crange, len(want[i].body))
		}
	}

	// §14.1.2: "bytes=0-0,-1", the first and last bytes only.
	resp, body = sluicetest.Get(t, base+"/r10000.bin", "Range", "bytes=0-0,-1")
	parts = rfcParts(t, resp, body)
	if len(parts) != 2 || parts[0].body != "a" || parts[1].body != string(content["r10000.bin"][9999:]) ||
		parts[1].crange != "bytes 9999-9999/10000" {
		t.Errorf("bytes=0-0,-1: parts %+v", parts)
	}

	// §15.5.17 and §14.4: 416 with "Content-Range: bytes */47022".
	for _, rng := range []string{"bytes=47022-", "bytes=50000-50001", "bytes=-0", "bytes=47022-47022, 99999-"} {
		resp, _ := sluicetest.Get(t, base+"/r47022.bin", "Range", rng)
		if resp.StatusCode != 416 || resp.Header.Get("Content-Range") != "bytes */47022" {
			t.Errorf("%s = %d Content-Range %q, want 416 bytes */47022", rng, resp.StatusCode, resp.Header.Get("Content-Range"))
		}
	}

	// Ignored (200, whole file): other units, invalid syntax (§14.1.1:
	// last-pos before first-pos), and Range on HEAD (§14.2).
	for _, rng := range []string{"items=0-1", "bytes=5-1", "bytes=a-b", "bytes=", "bytes 0-1", "bytes=0-1;x"} {
		resp, body := sluicetest.Get(t, base+"/r1234.bin", "Range", rng)
		if resp.StatusCode != 200 || len(body) != 1234 {
			t.Errorf("%q = %d, %d bytes, want 200 with the whole file", rng, resp.StatusCode, len(body))
		}
	}
	resp, _ = sluicetest.Send(t, "HEAD", base+"/r1234.bin", "Range", "bytes=0-1")
	if resp.StatusCode != 200 || resp.ContentLength != 1234 {
		t.Errorf("HEAD with Range = %d, Content-Length %d; want 200, 1234", resp.StatusCode, resp.ContentLength)
	}
}

// Ranges cannot make the response much larger than the file: overlapping
// ranges are merged and too many ranges get the whole file.
func TestRangeAmplificationBounded(t *testing.T) {
	base, _ := rfcSite(t)
	many := func(n int, f func(i int) string) string {
		var specs []string
		for i := range n {
			specs = append(specs, f(i))
		}
		return "bytes=" + strings.Join(specs, ",")
	}
	tests := []struct {
		name   string
		rng    string
		status int
		maxLen int64
	}{
		{"the whole file 500 times", many(500, func(int) string { return "0-" }), 206, 10000},
		{"overlapping", many(300, func(i int) string { return itoa(i) + "-" + itoa(9000+i) }), 206, 10000},
		{"many small gaps merged", many(400, func(i int) string { return itoa(i*20) + "-" + itoa(i*20+1) }), 206, 10000},
		{"17 distant ranges", many(17, func(i int) string { return itoa(i*500) + "-" + itoa(i*500) }), 200, 10000},
		{"16 distant ranges", many(16, func(i int) string { return itoa(i*500) + "-" + itoa(i*500) }), 206, 16 * 200},
		{"too many specs", many(1001, func(int) string { return "0-0" }), 200, 10000},
	}
	for _, tt := range tests {
		resp, body := sluicetest.Get(t, base+"/r10000.bin", "Range", tt.rng)
		if resp.StatusCode != tt.status || int64(len(body)) > tt.maxLen+2000 {
			t.Errorf("%s: %d with %d bytes, want %d with at most %d", tt.name, resp.StatusCode, len(body), tt.status, tt.maxLen+2000)
		}
	}
}

type rfcPart struct{ ctype, crange, body string }

// rfcParts reads a multipart/byteranges response.
func rfcParts(t *testing.T, resp *http.Response, body string) []rfcPart {
	t.Helper()
	mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != 206 || err != nil || mt != "multipart/byteranges" || params["boundary"] == "" {
		t.Fatalf("= %d %q, want 206 multipart/byteranges", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp.ContentLength != int64(len(body)) {
		t.Errorf("Content-Length %d, body %d bytes", resp.ContentLength, len(body))
	}
	mr := multipart.NewReader(bytes.NewReader([]byte(body)), params["boundary"])
	var parts []rfcPart
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return parts
		}
		if err != nil {
			t.Fatalf("multipart: %v", err)
		}
		b, _ := io.ReadAll(p)
		parts = append(parts, rfcPart{p.Header.Get("Content-Type"), p.Header.Get("Content-Range"), string(b)})
	}
}

func sscanRange(s string, first, last, size *int) (int, error) {
	return fmt.Sscanf(s, "bytes %d-%d/%d", first, last, size)
}

func itoa(i int) string { return strconv.Itoa(i) }

// Parts follow the order the ranges were asked in (RFC 9110 §15.3.7.2),
// a merged range standing where its first member was.
func TestMultipartKeepsRequestOrder(t *testing.T) {
	base, _ := rfcSite(t)
	resp, body := sluicetest.Get(t, base+"/r10000.bin", "Range", "bytes=9000-9001,0-1,5000-5001,9002-9003")
	var got []string
	for _, p := range rfcParts(t, resp, body) {
		got = append(got, p.crange)
	}
	want := []string{"bytes 9000-9003/10000", "bytes 0-1/10000", "bytes 5000-5001/10000"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("parts %q, want %q", got, want)
	}
}
