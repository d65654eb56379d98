package main_test

import (
	"bytes"
	"compress/gzip"
	"flag"
	"html"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/sluice-server/sluice/demo"
	"github.com/sluice-server/sluice/sluicetest"
)

// update makes the tests of the demo rewrite what they check: its graph
// (TestDemoGraph) and its screenshots (TestDemoInBrowser).
var update = flag.Bool("update", false, "rewrite demo/site/public/graph.svg (TestDemoGraph) and docs/demo/screenshots (TestDemoInBrowser)")

// startDemo starts sluice demo on a loopback port with the data directory
// dir and returns it with the password it printed and all it printed.
func startDemo(t *testing.T, dir string) (s *server, password, stdout string) {
	t.Helper()
	cmd := exec.Command(binary, "demo", "--listen", "127.0.0.1:0", "--data", dir)
	out := &sluicetest.Buffer{}
	cmd.Stdout = out
	s = startCmd(t, cmd)
	// What the process wrote before it listened may still be on its way
	// through the pipe.
	sluicetest.WaitFor(t, "the credentials on stdout", func() bool { return strings.Contains(out.String(), "private:") })
	if !strings.Contains(out.String(), "site:     "+filepath.Join(dir, demo.ConfigFile)+"\n") {
		t.Errorf("sluice demo does not say where the site is:\n%s", out)
	}
	m := regexp.MustCompile(`private:  user (\S+), password (\S+)\n`).FindStringSubmatch(out.String())
	if m == nil || m[1] != demo.User {
		t.Fatalf("sluice demo printed no credentials:\n%s", out)
	}
	return s, m[2], out.String()
}

// TestDemo checks every route of the demo site over a real socket, as the
// home page describes it.
func TestDemo(t *testing.T) {
	dir := t.TempDir()
	s, password, out := startDemo(t, dir)
	made := filepath.Join(dir, demo.ArticlesFile) + ", 10000 articles, made now"
	if !strings.Contains(out, made) {
		t.Errorf("the first start does not say it made the database:\n%s", out)
	}
	base := "http://" + s.addr
	site := demo.FS()
	title1, _ := demo.Article(1)
	title10000, _ := demo.Article(10000)

	cases := []struct {
		path        string
		fields      []string // request header fields, name and value
		status      int
		contentType string
		contains    string
	}{
		{"/", nil, 200, "text/html; charset=utf-8", `<h2 id="config">`},
		{"/favicon.svg", nil, 200, "image/svg+xml", "<svg"},
		{"/favicon.ico", nil, 200, "image/x-icon", ""},
		{"/graph.svg", nil, 200, "image/svg+xml", "<svg"},
		{"/static/", nil, 200, "text/html; charset=utf-8", "opticks-book-two.html"},
		{"/static/opticks-queries.html", nil, 200, "text/html; charset=utf-8", "worship our true Author"},
		{"/template/", nil, 200, "text/html; charset=utf-8", "Parsed templates"},
		// The headers pipe's field, and the query escaped.
		{"/template/request?q=%3Cscript%3E", nil, 200, "text/html; charset=utf-8", "<td>set by the headers pipe</td>"},
		{"/template/greet?name=%3Cscript%3Ex", nil, 200, "text/html; charset=utf-8", "Hello, &lt;script&gt;x!"},
		{"/template/clock", nil, 200, "text/html; charset=utf-8", "<td>Sluice demo</td>"},
		{"/template/nope", nil, 404, "", ""},
		{"/private/", nil, 401, "", ""},
		{"/files/", nil, 200, "text/html; charset=utf-8", "readme.txt"},
		{"/files/readme.txt", nil, 200, "text/plain; charset=utf-8", "rot13 filter"},
		{"/rot13/readme.txt", nil, 200, "text/plain; charset=utf-8", "ebg13 svygre"},
		{"/hello", nil, 200, "text/plain; charset=utf-8", "Hello from Sluice!\n"},
		{"/hello/Isaac%20Newton", nil, 200, "text/html; charset=utf-8", "<h1>Hello, Isaac Newton!</h1>"},
		{"/hello/%3Cb%3E", nil, 200, "text/html; charset=utf-8", "<h1>Hello, &lt;b&gt;!</h1>"},
		{"/hello/a/b", nil, 404, "", ""},
		{"/echo?q=sluice", nil, 200, "application/json", `"method":"R0VU"`}, // base64 of GET
		{"/status?format=json", nil, 200, "application/json", `"requests":`},
		{"/status", nil, 200, "text/html; charset=utf-8", ""},
		{"/home", nil, 301, "", ""},
		// Error pages.
		{"/nope", nil, 404, "text/html; charset=utf-8", "Nothing here."},
		{"/hello/a/b", nil, 404, "text/html; charset=utf-8", "Nothing here."},
		{"/private/", nil, 401, "text/html; charset=utf-8", "<h1>Unauthorized.</h1>"},
		// The single-page app: a path naming no file gets its page.
		{"/app/", nil, 200, "text/html; charset=utf-8", "<h1>A single-page app</h1>"},
		{"/app/colours/violet", nil, 200, "text/html; charset=utf-8", "<h1>A single-page app</h1>"},
		{"/assets/app.js", nil, 200, "text/javascript; charset=utf-8", "history.pushState"},
		// Pages from the database.
		{"/dynamic/article/1", nil, 200, "text/html; charset=utf-8", "<h1>" + html.EscapeString(title1) + "</h1>"},
		{"/dynamic/article/10000", nil, 200, "text/html; charset=utf-8", "<h1>" + html.EscapeString(title10000) + "</h1>"},
		{"/dynamic/article/13", nil, 200, "text/html; charset=utf-8", "<h1>&lt;script&gt;alert(&#34;article 13&#34;)&lt;/script&gt;"},
		{"/dynamic/article/x", nil, 400, "", ""},
		{"/dynamic/article/99999", nil, 404, "text/html; charset=utf-8", "Nothing here."},
		{"/dynamic/articles?after=9990", nil, 200, "text/html; charset=utf-8", `<a href="/dynamic/article/9991">`},
		{"/dynamic/articles?after=x", nil, 400, "", ""},
		// The data directory's secrets are reachable by no route.
		{"/users.htpasswd", nil, 404, "", ""},
		{"/users.password", nil, 404, "", ""},
		{"/public/index.html", nil, 404, "", ""},
	}
	for _, c := range cases {
		resp, body := sluicetest.Get(t, base+c.path, c.fields...)
		if resp.StatusCode != c.status || c.contentType != "" && resp.Header.Get("Content-Type") != c.contentType ||
			!strings.Contains(body, c.contains) {
			t.Errorf("GET %s = %d %q %.80q; want %d %q with %q", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), body,
				c.status, c.contentType, c.contains)
		}
	}
	if _, body := sluicetest.Get(t, base+"/template/request?q=%3Cscript%3E"); strings.Contains(body, "<script>") || !strings.Contains(body, "&lt;script&gt;") {
		t.Errorf("/template/request does not print the query escaped")
	}
	if resp, _ := sluicetest.Get(t, base+"/home"); resp.Header.Get("Location") != "/" {
		t.Errorf("/home redirects to %q, want /", resp.Header.Get("Location"))
	}
	if resp, _ := sluicetest.Get(t, base+"/"); resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("/ lacks the field the headers pipe sets: %v", resp.Header)
	}

	// The config the site shows is the file it runs.
	cfg, _ := fs.ReadFile(site, demo.ConfigFile)
	if _, body := sluicetest.Get(t, base+"/sluice.yaml"); body != string(cfg) {
		t.Errorf("/sluice.yaml = %.80q, want the site's config file", body)
	}

	// The flat pages are the files of the site, about 80 KB each.
	for _, name := range []string{"opticks-book-one.html", "opticks-book-two.html", "opticks-queries.html"} {
		want, _ := fs.ReadFile(site, "static/"+name)
		if _, body := sluicetest.Get(t, base+"/static/"+name); body != string(want) || len(body) < 75_000 {
			t.Errorf("/static/%s: %d bytes, want the site's %d", name, len(body), len(want))
		}
	}

	// Assets are compressed as the client asks.
	css, _ := fs.ReadFile(site, "assets/style.css")
	for _, coding := range []string{"zstd", "gzip"} {
		resp, body := sluicetest.Get(t, base+"/assets/style.css", "Accept-Encoding", coding)
		if resp.Header.Get("Content-Encoding") != coding || resp.Header.Get("Content-Type") != "text/css; charset=utf-8" {
			t.Errorf("/assets/style.css for %s: Content-Encoding %q, Content-Type %q", coding, resp.Header.Get("Content-Encoding"), resp.Header.Get("Content-Type"))
			continue
		}
		var r io.Reader
		if coding == "gzip" {
			r, _ = gzip.NewReader(strings.NewReader(body))
		} else {
			d, _ := zstd.NewReader(strings.NewReader(body))
			defer d.Close()
			r = d
		}
		if r == nil {
			t.Errorf("/assets/style.css: not %s", coding)
			continue
		}
		if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, css) {
			t.Errorf("/assets/style.css decoded from %s: %d bytes, %v; want the site's %d", coding, len(got), err, len(css))
		}
	}

	// The private area: 401 without the printed password, 200 with it.
	resp, _ := sluicetest.Get(t, base+"/private/")
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), `Basic realm="Sluice demo"`) {
		t.Errorf("/private/ without credentials = %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	for pw, want := range map[string]int{password: 200, password + "x": 401} {
		req, _ := http.NewRequest("GET", base+"/private/", nil)
		req.SetBasicAuth(demo.User, pw)
		if resp, body := sluicetest.Do(t, req); resp.StatusCode != want || want == 200 && !strings.Contains(body, "You are in.") {
			t.Errorf("/private/ with password %q = %d %.60q, want %d", pw, resp.StatusCode, body, want)
		}
	}

	// Every link of the home page answers, as its data-expect-status
	// says when it leads to an error on purpose.
	_, home := sluicetest.Get(t, base+"/")
	links := regexp.MustCompile(`href="(/[^"#]*)"(?: data-expect-status="(\d+)")?`).FindAllStringSubmatch(home, -1)
	if len(links) < 20 {
		t.Errorf("the home page has %d links", len(links))
	}
	for _, l := range links {
		path := strings.ReplaceAll(l[1], "&amp;", "&")
		resp, _ := sluicetest.Get(t, base+path)
		if got := strconv.Itoa(resp.StatusCode); l[2] != "" && got != l[2] ||
			l[2] == "" && got != "200" && got != "301" && got != "401" {
			t.Errorf("the home page links to %s, which answers %s", path, got)
		}
	}

	// The rate limit lets three through at once, then one a second:
	// ten in a row cannot all pass.
	limited := 0
	for range 10 {
		resp, _ := sluicetest.Get(t, base+"/limited")
		if resp.StatusCode == 429 {
			limited++
			if resp.Header.Get("Retry-After") == "" {
				t.Errorf("429 without Retry-After")
			}
		}
	}
	if resp, body := sluicetest.Get(t, base+"/limited"); resp.StatusCode != 429 || !strings.Contains(body, "<h1>Too Many Requests.</h1>") {
		t.Errorf("/limited once more = %d %.60q, want the 429 error page", resp.StatusCode, body)
	}
	if limited == 0 {
		t.Errorf("/limited let ten requests in a row through")
	}

	if code := s.stop(t, os.Interrupt); code != 0 {
		t.Errorf("exit status after SIGINT = %d, want 0\n%s", code, s.stderr())
	}

	// Started again on its data directory, the demo keeps its password
	// and puts back the site's files.
	os.WriteFile(filepath.Join(dir, "public", "index.html"), []byte("edited"), 0o644)
	s, again, out := startDemo(t, dir)
	if again != password {
		t.Errorf("second start printed password %q, want %q", again, password)
	}
	if strings.Contains(out, made) {
		t.Errorf("the second start made the database again:\n%s", out)
	}
	if _, body := sluicetest.Get(t, "http://"+s.addr+"/"); !strings.Contains(body, `<h2 id="config">`) {
		t.Errorf("GET / after an edit = %.80q, want the site's home page back", body)
	}
	s.stop(t, os.Interrupt)
}

// TestDemoGraph checks that the picture of the demo's config on its home
// page is what sluice graph --svg draws of it (-update redraws it).
func TestDemoGraph(t *testing.T) {
	sluicetest.NeedTool(t, "dot", "graphviz")
	dir := t.TempDir()
	if _, err := demo.Write(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Credentials(dir); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "graph", "-c", demo.ConfigFile, "--svg", "graph.svg")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sluice graph: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dir, "graph.svg"))
	if err != nil {
		t.Fatal(err)
	}
	committed := filepath.Join("..", "..", "demo", "site", "public", "graph.svg")
	if *update {
		if err := os.WriteFile(committed, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want, _ := os.ReadFile(committed); !bytes.Equal(got, want) {
		t.Errorf("%s is not what sluice graph --svg draws of %s; go test ./cmd/sluice -run TestDemoGraph -update redraws it", committed, demo.ConfigFile)
	}
}

// Without --listen, sluice demo listens on 127.0.0.1:8080, which only
// this machine reaches, and says so; the port may be taken on the machine
// running the test, so what is checked is the address it listens on or
// fails to.
func TestDemoListensOnLoopback(t *testing.T) {
	cmd := exec.Command(binary, "demo", "--data", t.TempDir())
	out, errOut := &sluicetest.Buffer{}, &sluicetest.Buffer{}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-done
	}()
	sluicetest.WaitFor(t, "the listening record", func() bool {
		return strings.Contains(errOut.String(), `msg=listening addr=`) || strings.Contains(errOut.String(), `msg="cannot listen"`)
	})
	if !strings.Contains(errOut.String(), " addr=127.0.0.1:8080 ") {
		t.Errorf("sluice demo without --listen does not listen on 127.0.0.1:8080:\n%s", errOut)
	}
	if !strings.Contains(out.String(), "open:     http://127.0.0.1:8080/\n") {
		t.Errorf("sluice demo does not print its loopback address:\n%s", out)
	}
}
