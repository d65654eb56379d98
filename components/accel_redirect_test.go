package components

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// accelApp is an application answering with the X-Accel-Redirect or
// X-Sendfile field the request's X-Test-Accel or X-Test-Sendfile field
// asks for, a cookie, a disposition and a body of its own.
var accelApp = pipe.Source(func(c *pipe.Conn) pipe.Content {
	h := c.Header()
	if v := c.Request.Header("X-Test-Accel"); v != nil {
		h.Set("X-Accel-Redirect", string(v))
	}
	if v := c.Request.Header("X-Test-Sendfile"); v != nil {
		h.Set("X-Sendfile", string(v))
	}
	h.Set("Content-Type", "text/html")
	h.Set("Set-Cookie", "seen=1")
	h.Set("Content-Disposition", `attachment; filename="report.bin"`)
	h.Set("ETag", `"app"`)
	body := []byte("the application's own body\n")
	h.SetContentLength(int64(len(body)))
	return func(w pipe.Writer) error {
		_, err := w.Write(body)
		return err
	}
})

// accelSite makes the private roots and a secret outside them, and
// serves the application behind accel_redirect; it returns the URL, the
// big file's content and the log.
func accelSite(t *testing.T) (url, dir string, big []byte, log *sluicetest.Buffer) {
	t.Helper()
	dir = t.TempDir()
	private, exports := filepath.Join(dir, "private"), filepath.Join(dir, "exports")
	for _, d := range []string{private, filepath.Join(private, "sub"), exports} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	big = bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320 KB: sent with sendfile
	write := func(name string, data []byte) {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(private, "big.zip"), big)
	write(filepath.Join(private, "sub", "a b.txt"), []byte("spaced\n"))
	write(filepath.Join(private, ".secret"), []byte("dotfile\n"))
	write(filepath.Join(exports, "e.csv"), []byte("a,b\n"))
	write(filepath.Join(dir, "outside.txt"), []byte("outside\n"))
	if err := os.Symlink(filepath.Join(dir, "outside.txt"), filepath.Join(private, "link.txt")); err != nil {
		t.Fatal(err)
	}
	sluicetest.Backdate(t, dir, time.Hour)
	logger, buf := sluicetest.Logger()
	accel, err := NewAccelRedirect(AccelRedirectOptions{
		Locations: map[string]string{"/protected/": private},
		Sendfile:  []string{exports},
		Logger:    logger,
	})
	srv := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{accelApp, builtinComp(t, accel, err)}))
	t.Cleanup(func() { accel.(*AccelRedirect).Close() })
	return srv.URL, dir, big, buf
}

func TestAccelRedirectServesTheFile(t *testing.T) {
	url, dir, big, _ := accelSite(t)
	resp, body := builtinDo(t, "GET", url+"/download", nil, "X-Test-Accel", "/protected/big.zip")
	if resp.StatusCode != 200 || !bytes.Equal(body, big) {
		t.Fatalf("%d, %d bytes; want 200 and the file's %d", resp.StatusCode, len(body), len(big))
	}
	for name, want := range map[string]string{
		"X-Accel-Redirect":    "",
		"X-Sendfile":          "",
		"Content-Type":        "application/zip",
		"Set-Cookie":          "seen=1",
		"Content-Disposition": `attachment; filename="report.bin"`,
		"Accept-Ranges":       "bytes",
	} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	etag := resp.Header.Get("ETag")
	if etag == "" || etag == `"app"` || resp.Header.Get("Last-Modified") == "" {
		t.Errorf("ETag %q, Last-Modified %q: want the file's", etag, resp.Header.Get("Last-Modified"))
	}

	// A range of it.
	resp, body = builtinDo(t, "GET", url+"/download", nil, "X-Test-Accel", "/protected/big.zip", "Range", "bytes=100-199")
	if resp.StatusCode != 206 || !bytes.Equal(body, big[100:200]) || resp.Header.Get("Content-Range") != "bytes 100-199/320000" {
		t.Errorf("range: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Range"), body)
	}
	// The client's validator: 304.
	resp, body = builtinDo(t, "GET", url+"/download", nil, "X-Test-Accel", "/protected/big.zip", "If-None-Match", etag)
	if resp.StatusCode != 304 || len(body) != 0 {
		t.Errorf("If-None-Match: %d %q", resp.StatusCode, body)
	}
	// HEAD: the GET's fields, no body.
	resp, body = builtinDo(t, "HEAD", url+"/download", nil, "X-Test-Accel", "/protected/big.zip")
	if resp.StatusCode != 200 || resp.ContentLength != int64(len(big)) || len(body) != 0 {
		t.Errorf("HEAD: %d length %d body %q", resp.StatusCode, resp.ContentLength, body)
	}
	// A POST that the application answers with a file gets the file.
	resp, body = builtinDo(t, "POST", url+"/download", strings.NewReader("x=1"), "X-Test-Accel", "/protected/sub/a%20b.txt?ignored=1")
	if resp.StatusCode != 200 || string(body) != "spaced\n" || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("POST, encoded name: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	// X-Sendfile names a file under a sendfile directory.
	resp, body = builtinDo(t, "GET", url+"/export", nil, "X-Test-Sendfile", filepath.Join(dir, "exports", "e.csv"))
	if resp.StatusCode != 200 || string(body) != "a,b\n" || resp.Header.Get("X-Sendfile") != "" {
		t.Errorf("X-Sendfile: %d %q %v", resp.StatusCode, body, resp.Header)
	}
}

func TestAccelRedirectWithoutFieldLeavesResponse(t *testing.T) {
	url, _, _, _ := accelSite(t)
	resp, body := builtinDo(t, "GET", url+"/", nil)
	if resp.StatusCode != 200 || string(body) != "the application's own body\n" || resp.Header.Get("ETag") != `"app"` {
		t.Errorf("%d %q %q", resp.StatusCode, resp.Header.Get("ETag"), body)
	}
}

// Every field naming something outside the roots, or spelt to climb out
// of one, is refused: 404, logged, the secret not sent, the field not
// leaked.
func TestAccelRedirectRefuses(t *testing.T) {
	url, dir, _, log := accelSite(t)
	for _, tc := range []struct{ field, value string }{
		{"X-Test-Accel", "/elsewhere/big.zip"},
		{"X-Test-Accel", "/protected/../outside.txt"},
		{"X-Test-Accel", "/protected/%2e%2e/outside.txt"},
		{"X-Test-Accel", "/protected/sub/%2e%2e/%2e%2e/outside.txt"},
		{"X-Test-Accel", "/protected/..%2foutside.txt"},
		{"X-Test-Accel", "/protected/sub%2f..%2f..%2foutside.txt"},
		{"X-Test-Accel", "/protected/..\\outside.txt"},
		{"X-Test-Accel", "/protected/.%2e/outside.txt"},
		{"X-Test-Accel", "/protected//big.zip"},
		{"X-Test-Accel", "/protected/./big.zip"},
		{"X-Test-Accel", "/protected/big.zip%00.txt"},
		{"X-Test-Accel", "/protected/big.zip%0a"},
		{"X-Test-Accel", "/protected/big.zip%"},
		{"X-Test-Accel", "/protected/link.txt"}, // a symbolic link out of the root
		{"X-Test-Accel", "/protected/.secret"},
		{"X-Test-Accel", "/protected/sub"}, // a directory
		{"X-Test-Accel", "/protected/sub/"},
		{"X-Test-Accel", "/protected/"},
		{"X-Test-Accel", "protected/big.zip"},
		{"X-Test-Accel", "/protected/missing.zip"},
		{"X-Test-Sendfile", "/etc/passwd"},
		{"X-Test-Sendfile", "relative/e.csv"},
		{"X-Test-Sendfile", dir + "/outside.txt"},
		{"X-Test-Sendfile", dir + "/exports/../outside.txt"},
		{"X-Test-Sendfile", dir + "/exports"},
		{"X-Test-Sendfile", dir + "/exports/"},
		{"X-Test-Sendfile", dir + "/exportsx/e.csv"},
		{"X-Test-Sendfile", dir + "/exports/e\t.csv"},
	} {
		resp, body := builtinDo(t, "GET", url+"/download", nil, tc.field, tc.value)
		if resp.StatusCode != 404 || strings.Contains(string(body), "outside") || strings.Contains(string(body), "dotfile") ||
			strings.Contains(string(body), "application's") || resp.Header.Get("X-Accel-Redirect") != "" || resp.Header.Get("X-Sendfile") != "" ||
			resp.Header.Get("Content-Disposition") != "" || resp.Header.Get("Set-Cookie") != "seen=1" {
			t.Errorf("%s: %s: %d %q %v", tc.field, tc.value, resp.StatusCode, body, resp.Header)
		}
	}
	if n := strings.Count(log.String(), "accel_redirect: refused"); n < 15 {
		t.Errorf("%d refusals logged, want one per field refused before the file system:\n%s", n, log)
	}
}

func TestAccelRedirectOptions(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/", filepath.Join(dir, "root-link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opts AccelRedirectOptions
		want string
	}{
		{AccelRedirectOptions{}, "nothing may be served"},
		{AccelRedirectOptions{Locations: map[string]string{"/p": dir}}, "must be a canonical path"},
		{AccelRedirectOptions{Locations: map[string]string{"p/": dir}}, "must be a canonical path"},
		{AccelRedirectOptions{Locations: map[string]string{"/a/../": dir}}, "must be a canonical path"},
		{AccelRedirectOptions{Locations: map[string]string{"/p/": "relative"}}, "not absolute"},
		{AccelRedirectOptions{Sendfile: []string{dir + "/missing"}}, "missing"},
		{AccelRedirectOptions{Sendfile: []string{"/"}}, "system directory"},
		{AccelRedirectOptions{Sendfile: []string{"/etc/"}}, "system directory"},
		{AccelRedirectOptions{Sendfile: []string{"/var/./"}}, "system directory"},
		{AccelRedirectOptions{Locations: map[string]string{"/p/": "/"}}, "system directory"},
		{AccelRedirectOptions{Sendfile: []string{dir + "/root-link"}}, "system directory"},
	} {
		_, err := NewAccelRedirect(tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// Whatever an application puts in the fields, the path looked up is a
// canonical path beneath one root: no "..", ".", empty segment, NUL,
// backslash or control byte.
func FuzzAccelRedirectValue(f *testing.F) {
	for _, s := range []string{"/protected/a.zip", "/protected/%2e%2e/x", "/protected/a%2fb", "/protected/a%00", "/srv/x/../y", "/protected/a?b=1", "/protected/%", "/srv/exports/e.csv"} {
		f.Add(s)
	}
	a := &AccelRedirect{
		locs:     []accelRoot{{prefix: "/protected/deep/"}, {prefix: "/protected/"}},
		sendfile: []accelRoot{{prefix: "/srv/exports/"}},
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, m := range []func(string) (*accelRoot, string, string){a.mapAccel, a.mapSendfile} {
			root, p, why := m(v)
			if root == nil {
				if why == "" {
					t.Fatalf("%q refused without a reason", v)
				}
				continue
			}
			if !accelCanonical(p) {
				t.Fatalf("%q maps to %q under %q: not canonical", v, p, root.prefix)
			}
			for _, c := range []byte(p) {
				if c < 0x20 || c == 0x7f {
					t.Fatalf("%q maps to %q: a control byte", v, p)
				}
			}
		}
	})
}
