package components

import (
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// templateFiles writes name → content files under a new directory.
func templateFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		templateWrite(t, filepath.Join(dir, filepath.FromSlash(name)), text)
	}
	return dir
}

func templateWrite(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// templateNew builds a Template whose log goes to the returned buffer.
func templateNew(t *testing.T, opts TemplateOptions) (*Template, *sluicetest.Buffer) {
	t.Helper()
	var lb *sluicetest.Buffer
	opts.Logger, lb = sluicetest.Logger()
	comp, err := NewTemplate(opts)
	if err != nil {
		t.Fatal(err)
	}
	return comp.(*Template), lb
}

// The request's data, the static data and a partial, in a page.
func TestTemplateData(t *testing.T) {
	root := templateFiles(t, map[string]string{
		"_layout.html": `{{define "layout"}}<title>{{.Data.site}}</title>{{template "body" .}}{{end}}`,
		"info.html": `{{template "layout" .}}{{define "body"}}` +
			`m={{.Method}} p={{.Path}} q={{.Query.Get "a"}},{{index .Query "b"}} ua={{.Header "User-Agent"}} ` +
			`host={{.Host}} remote={{if .RemoteAddr}}set{{end}} year={{.Now.Year}} n={{len .Data.items}}{{end}}`,
	})
	tp, _ := templateNew(t, TemplateOptions{Root: root, Data: map[string]any{"site": "Sluice", "items": []int{1, 2, 3}}})
	addr := sluicetest.NewServer(t, pipe.Handler(tp)).Addr
	req, _ := http.NewRequest("GET", "http://"+addr+"/info?a=1&b=x&b=y", nil)
	req.Header.Set("User-Agent", "tmpl-test")
	resp, body := sluicetest.Do(t, req)
	want := fmt.Sprintf("<title>Sluice</title>m=GET p=/info q=1,[x y] ua=tmpl-test host=%s remote=set year=%d n=3", addr, time.Now().Year())
	if resp.StatusCode != 200 || body != want {
		t.Errorf("got %d %q\nwant %q", resp.StatusCode, body, want)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if cl := resp.Header.Get("Content-Length"); cl != fmt.Sprint(len(want)) {
		t.Errorf("Content-Length %q, want %d", cl, len(want))
	}
}

// Request data is escaped for the context it lands in: HTML text, an
// attribute, a URL and JavaScript.
func TestTemplateEscaping(t *testing.T) {
	root := templateFiles(t, map[string]string{
		"html.html": `<p>{{.Query.Get "q"}}</p>`,
		"attr.html": `<input value="{{.Query.Get "q"}}" title={{.Query.Get "q"}}>`,
		"url.html":  `<a href="/search?q={{.Query.Get "q"}}">s</a><a href="{{.Query.Get "q"}}">t</a><a href="{{.Query.Get "u"}}">u</a>`,
		"js.html":   `<script>var q = {{.Query.Get "q"}}; var s = "{{.Query.Get "q"}}";</script>`,
	})
	tp, _ := templateNew(t, TemplateOptions{Root: root})
	base := "http://" + sluicetest.NewServer(t, pipe.Handler(tp)).Addr
	attack := `<script>alert("x")</script>' onmouseover=alert(1) javascript:alert(2)`
	tests := []struct {
		page string
		want []string // each must appear
	}{
		{"html", []string{`<p>&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&#39; onmouseover=alert(1) javascript:alert(2)</p>`}},
		{"attr", []string{
			`value="&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&#39; onmouseover=alert(1) javascript:alert(2)"`,
			`title=&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&#39;&#32;onmouseover&#61;alert(1)&#32;javascript:alert(2)`,
		}},
		{"url", []string{
			`href="/search?q=%3cscript%3ealert%28%22x%22%29%3c%2fscript%3e%27%20onmouseover%3dalert%281%29%20javascript%3aalert%282%29"`,
			`href="%3cscript%3ealert%28%22x%22%29%3c/script%3e%27%20onmouseover=alert%281%29%20javascript:alert%282%29"`,
			`href="#ZgotmplZ"`, // a javascript: URL is refused
		}},
		{"js", []string{
			`var q = "\u003cscript\u003ealert(\"x\")\u003c/script\u003e' onmouseover=alert(1) javascript:alert(2)";`,
			`var s = "\u003cscript\u003ealert(\u0022x\u0022)\u003c\/script\u003e\u0027 onmouseover=alert(1) javascript:alert(2)";`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.page, func(t *testing.T) {
			resp, body := sluicetest.Get(t, base+"/"+tt.page+"?u=javascript:alert(3)&q="+neturl.QueryEscape(attack))
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if strings.Contains(body, "<script>alert") || strings.Contains(body, `" onmouseover`) {
				t.Errorf("unescaped attack in %q", body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("body\n%s\nlacks\n%s", body, w)
				}
			}
		})
	}
}

// Request paths map to template files; partials, hidden files and paths
// with no page get 404.
func TestTemplatePaths(t *testing.T) {
	root := templateFiles(t, map[string]string{
		"index.html":          "home",
		"about.html":          "about",
		"blog/index.html":     "blog",
		"blog/first.html":     "first",
		"docs/index.html":     "docs",
		"feed.xml":            `<feed>{{.Path}}</feed>`,
		"notes.txt":           "notes",
		"style.css":           "p{}",
		"_partial.html":       "partial",
		"_drafts/secret.html": "draft",
		".hidden.html":        "hidden",
	})
	tp, _ := templateNew(t, TemplateOptions{Root: root, Prefix: "/site/"})
	rt, _ := pipe.NewRouter(pipe.Route{Match: []string{"/site/"}, Pipeline: tp})
	base := "http://" + sluicetest.NewServer(t, pipe.Handler(rt)).Addr
	tests := []struct {
		path   string
		status int
		body   string
		ctype  string
	}{
		{"/site/", 200, "home", "text/html; charset=utf-8"},
		{"/site/index.html", 200, "home", ""},
		{"/site/about", 200, "about", ""},
		{"/site/about.html", 200, "about", ""},
		{"/site/blog", 200, "blog", ""},
		{"/site/blog/", 200, "blog", ""},
		{"/site/blog/first", 200, "first", ""},
		{"/site/docs/", 200, "docs", ""},
		{"/site/blog/../about", 200, "about", ""},
		{"/site/feed.xml", 200, "<feed>/site/feed.xml</feed>", "xml"},
		{"/site/notes.txt", 200, "notes", "text/plain; charset=utf-8"},
		{"/site/style.css", 200, "p{}", "text/css; charset=utf-8"},
		{"/site/about/", 404, "", ""},
		{"/site/missing", 404, "", ""},
		{"/site/_partial.html", 404, "", ""},
		{"/site/_partial", 404, "", ""},
		{"/site/_drafts/secret", 404, "", ""},
		{"/site/.hidden", 404, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, body := sluicetest.Get(t, base+tt.path)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d (%q), want %d", resp.StatusCode, body, tt.status)
			}
			if tt.status == 200 && body != tt.body {
				t.Errorf("body %q, want %q", body, tt.body)
			}
			if ct := resp.Header.Get("Content-Type"); tt.ctype != "" && !strings.Contains(ct, tt.ctype) {
				t.Errorf("Content-Type %q, want %q", ct, tt.ctype)
			}
		})
	}
}

// A template that fails while executing answers a clean 500: none of what
// it wrote before the error is sent. So does a page over MaxSize.
func TestTemplateExecError(t *testing.T) {
	root := templateFiles(t, map[string]string{
		"fail.html": `<h1>half a page</h1>{{index .Data.list 5}}`,
		"big.html":  `{{range .Data.list}}0123456789{{end}}`,
	})
	tp, lb := templateNew(t, TemplateOptions{Root: root, MaxSize: 25, Data: map[string]any{"list": []int{1, 2, 3}}})
	base := "http://" + sluicetest.NewServer(t, pipe.Handler(tp)).Addr
	for _, page := range []string{"fail", "big"} {
		resp, body := sluicetest.Get(t, base+"/"+page)
		if resp.StatusCode != 500 {
			t.Errorf("%s: status %d, want 500", page, resp.StatusCode)
		}
		if strings.Contains(body, "half") || strings.Contains(body, "0123") {
			t.Errorf("%s: partial page sent: %q", page, body)
		}
	}
	for _, want := range []string{"index out of range", "max_size"} {
		if !strings.Contains(lb.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, lb)
		}
	}
}

// With Reload, a changed file is re-parsed (checked at most once a
// second), and a change that does not parse keeps the last good version.
func TestTemplateReload(t *testing.T) {
	root := templateFiles(t, map[string]string{"page.html": "version 1"})
	tp, lb := templateNew(t, TemplateOptions{Root: root, Reload: true})
	base := "http://" + sluicetest.NewServer(t, pipe.Handler(tp)).Addr
	if _, body := sluicetest.Get(t, base+"/page"); body != "version 1" {
		t.Fatalf("body %q", body)
	}
	page := filepath.Join(root, "page.html")
	templateWrite(t, page, "version 2 {{.Method}}")
	templateWrite(t, filepath.Join(root, "new.html"), "new page")
	sluicetest.WaitFor(t, "version 2 GET after the change", func() bool {
		_, got := sluicetest.Get(t, base+"/page")
		return got == "version 2 GET"
	})
	if resp, body := sluicetest.Get(t, base+"/new"); resp.StatusCode != 200 || body != "new page" {
		t.Errorf("new page: %d %q", resp.StatusCode, body)
	}

	// A broken change: the next check (forced here) keeps version 2.
	templateWrite(t, page, "version 3 {{.Method")
	tp.maybeReload(time.Now().Add(time.Hour))
	if _, body := sluicetest.Get(t, base+"/page"); body != "version 2 GET" {
		t.Errorf("body %q after a broken change, want version 2 GET", body)
	}
	if !strings.Contains(lb.String(), "reload failed") {
		t.Errorf("log does not report the failed reload:\n%s", lb)
	}
}

// Without Reload, the templates parsed by NewTemplate stay.
func TestTemplateNoReload(t *testing.T) {
	file := filepath.Join(t.TempDir(), "one.html")
	templateWrite(t, file, "first")
	tp, _ := templateNew(t, TemplateOptions{File: file})
	base := "http://" + sluicetest.NewServer(t, pipe.Handler(tp)).Addr
	templateWrite(t, file, "second")
	tp.maybeReload(time.Now().Add(time.Hour))
	for _, p := range []string{"/", "/any/path"} {
		if resp, body := sluicetest.Get(t, base+p); resp.StatusCode != 200 || body != "first" {
			t.Errorf("%s: %d %q, want first", p, resp.StatusCode, body)
		}
	}
}

func TestTemplateOptionsErrors(t *testing.T) {
	dir := templateFiles(t, map[string]string{"bad.html": "{{if}}", "ok.html": "ok"})
	okDir := templateFiles(t, map[string]string{"ok.html": "ok"})
	tests := []struct {
		opts TemplateOptions
		want string
	}{
		{TemplateOptions{}, "template: set root or file"},
		{TemplateOptions{Root: okDir, File: filepath.Join(okDir, "ok.html")}, "not both"},
		{TemplateOptions{Root: filepath.Join(okDir, "missing")}, "no such file"},
		{TemplateOptions{Root: filepath.Join(okDir, "ok.html")}, "not a directory"},
		{TemplateOptions{File: okDir}, "not a regular file"},
		{TemplateOptions{Root: dir}, "bad.html:1"},
		{TemplateOptions{Root: okDir, Prefix: "x"}, "must start with /"},
		{TemplateOptions{Root: okDir, Index: "a/b.html"}, "must be a file name"},
	}
	for _, tt := range tests {
		_, err := NewTemplate(tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewTemplate(%+v) = %v, want an error containing %q", tt.opts, err, tt.want)
		}
	}
}

func ExampleNewTemplate() {
	root, _ := os.MkdirTemp("", "template-example")
	defer os.RemoveAll(root)
	os.WriteFile(filepath.Join(root, "_layout.html"),
		[]byte(`{{define "layout"}}<h1>{{.Data.site}}</h1>{{template "main" .}}{{end}}`), 0o644)
	os.WriteFile(filepath.Join(root, "hello.html"),
		[]byte(`{{template "layout" .}}{{define "main"}}<p>Hello, {{.Query.Get "name"}}!</p>{{end}}`), 0o644)

	tmpl, err := NewTemplate(TemplateOptions{Root: root, Data: map[string]any{"site": "Sluice"}})
	if err != nil {
		panic(err)
	}
	srv, err := sluicetest.Start(pipe.Handler(tmpl))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	url := srv.URL

	resp, err := http.Get(url + "/hello?name=" + neturl.QueryEscape("<b>you</b>"))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, resp.Header.Get("Content-Type"))
	fmt.Println(string(body))
	// Output:
	// 200 OK text/html; charset=utf-8
	// <h1>Sluice</h1><p>Hello, &lt;b&gt;you&lt;/b&gt;!</p>
}
