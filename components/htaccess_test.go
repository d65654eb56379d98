package components

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// htaTree writes files (path → content) under a new temporary root.
func htaTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// htaServe serves an htaccess component with a hand-moved clock in front
// of a source, behind a trusted loopback proxy so that tests can pose as
// any client with X-Forwarded-For.
func htaServe(t *testing.T, root string) (string, *atomic.Int64) {
	t.Helper()
	h, err := newHtaccess(HtaccessOptions{Root: root, TrustedProxies: []string{"127.0.0.1"}, Logger: guardQuiet})
	if err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64
	h.clock = now.Load
	return sluicetest.NewServer(t, pipe.Handler(pipe.Chain{pipe.Pipe(h.handle), guardText("content")})).URL, &now
}

func htaStatus(t *testing.T, url, path, client string) int {
	t.Helper()
	resp, _ := sluicetest.RoundTrip(t, url, "GET "+path+" HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: "+client+"\r\nConnection: close\r\n\r\n")
	return resp.StatusCode
}

func TestHtaccessTree(t *testing.T) {
	root := htaTree(t, map[string]string{
		"pub/index.html":        "public",
		"priv/.htaccess":        "# the private area\nOrder Deny,Allow\nDeny from all\nAllow from 10.1 192.168.0.0/255.255.0.0\n",
		"priv/a.html":           "private",
		"priv/sub/.htaccess":    "Options -Indexes\nAuthName \"nothing about access\"\n",
		"priv/sub/b.html":       "inherits priv",
		"priv/open/.htaccess":   "order allow,deny\nallow from all\ndeny from 10.1.2.3 2001:db8::/32\n",
		"priv/open/c.html":      "opened",
		"limit/.htaccess":       "<Limit GET POST>\n  Order Allow,Deny\n  Allow from 10.0.0.0/8\n</Limit>\n",
		"cont/.htaccess":        "Deny from \\\n  192.0.2.0/24\n",
		"broken/.htaccess":      "Order sideways\n",
		"require/.htaccess":     "Require all denied\n",
		"hostname/.htaccess":    "Deny from evil.example.com\n",
		"mutual/.htaccess":      "Order Mutual-failure\nAllow from 10.0.0.0/8\nDeny from 10.9.0.0/16\n",
		"mutual/deep/x/y/z.txt": "deep",
	})
	url, _ := htaServe(t, root)
	tests := []struct {
		path, client string
		want         int
	}{
		{"/pub/index.html", "192.0.2.1", 200},
		{"/", "192.0.2.1", 200},
		{"/priv/a.html", "192.0.2.1", 403},
		{"/priv/a.html", "10.1.77.3", 200},         // partial address 10.1
		{"/priv/a.html", "192.168.4.4", 200},       // network/netmask
		{"/priv/a.html", "2001:db8::1", 403},       // deny all covers IPv6
		{"/priv", "192.0.2.1", 403},                // the directory itself
		{"/priv/", "192.0.2.1", 403},               //
		{"/priv/missing/deeper", "192.0.2.1", 403}, // paths that do not exist
		{"//priv//a.html", "192.0.2.1", 403},
		{"/priv/sub/b.html", "192.0.2.1", 403}, // no access directives: inherits
		{"/priv/sub/b.html", "10.1.0.1", 200},
		{"/priv/open/c.html", "192.0.2.1", 200}, // the nearest file decides
		{"/priv/open/c.html", "10.1.2.3", 403},
		{"/priv/open/c.html", "2001:db8::5", 403},
		{"/limit/x", "10.2.3.4", 200}, // <Limit> lines ignored, rules kept
		{"/limit/x", "192.0.2.1", 403},
		{"/cont/x", "192.0.2.77", 403}, // continued line
		{"/cont/x", "198.51.100.1", 200},
		{"/mutual/deep/x/y/z.txt", "10.1.1.1", 200},
		{"/mutual/deep/x/y/z.txt", "10.9.1.1", 403},
		{"/mutual/deep/x/y/z.txt", "192.0.2.1", 403},
		{"/broken/x", "10.1.1.1", 500},
		{"/require/x", "10.1.1.1", 500},
		{"/hostname/x", "10.1.1.1", 500},
		{"/priv/.htaccess", "10.1.1.1", 403}, // the access files themselves
		{"/pub/.htaccess", "10.1.1.1", 403},
	}
	for _, tt := range tests {
		if got := htaStatus(t, url, tt.path, tt.client); got != tt.want {
			t.Errorf("GET %s from %s: %d, want %d", tt.path, tt.client, got, tt.want)
		}
	}
	// Dot segments: 404 as files answers them when the engine hands them
	// over, 403 when it has removed them already (/priv/a.html).
	for _, p := range []string{"/pub/../priv/a.html", "/pub/%2e%2e/priv/a.html"} {
		if got := htaStatus(t, url, p, "192.0.2.1"); got != 404 && got != 403 {
			t.Errorf("GET %s: %d, want 404 or 403", p, got)
		}
	}
}

// Files are cached: a change is seen at the next check, at most a second
// later, and not before.
func TestHtaccessReload(t *testing.T) {
	root := htaTree(t, map[string]string{"docs/page.html": "page"})
	url, now := htaServe(t, root)
	step := func(want int, what string) {
		t.Helper()
		if got := htaStatus(t, url, "/docs/page.html", "192.0.2.1"); got != want {
			t.Errorf("%s: %d, want %d", what, got, want)
		}
	}
	step(200, "no access file")
	access := filepath.Join(root, "docs", ".htaccess")
	if err := os.WriteFile(access, []byte("Deny from 192.0.2.0/24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	step(200, "new file within the second")
	now.Add(int64(time.Second))
	step(403, "new file after a second")

	// Same size, new modification time.
	if err := os.WriteFile(access, []byte("Deny from 192.0.3.0/24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	os.Chtimes(access, future, future)
	now.Add(int64(time.Second))
	step(200, "edited file")

	os.WriteFile(access, []byte("Order sideways\n"), 0o644)
	now.Add(int64(time.Second))
	step(500, "broken file")

	os.Remove(access)
	now.Add(int64(time.Second))
	step(200, "removed file")
}

// htaccess and files with the same strip_prefix see a request land in
// the same directory: /static/secret/data.txt is ROOT/secret/data.txt for
// both, so ROOT/secret/.htaccess applies (the walk went along
// ROOT/static/secret/ and never saw it).
func TestHtaccessStripPrefix(t *testing.T) {
	root := htaTree(t, map[string]string{
		"secret/.htaccess": "Order Deny,Allow\nDeny from all\nAllow from 10.0.0.0/8\n",
		"secret/data.txt":  "secret",
		"pub.txt":          "public",
	})
	h, err := newHtaccess(HtaccessOptions{Root: root, StripPrefix: "/static", TrustedProxies: []string{"127.0.0.1"}, Logger: guardQuiet})
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFiles(FilesOptions{Root: root, Options: files.Options{StripPrefix: "/static"}})
	if err != nil {
		t.Fatal(err)
	}
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{pipe.Pipe(h.handle), f})).URL
	for _, tt := range []struct {
		path, client string
		want         int
		body         string
	}{
		{"/static/secret/data.txt", "192.0.2.1", 403, "access denied"},
		{"/static/secret/data.txt", "10.1.1.1", 200, "secret"},
		{"/static//secret/./data.txt", "192.0.2.1", 403, "access denied"},
		{"/static/secret/", "192.0.2.1", 403, "access denied"},
		{"/static/secret/.htaccess", "10.1.1.1", 403, "access denied"},
		{"/static/pub.txt", "192.0.2.1", 200, "public"},
		{"/static/secret%2fdata.txt", "192.0.2.1", 400, "encoded slash"}, // refused by the engine
		{"/secret/data.txt", "192.0.2.1", 404, "no such file"},
		{"/static", "192.0.2.1", 301, ""},
	} {
		resp, body := sluicetest.RoundTrip(t, url, "GET "+tt.path+" HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: "+tt.client+"\r\nConnection: close\r\n\r\n")
		if resp.StatusCode != tt.want || !strings.Contains(body, tt.body) {
			t.Errorf("GET %s from %s: %d %q, want %d %q", tt.path, tt.client, resp.StatusCode, body, tt.want, tt.body)
		}
	}
	if _, err := NewHtaccess(HtaccessOptions{Root: root, StripPrefix: "static/"}); err == nil || !strings.Contains(err.Error(), "htaccess: strip_prefix") {
		t.Errorf("bad strip_prefix: %v", err)
	}
}

// A deep path costs a walk as deep as the tree, not one step per segment
// of the request; it is answered as files answers it (404), and nothing
// of it reaches the log (each cost 100 normal requests, got 500 and 8 KB
// of error log).
func TestHtaccessDeepPath(t *testing.T) {
	root := htaTree(t, map[string]string{
		".htaccess":  "Deny from 192.0.2.0/24\n",
		"d/page.txt": "page",
	})
	log, logged := sluicetest.Logger()
	h, err := newHtaccess(HtaccessOptions{Root: root, TrustedProxies: []string{"127.0.0.1"}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFiles(FilesOptions{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{pipe.Pipe(h.handle), f})).URL
	deep := strings.Repeat("/a", 3500)                  // 7,000 bytes: under the 8 KiB target limit
	long := "/d/" + strings.Repeat("x", 300) + "/y.txt" // a segment longer than NAME_MAX
	far := "/d" + strings.Repeat("/"+strings.Repeat("z", 250), 20)
	for _, tt := range []struct {
		path, client string
		want         int
	}{
		{deep, "10.0.0.1", 404},
		{deep, "192.0.2.1", 403}, // the rules above still apply
		{long, "10.0.0.1", 404},
		{long, "192.0.2.1", 403},
		{far, "10.0.0.1", 404},
		{"/d/page.txt", "10.0.0.1", 200},
	} {
		if got := htaStatus(t, url, tt.path, tt.client); got != tt.want {
			t.Errorf("GET %.40s… from %s: %d, want %d", tt.path, tt.client, got, tt.want)
		}
	}
	h.mu.RLock()
	n := len(h.dirs)
	h.mu.RUnlock()
	if n > 6 { // "", "a", "d", "d/xxx…", "d/zzz…", "d/page.txt"
		t.Errorf("%d directories looked at, want at most 6", n)
	}
	if s := logged.String(); s != "" {
		t.Errorf("logged %d bytes:\n%.300s", len(s), s)
	}
}

// Errors are logged once per file version, with the file's name and not
// with the request's path.
func TestHtaccessLogsOnce(t *testing.T) {
	root := htaTree(t, map[string]string{"bad/.htaccess": "Order sideways\n"})
	log, logged := sluicetest.Logger()
	h, err := newHtaccess(HtaccessOptions{Root: root, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64
	h.clock = now.Load
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{pipe.Pipe(h.handle), guardText("x")})).URL
	for i := range 3 {
		if resp, _ := sluicetest.Get(t, url+"/bad/"+strings.Repeat("q", i+1)); resp.StatusCode != 500 {
			t.Errorf("invalid file: %d", resp.StatusCode)
		}
		now.Add(int64(time.Second))
	}
	s := logged.String()
	if strings.Count(s, "invalid access file") != 1 || strings.Contains(s, "qq") {
		t.Errorf("log:\n%s", s)
	}
}

func TestHtaccessParse(t *testing.T) {
	r := parseHtaccess("ORDER  Allow,Deny\r\nALLOW FROM 10 10.1. 172.16.0.0/12 ::1 2001:db8::/48\r\ndeny from 10.0.0.0/255.0.0.0\n", "f")
	if r.err != nil || !r.access || !r.allowFirst {
		t.Fatalf("%+v", r)
	}
	want := []string{"10.0.0.0/8", "10.1.0.0/16", "172.16.0.0/12", "::1/128", "2001:db8::/48"}
	if len(r.allow) != len(want) {
		t.Fatalf("allow = %v", r.allow)
	}
	for i, p := range r.allow {
		if p != netip.MustParsePrefix(want[i]) {
			t.Errorf("allow[%d] = %v, want %s", i, p, want[i])
		}
	}
	if len(r.deny) != 1 || r.deny[0] != netip.MustParsePrefix("10.0.0.0/8") {
		t.Errorf("deny = %v", r.deny)
	}
	for _, tt := range []struct{ file, err string }{
		{"Order allow", "f:1: Order must be"},
		{"\n\nAllow 10.0.0.1", "f:3: want Allow from HOST"},
		{"Deny from", "f:1: want Deny from HOST"},
		{"Allow from 10.0.0.0/255.0.255.0", "netmask is not contiguous"},
		{"Allow from 10.0.0.256", "host names are not supported"},
		{"Allow from env=let_me_in", "env= is not supported"},
		{"Allow from example.com", "host names are not supported"},
		{"Require ip 10.0.0.1", "Require is not supported"},
		{"<RequireAll>", "<RequireAll is not supported"},
	} {
		if r := parseHtaccess(tt.file, "f"); r.err == nil || !strings.Contains(r.err.Error(), tt.err) {
			t.Errorf("parse %q: %v, want %q", tt.file, r.err, tt.err)
		}
	}
	if r := parseHtaccess("# comment\nOptions +Indexes\nRewriteEngine on\n", "f"); r.err != nil || r.access {
		t.Errorf("no access directives: %+v", r)
	}
}

func TestHtaccessOptions(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	for _, tt := range []struct {
		opts HtaccessOptions
		err  string
	}{
		{HtaccessOptions{}, "htaccess: root not set"},
		{HtaccessOptions{Root: filepath.Join(dir, "nope")}, "no such file"},
		{HtaccessOptions{Root: file}, "is not a directory"},
		{HtaccessOptions{Root: dir, File: "a/b"}, "must be a plain file name"},
		{HtaccessOptions{Root: dir, TrustedProxies: []string{"x"}}, "htaccess: trusted_proxies"},
	} {
		if _, err := NewHtaccess(tt.opts); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("NewHtaccess(%+v) = %v, want %q", tt.opts, err, tt.err)
		}
	}
	// Another file name.
	os.WriteFile(filepath.Join(dir, "ACCESS"), []byte("Deny from all\n"), 0o644)
	h, err := NewHtaccess(HtaccessOptions{Root: dir, File: "ACCESS"})
	if err != nil {
		t.Fatal(err)
	}
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{h, guardText("x")})).URL
	if resp, _ := sluicetest.Get(t, url+"/x"); resp.StatusCode != 403 {
		t.Errorf("file ACCESS not applied: %d", resp.StatusCode)
	}
}

// The cache of directories stays bounded.
func TestHtaccessBoundedCache(t *testing.T) {
	h, err := newHtaccess(HtaccessOptions{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range htaccessMaxDirs + 500 {
		h.stateOf(fmt.Sprintf("d%d", i), 0)
	}
	if n := len(h.dirs); n > htaccessMaxDirs {
		t.Errorf("%d directories cached", n)
	}
}

func ExampleNewHtaccess() {
	root, err := os.MkdirTemp("", "htaccess-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	os.Mkdir(filepath.Join(root, "staff"), 0o755)
	os.WriteFile(filepath.Join(root, "staff", ".htaccess"),
		[]byte("Order Deny,Allow\nDeny from all\nAllow from 10.20\n"), 0o644)

	access, err := NewHtaccess(HtaccessOptions{Root: root, TrustedProxies: []string{"127.0.0.1"}})
	if err != nil {
		panic(err)
	}
	srv, err := sluicetest.Start(pipe.Handler(pipe.Chain{access, guardText("hello\n")}))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	url := srv.URL
	for _, c := range []struct{ path, client string }{
		{"/index.html", "192.0.2.1"},
		{"/staff/plan.html", "192.0.2.1"},
		{"/staff/plan.html", "10.20.0.5"},
	} {
		resp, _ := guardExampleGet(url+c.path, "X-Forwarded-For", c.client)
		fmt.Println(c.path, c.client, resp.StatusCode)
	}
	// Output:
	// /index.html 192.0.2.1 200
	// /staff/plan.html 192.0.2.1 403
	// /staff/plan.html 10.20.0.5 200
}

func BenchmarkHtaccess(b *testing.B) {
	root := b.TempDir()
	os.MkdirAll(filepath.Join(root, "a", "b", "c"), 0o755)
	os.WriteFile(filepath.Join(root, ".htaccess"), []byte("Order Deny,Allow\nDeny from 10.0.0.0/8\n"), 0o644)
	os.WriteFile(filepath.Join(root, "a", ".htaccess"), []byte("Order Allow,Deny\nAllow from 127.0.0.0/8 192.168.0.0/16\n"), 0o644)
	h, err := newHtaccess(HtaccessOptions{Root: root})
	if err != nil {
		b.Fatal(err)
	}
	r := &engine.Request{Path: []byte("/a/b/c/page.html"), RemoteAddr: guardTCP("127.0.0.1")}
	b.ReportAllocs()
	for b.Loop() {
		if h.check(r) != 0 {
			b.Fatal("refused")
		}
	}
}
