package files_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/sluicetest"
)

// listingSite is a directory to list: files of different sizes and
// times, a hostile name, a subdirectory, dotfiles and a link out.
func listingSite(t *testing.T) (outer, dir string) {
	outer = t.TempDir()
	dir = filepath.Join(outer, "root")
	writeFiles(t, outer, map[string]string{
		"secret.txt":                      "secret",
		"root/pub/small.txt":              "1",
		"root/pub/big.txt":                strings.Repeat("x", 5000),
		"root/pub/mid.txt":                strings.Repeat("x", 100),
		"root/pub/<script>&\"x\" y.txt":   "hostile",
		"root/pub/a:b.txt":                "colon",
		"root/pub/sub/inner.txt":          "inner",
		"root/pub/.hidden":                "hidden",
		"root/.well-known/security.txt":   "contact",
		"root/withindex/index.html":       "the index",
		"root/withindex/other.txt":        "other",
		"root/pub/zzz-oldest.txt":         "old",
		"root/pub/sub/../../pub/keep.txt": "keep",
	})
	times := map[string]time.Duration{"small.txt": 3, "big.txt": 2, "mid.txt": 1, "zzz-oldest.txt": 10}
	for name, ago := range times {
		tm := time.Now().Add(-ago * time.Hour)
		os.Chtimes(filepath.Join(dir, "pub", name), tm, tm)
	}
	os.Symlink("../../secret.txt", filepath.Join(dir, "pub", "out.txt"))
	return outer, dir
}

func TestBrowseHTML(t *testing.T) {
	_, dir := listingSite(t)
	base := serveDir(t, dir, files.Options{Browse: true})
	resp, body := sluicetest.Get(t, base+"/pub/")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /pub/ = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		"<title>Index of /pub/</title>",
		`<a href="./%3Cscript%3E&amp;%22x%22%20y.txt">&lt;script&gt;&amp;&#34;x&#34; y.txt</a>`,
		`<a href="./a:b.txt">a:b.txt</a>`,
		`<a href="./sub/">sub/</a>`,
		`<a href="../">../</a>`,
		`title="5000 bytes">4.9 KiB<`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("listing lacks %q:\n%s", want, body)
		}
	}
	for _, bad := range []string{"<script>", ".hidden", "out.txt", "secret"} {
		if strings.Contains(body, bad) {
			t.Errorf("listing contains %q:\n%s", bad, body)
		}
	}
	if resp.Header.Get("Vary") != "Accept" {
		t.Errorf("Vary %q, want Accept", resp.Header.Get("Vary"))
	}
	// A 304 has the Vary of the 200 it stands for (RFC 9110 §15.4.5).
	if resp, _ := sluicetest.Get(t, base+"/pub/", "If-None-Match", "*"); resp.StatusCode != 304 || resp.Header.Get("Vary") != "Accept" {
		t.Errorf("GET /pub/ If-None-Match: * = %d with Vary %q, want 304 with Vary: Accept", resp.StatusCode, resp.Header.Get("Vary"))
	}
	// A directory with an index file serves it; the root lists
	// .well-known.
	if _, body := sluicetest.Get(t, base+"/withindex/"); body != "the index" {
		t.Errorf("GET /withindex/ = %q", body)
	}
	if _, body := sluicetest.Get(t, base+"/"); !strings.Contains(body, `href="./.well-known/"`) {
		t.Errorf("root listing lacks .well-known:\n%s", body)
	}
	// Without Browse: 404.
	base = serveDir(t, dir, files.Options{})
	if resp, _ := sluicetest.Get(t, base+"/pub/"); resp.StatusCode != 404 {
		t.Errorf("GET /pub/ without Browse = %d, want 404", resp.StatusCode)
	}
}

func TestBrowseSortAndJSON(t *testing.T) {
	_, dir := listingSite(t)
	base := serveDir(t, dir, files.Options{Browse: true})
	names := func(query string) []string {
		resp, body := sluicetest.Get(t, base+"/pub/"+query, "Accept", "application/json")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET /pub/%s = %d %q", query, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var items []struct {
			Name    string    `json:"name"`
			URL     string    `json:"url"`
			IsDir   bool      `json:"is_dir"`
			Size    int64     `json:"size"`
			ModTime time.Time `json:"mod_time"`
		}
		if err := json.Unmarshal([]byte(body), &items); err != nil {
			t.Fatalf("%v in %s", err, body)
		}
		var out []string
		for _, it := range items {
			if strings.HasSuffix(it.Name, ".txt") && strings.ContainsAny(it.Name[:1], "bmsz") || it.IsDir {
				out = append(out, it.Name)
			}
			if it.Name == "big.txt" && it.Size != 5000 {
				t.Errorf("big.txt: size %d", it.Size)
			}
		}
		return out
	}
	for query, want := range map[string]string{
		"":                       "sub big.txt mid.txt small.txt zzz-oldest.txt",
		"?sort=name&order=desc":  "sub zzz-oldest.txt small.txt mid.txt big.txt",
		"?sort=size":             "sub small.txt zzz-oldest.txt mid.txt big.txt",
		"?sort=size&order=desc":  "sub big.txt mid.txt zzz-oldest.txt small.txt",
		"?sort=time":             "sub zzz-oldest.txt small.txt big.txt mid.txt",
		"?sort=time&order=desc":  "sub mid.txt big.txt small.txt zzz-oldest.txt",
		"?sort=bogus&order=asc!": "sub big.txt mid.txt small.txt zzz-oldest.txt",
	} {
		if got := strings.Join(names(query), " "); got != want {
			t.Errorf("GET /pub/%s: order %q, want %q", query, got, want)
		}
	}
	// A browser's Accept gets HTML.
	resp, _ := sluicetest.Get(t, base+"/pub/", "Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	if resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("browser Accept: Content-Type %q", resp.Header.Get("Content-Type"))
	}
	resp, _ = sluicetest.Get(t, base+"/pub/", "Accept", "application/json;q=0.9, text/html;q=0.5")
	if resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("JSON preferred: Content-Type %q", resp.Header.Get("Content-Type"))
	}
	// Dotfiles are listed when allowed.
	base = serveDir(t, dir, files.Options{Browse: true, Dotfiles: files.DotfilesAllow})
	if _, body := sluicetest.Get(t, base+"/pub/"); !strings.Contains(body, ".hidden") {
		t.Errorf("Dotfiles allow: listing lacks .hidden")
	}
}

// A listing shows the first MaxListing entries in the order asked for, as
// the whole listing would order them, and says so in the HTML page.
func TestBrowseCapped(t *testing.T) {
	dir := t.TempDir()
	m := map[string]string{}
	for i := range 250 {
		m[fmt.Sprintf("f%03d.txt", (i*97)%250)] = strings.Repeat("x", (i*31)%200)
	}
	for i := range 7 {
		m[fmt.Sprintf("d%d/x", i)] = ""
	}
	writeFiles(t, dir, m)
	for i := range 250 {
		tm := time.Now().Add(-time.Duration((i*53)%250) * time.Minute)
		os.Chtimes(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), tm, tm)
	}
	whole := serveDir(t, dir, files.Options{Browse: true})
	capped := serveDir(t, dir, files.Options{Browse: true, MaxListing: 100})
	names := func(base, query string) []string {
		resp, body := sluicetest.Get(t, base+"/"+query, "Accept", "application/json")
		var items []struct{ Name string }
		if err := json.Unmarshal([]byte(body), &items); resp.StatusCode != 200 || err != nil {
			t.Fatalf("GET /%s: %d %v", query, resp.StatusCode, err)
		}
		var out []string
		for _, it := range items {
			out = append(out, it.Name)
		}
		return out
	}
	for _, query := range []string{"", "?order=desc", "?sort=size", "?sort=size&order=desc", "?sort=time", "?sort=time&order=desc"} {
		all, first := names(whole, query), names(capped, query)
		if len(all) != 257 || len(first) != 100 || strings.Join(all[:100], " ") != strings.Join(first, " ") {
			t.Errorf("GET /%s: capped at 100 of %d:\n got %q\nwant %q", query, len(all), first, all[:min(100, len(all))])
		}
	}
	const note = "<p>The first 100 of 257 entries in this order.</p>"
	if _, body := sluicetest.Get(t, capped+"/?sort=size"); !strings.Contains(body, note) || strings.Count(body, "<tr><td><a href=\"./") != 100 {
		t.Errorf("capped HTML lacks %q or has not 100 rows:\n%s", note, body)
	}
	if _, body := sluicetest.Get(t, whole+"/"); strings.Contains(body, "<p>The first") {
		t.Errorf("a whole listing has a note:\n%s", body)
	}
	if _, err := files.New(dir, files.Options{MaxListing: -1}); err == nil || err.Error() != "files: max_listing must not be negative" {
		t.Errorf("MaxListing -1: %v", err)
	}
}

// A listing of a large directory holds bounded memory per client however
// slowly the client reads: the whole page was built per request and kept
// until the client had read it (40 slow clients on 100,000 entries grew
// the server by 3.8 GB). Clients that stop reading
// after the status line hold the server's writes; the heap measured then
// (live objects after a GC) must stay under a generous bound per client.
// This bounds a resource, not a time.
func TestBrowseBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 50,000 files")
	}
	const entries, clients = 50000, 8
	const perClient = 4 << 20 // the old page alone was about 10 MB
	dir := t.TempDir()
	for i := range entries {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("entry-%06d-%s.txt", i, strings.Repeat("long-name-", 10))))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	base := serveDir(t, dir, files.Options{Browse: true})
	sluicetest.Get(t, base+"/x") // the server's own start-up garbage, before measuring

	var before, during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var readers []*bufio.Reader
	for range clients {
		c := dialSlow(t, hostOf(base))
		if _, err := io.WriteString(c, "GET /?sort=time&order=desc HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReaderSize(c, 4096)
		const ok = "HTTP/1.1 200 OK\r\n"
		if line, err := br.Peek(len(ok)); err != nil || string(line) != ok {
			t.Fatalf("status line %q, %v", line, err)
		}
		readers = append(readers, br)
	}
	runtime.GC()
	runtime.ReadMemStats(&during)
	grown := int64(during.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d clients reading a listing of %d entries slowly: the heap grew by %.1f MB", clients, entries, float64(grown)/(1<<20))
	if grown > clients*perClient {
		t.Errorf("the heap grew by %.1f MB, want under %d MB", float64(grown)/(1<<20), clients*perClient>>20)
	}
	// Each then reads its listing whole: the entries shown and the note
	// saying how many there are.
	for _, br := range readers {
		resp, body := sluicetest.ReadResponse(t, br, "GET")
		rows := strings.Count(body, "<tr><td><a href=\"./entry-")
		if resp.StatusCode != 200 || rows != files.DefaultMaxListing || !strings.Contains(body, fmt.Sprintf("of %d entries", entries)) {
			t.Errorf("listing: %d with %d rows, want %d rows and a note of %d entries", resp.StatusCode, rows, files.DefaultMaxListing, entries)
		}
	}
}

// dialSlow connects to addr with a 4 KiB receive buffer, so that a server
// writing to a client that stops reading blocks soon; the connection is
// closed when the test ends.
func dialSlow(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		rc.Control(func(fd uintptr) { err = setSockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return err
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(2 * time.Minute))
	return c
}
