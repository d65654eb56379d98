package files_test

import (
	"bufio"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/sluicetest"
)

// fuzzCanary is the content of the files outside the root; no response
// may ever contain it.
const fuzzCanary = "CANARY-b1e5f0c3-outside-the-root"

// FuzzServePath sends random request targets to a Server over a real
// socket and checks that no response carries a file from outside the
// root: neither by "..", encoded dots, slashes or backslashes, NUL, nor by
// the symbolic links in the root that point out of it. Targets are the
// fuzzer's bytes with those not allowed in a request-target
// percent-encoded, so '%' sequences of its own choosing reach the server
// as they are.
func FuzzServePath(f *testing.F) {
	outer := f.TempDir()
	writeFiles(f, outer, map[string]string{
		"canary.txt":          fuzzCanary,
		"secret/canary.txt":   fuzzCanary,
		"root/index.html":     indexHTML,
		"root/a/b/c.txt":      "c",
		"root/.env":           fuzzCanary[:6], // a dotfile: hidden, but not the canary
		"root/.well-known/x":  "x",
		"rootx/canary.txt":    fuzzCanary, // shares the root's name as a prefix
		"root/a/.git/HEAD":    "ref",
		"root/a/b/index.html": "b index",
	})
	root := filepath.Join(outer, "root")
	for name, target := range map[string]string{
		"up.txt": "../canary.txt", "abs.txt": filepath.Join(outer, "canary.txt"),
		"secret": "../secret", "a/b/deep": "../../../secret", "loop": "loop",
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			f.Fatal(err)
		}
	}
	addr := hostOf(serveDir(f, root, files.Options{Browse: true}))
	for _, seed := range []string{
		"/../canary.txt", "/%2e%2e/canary.txt", "/%2E%2e%2fcanary.txt", "/..%5ccanary.txt", "/a/b/../../../canary.txt",
		"/up.txt", "/abs.txt", "/secret/canary.txt", "/a/b/deep/canary.txt", "/../rootx/canary.txt", "/%00/../canary.txt",
		"/.%2e/canary.txt", "//../canary.txt", "/a/%2e%2e/%2e%2e/canary.txt", "/\\..\\canary.txt", "/loop", "/secret/",
		"/a/b/deep/", "http://x/../canary.txt", "/./.well-known/../../canary.txt", "/%252e%252e/canary.txt",
	} {
		f.Add(seed)
	}
	var kc fuzzConn
	defer kc.close()
	f.Fuzz(func(t *testing.T, p string) {
		target := fuzzTarget(p)
		status, raw := kc.get(t, addr, target)
		if strings.Contains(raw, fuzzCanary) {
			t.Fatalf("GET %s served a file outside the root:\n%s", target, raw)
		}
		switch status {
		case 200, 301, 400, 403, 404, 414, 431:
		default:
			t.Fatalf("GET %s = %d:\n%s", target, status, raw)
		}
	})
}

// fuzzConn is a keep-alive connection, dialled again when the server
// closes it, so the fuzzer does not run out of ports.
type fuzzConn struct {
	c  net.Conn
	br *bufio.Reader
}

// get sends GET target and returns the status and the response's header
// and body as text.
func (k *fuzzConn) get(t *testing.T, addr, target string) (int, string) {
	if k.c == nil {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		k.c, k.br = c, bufio.NewReader(c)
	}
	k.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(k.c, "GET "+target+" HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, body := sluicetest.ReadResponse(t, k.br, "GET")
	if resp.Close {
		k.close()
	}
	var b strings.Builder
	resp.Header.Write(&b)
	b.WriteString(body)
	return resp.StatusCode, b.String()
}

func (k *fuzzConn) close() {
	if k.c != nil {
		k.c.Close()
		k.c = nil
	}
}

// fuzzTarget makes a request-target from arbitrary bytes: a leading '/'
// unless it is one already, and every byte that may not appear raw
// percent-encoded ('%' stays, so the fuzzer writes its own escapes).
func fuzzTarget(p string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "http://") {
		b.WriteByte('/')
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			strings.IndexByte("-._~!$&'()*+,;=:@/%?", c) >= 0:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}
