package config

import (
	"bufio"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// The routing property (issue 14, finding 1): for any path and any
// equivalent spelling of it — dot segments, repeated slashes, percent-
// encoded characters in either case, "%2e" — the route chosen and the
// answer given are those of the canonical spelling; spellings that cannot
// be made canonical safely are refused with 400. Tested over a real
// socket against a config as the docs suggest: /admin/ behind basic_auth
// and / serving the same root, plus a CGI directory inside that root.

// routingSite builds the document root and the config serving it, and
// returns a client of the server.
func routingSite(t testing.TB) *routingClient {
	t.Helper()
	root := t.TempDir()
	for name, content := range map[string]string{
		"index.html":        "root index\n",
		"admin/secret.html": "ADMIN SECRET\n",
		"admin/index.html":  "ADMIN INDEX\n",
		"pub/a.txt":         "public a\n",
		"pub/x y.txt":       "public x y\n",
		".env":              "DOTENV SECRET\n",
		"cgi-bin/show.cgi":  "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nran %s|%s\\n' \"$SCRIPT_NAME\" \"${PATH_INFO-}\"\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	text := fmt.Sprintf(`
routes:
  - match: /admin/
    pipeline:
      - basic_auth: {realm: admin, htpasswd: %[1]q}
      - files: %[2]q
  - match: /cgi-bin/
    pipeline:
      - cgi: {dir: %[3]q, prefix: /cgi-bin}
  - match: /
    pipeline:
      - files: %[2]q
`, filepath.Join("testdata", "users.htpasswd"), root, filepath.Join(root, "cgi-bin"))
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := testLoader().Parse(filepath.Join(wd, "routing.yaml"), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cfg.Close() }) // after the server's shutdown
	srv := sluicetest.NewServer(t, cfg.Handler())
	rc := &routingClient{addr: srv.Addr}
	t.Cleanup(rc.close) // before the server's shutdown
	return rc
}

// routingClient sends requests on one keep-alive connection, dialling
// again after a response that closes it (a 400 does), so that thousands
// of requests do not use up the loopback's ports.
type routingClient struct {
	addr string
	c    net.Conn
	br   *bufio.Reader
}

// close closes the connection with a reset rather than a FIN, so that
// neither end keeps it in TIME-WAIT: a fuzzer making thousands of
// refused requests would otherwise use up the ephemeral ports.
func (rc *routingClient) close() {
	if rc.c != nil {
		rc.c.(*net.TCPConn).SetLinger(0)
		rc.c.Close()
		rc.c = nil
	}
}

// get sends GET target and returns the response's status code and body.
func (rc *routingClient) get(t testing.TB, target string) (int, string) {
	t.Helper()
	if rc.c == nil {
		c, err := net.Dial("tcp", rc.addr)
		if err != nil {
			t.Fatal(err)
		}
		rc.c, rc.br = c, bufio.NewReader(c)
	}
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(rc.c, "GET "+target+" HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	resp, b := sluicetest.ReadResponse(t, rc.br, "GET")
	if resp.Close {
		rc.close()
	}
	return resp.StatusCode, b
}

// routingSegments are the names random paths are made of: those of the
// site, a missing one, and names that need percent-encoding.
var routingSegments = []string{"admin", "secret.html", "index.html", "pub", "a.txt", "x y.txt", "cgi-bin", "show.cgi", ".env", "missing", "~u", "a;b"}

// routingPaths are paths of the site, each route's.
var routingPaths = []string{
	"/admin/secret.html", "/admin/", "/admin", "/admin/index.html", "/cgi-bin/show.cgi", "/cgi-bin/show.cgi/a;b/",
	"/cgi-bin/show.cgi/~u", "/cgi-bin/", "/pub/a.txt", "/pub/x y.txt", "/pub", "/index.html", "/.env", "/",
}

// randomPath returns a canonical path: half of the time one of the site's,
// else up to four random segments, with or without a trailing slash.
func randomPath(rng *rand.Rand) string {
	if rng.Intn(2) == 0 {
		return routingPaths[rng.Intn(len(routingPaths))]
	}
	var b strings.Builder
	for range rng.Intn(5) {
		b.WriteString("/" + routingSegments[rng.Intn(len(routingSegments))])
	}
	if b.Len() == 0 || rng.Intn(3) == 0 {
		b.WriteByte('/')
	}
	return b.String()
}

// encodeCanonical is the plainest spelling of a canonical path: each
// byte that may not appear in a path segment as it is, percent-encoded.
func encodeCanonical(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if c := p[i]; c == '/' || isUnreserved(c) || strings.IndexByte("!$&'()*+,;=:@", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0
}

// respell returns another spelling of the canonical path p: each segment
// with some of its bytes percent-encoded (hex digits in random case) and
// preceded by any of repeated slashes, "." segments (or "%2e"), and
// detours through a segment and "..". A trailing slash may be spelled
// "/.", "//" or "/x/..".
func respell(rng *rand.Rand, p string) string {
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	trailing := strings.HasSuffix(p, "/")
	if trailing {
		segs = segs[:len(segs)-1]
	}
	var b strings.Builder
	noise := func() {
		for range rng.Intn(3) {
			switch rng.Intn(4) {
			case 0:
				b.WriteString("/")
			case 1:
				b.WriteString("/" + spellSegment(rng, "."))
			case 2:
				b.WriteString("/" + spellSegment(rng, routingSegments[rng.Intn(len(routingSegments))]) + "/" + spellSegment(rng, ".."))
			case 3:
				b.WriteString("/" + spellSegment(rng, "x") + "//" + spellSegment(rng, ".."))
			}
		}
	}
	for _, s := range segs {
		noise()
		b.WriteString("/" + spellSegment(rng, s))
	}
	if trailing {
		noise()
		switch rng.Intn(4) {
		case 0:
			b.WriteString("/")
		case 1:
			b.WriteString("/" + spellSegment(rng, "."))
		case 2:
			b.WriteString("//")
		case 3:
			b.WriteString("/" + spellSegment(rng, "pub") + "/" + spellSegment(rng, ".."))
		}
	}
	return b.String()
}

// spellSegment percent-encodes a random choice of the bytes of s (all of
// those that must be), each hex digit in upper or lower case.
func spellSegment(rng *rand.Rand, s string) string {
	const upper, lower = "0123456789ABCDEF", "0123456789abcdef"
	digit := func(d byte) byte {
		if rng.Intn(2) == 0 {
			return lower[d]
		}
		return upper[d]
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if encodeCanonical(string(c)) == string(c) && rng.Intn(3) != 0 {
			b.WriteByte(c)
			continue
		}
		b.Write([]byte{'%', digit(c >> 4), digit(c & 15)})
	}
	return b.String()
}

// checkSpelling asserts the routing property for one spelling of the
// canonical path p.
func checkSpelling(t *testing.T, rc *routingClient, p, spelling string, want func(string) (int, string)) {
	t.Helper()
	wantCode, wantBody := want(p)
	code, body := rc.get(t, spelling)
	if code != wantCode || body != wantBody {
		t.Errorf("GET %s = %d %q; its canonical spelling %s = %d %q", spelling, code, body, encodeCanonical(p), wantCode, wantBody)
	}
	if strings.HasPrefix(p, "/admin/") && code != 401 {
		t.Errorf("GET %s (canonical %s) = %d, want 401: /admin/ is behind basic_auth", spelling, p, code)
	}
	if strings.Contains(body, "#!/bin/sh") {
		t.Errorf("GET %s (canonical %s) served the CGI program's source", spelling, p)
	}
}

func TestRoutingCanonicalProperty(t *testing.T) {
	rc := routingSite(t)
	type answer struct {
		code int
		body string
	}
	answers := map[string]answer{} // canonical path → its answer
	want := func(p string) (int, string) {
		a, ok := answers[p]
		if !ok {
			a.code, a.body = rc.get(t, encodeCanonical(p))
			answers[p] = a
		}
		return a.code, a.body
	}

	// The spellings of issue 14, then random ones.
	for spelling, p := range map[string]string{
		"//admin/secret.html":         "/admin/secret.html",
		"/./admin/secret.html":        "/admin/secret.html",
		"/%2e/admin/secret.html":      "/admin/secret.html",
		"/pub/../admin/secret.html":   "/admin/secret.html",
		"/pub/%2E%2e/admin/":          "/admin/",
		"/%61dmin/secret.html":        "/admin/secret.html",
		"//cgi-bin/show.cgi":          "/cgi-bin/show.cgi",
		"/./cgi-bin/show.cgi/x/../y/": "/cgi-bin/show.cgi/y/",
		"/%63gi-bin/show.cgi":         "/cgi-bin/show.cgi",
		"/pub/..":                     "/",
	} {
		checkSpelling(t, rc, p, spelling, want)
	}
	rng := rand.New(rand.NewSource(14))
	seen := map[string]int{} // how often each kind of answer came up
	for range 200 {
		p := randomPath(rng)
		for range 2 {
			checkSpelling(t, rc, p, respell(rng, p), want)
		}
		switch code, body := want(p); {
		case code == 401:
			seen["basic_auth"]++
		case strings.HasPrefix(body, "ran "):
			seen["cgi"]++
		case code == 200:
			seen["files"]++
		default:
			seen[fmt.Sprint(code)]++
		}
	}
	for _, kind := range []string{"basic_auth", "cgi", "files", "404"} {
		if seen[kind] == 0 {
			t.Errorf("no random path was answered by %s (answers: %v): the generator misses a route", kind, seen)
		}
	}
	t.Logf("answers to random paths: %v", seen)

	// What cannot be made canonical safely is refused.
	for _, target := range []string{
		"/..", "/../admin/secret.html", "/pub/../../admin/secret.html", "/%2e%2e/index.html", "//..//admin/",
		"/admin%2fsecret.html", "/pub%2F..%2Fadmin/secret.html", "/admin/secret.html%00", "/a%zz",
	} {
		if code, body := rc.get(t, target); code != 400 {
			t.Errorf("GET %s = %d %q, want 400", target, code, body)
		}
	}
}

// FuzzRoutingSpelling sends arbitrary paths: each is refused with 400 or
// answered as its canonical spelling is.
func FuzzRoutingSpelling(f *testing.F) {
	rng := rand.New(rand.NewSource(1))
	for range 20 {
		f.Add(respell(rng, randomPath(rng)))
	}
	f.Add("/pub/../../admin/")
	f.Add("/admin%2Fsecret.html")
	rc := routingSite(f)
	f.Fuzz(func(t *testing.T, raw string) {
		// A path of request-target characters, short enough that neither
		// it nor its canonical spelling meets the target limit (414).
		if !strings.HasPrefix(raw, "/") || len(raw) > 1000 ||
			strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '#' || r == '?' }) {
			return
		}
		p, ok := refCanonical(raw)
		if !ok {
			if code, body := rc.get(t, raw); code != 400 {
				t.Fatalf("GET %s = %d %q, want 400", raw, code, body)
			}
			return
		}
		checkSpelling(t, rc, p, raw, func(p string) (int, string) { return rc.get(t, encodeCanonical(p)) })
	})
}

// refCanonical is the canonical path of a raw path by the rules of
// docs/security.md, built on net/url and path.Clean (pipe.CanonicalPattern):
// ok is false for what the engine refuses.
func refCanonical(raw string) (string, bool) {
	if strings.Contains(strings.ToLower(raw), "%2f") {
		return "", false
	}
	decoded, err := url.PathUnescape(raw)
	if err != nil || strings.IndexByte(decoded, 0) >= 0 {
		return "", false
	}
	depth := 0
	for _, s := range strings.Split(decoded, "/") {
		switch s {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return "", false
			}
		default:
			depth++
		}
	}
	return pipe.CanonicalPattern(decoded), true
}
