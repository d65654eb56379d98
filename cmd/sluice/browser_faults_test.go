package main_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"os/exec"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// faultySite is a small site with one fault per page, and good pages
// around them, for the browser checks to find: the faults the demo must
// not have. /private/ asks for basic authentication as user:password.
// Its compressed stylesheets are encoded as the browser asks (brotli if
// it accepts it, else gzip), the broken one not encoded at all.
func faultySite(t *testing.T, user, password string) engine.Handler {
	const css = "body { color: rgb(1, 2, 3); }"
	page := func(head string) string {
		return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>t</title>` +
			`<link rel="icon" href="/icon.png">` + head + `</head><body><p>page</p></body></html>`
	}
	var dot bytes.Buffer
	img := image.NewGray(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.White)
	if err := png.Encode(&dot, img); err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{
		"/": page(`<a href="/good">good</a> <a href="/good#top">again</a> <a href="/private/">private</a>
			<a href="/console">console</a> <a href="/warn">warn</a> <a href="/throw">throw</a>
			<a href="/missing">missing</a> <a href="/badencoding">bad encoding</a> <a href="/badimage">bad image</a>
			<a href="/gone" data-expect-status="404">an error page on show</a> <a href="/lost">a broken link</a>
			<a href="/noicon">no icon</a> <a href="/data.csv">a download</a> <a href="/article/1">1</a> <a href="/article/2">2</a> <a href="/article/3">3</a>
			<a href="https://example.invalid/">elsewhere</a> <a href="mailto:a@example.invalid">mail</a>`),
		"/article/1": page(`<a href="/article/2">next</a>`),
		"/article/2": page(`<a href="/article/3">next</a>`),
		"/article/3": page(`<a href="/article/4">next</a>`),
		"/article/4": page(""),
		"/good":      page(`<link rel="stylesheet" href="/good.css"><img src="/dot.png" alt="">`),
		"/private/":  page(`<link rel="stylesheet" href="/good.css">`),
		"/console":   page(`<script>console.error("boom")</script>`),
		"/warn":      page(`<script>console.warn("careful")</script>`),
		"/throw":     page(`<script>throw new Error("kaboom")</script>`),
		"/missing":   page(`<link rel="stylesheet" href="/nope.css">`),
		// The stylesheet says it is compressed and is not.
		"/badencoding": page(`<link rel="stylesheet" href="/bad.css">`),
		"/badimage":    page(`<img src="/bad.png" alt="">`),
		"/noicon":      strings.Replace(page(""), `<link rel="icon" href="/icon.png">`, "", 1),
	}
	wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	return engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		path := string(r.Path)
		encoding := "gzip"
		if strings.Contains(string(r.Header("Accept-Encoding")), "br") {
			encoding = "br"
		}
		switch {
		case strings.HasPrefix(path, "/private/") && string(r.Header("Authorization")) != wantAuth:
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(401)
			w.WriteString("401 log in\n")
		case pages[path] != "":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteString(pages[path])
		case path == "/good.css":
			w.Header().Set("Content-Type", "text/css")
			w.Header().Set("Content-Encoding", encoding)
			w.Header().Set("Vary", "Accept-Encoding")
			w.Write(compress(t, encoding, css))
		case path == "/bad.css":
			w.Header().Set("Content-Type", "text/css")
			w.Header().Set("Content-Encoding", encoding)
			w.WriteString(css)
		case path == "/data.csv":
			w.Header().Set("Content-Type", "text/csv")
			w.WriteString("a,b\n1,2\n")
		case path == "/dot.png" || path == "/icon.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write(dot.Bytes())
		case path == "/bad.png":
			w.Header().Set("Content-Type", "image/png")
			w.WriteString("not a png")
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(404)
			w.WriteString(page(""))
		}
	})
}

// compress encodes s with encoding, "br" or "gzip".
func compress(t *testing.T, encoding, s string) []byte {
	var b bytes.Buffer
	if encoding == "br" {
		w := brotli.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
	} else {
		w := gzip.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
	}
	return b.Bytes()
}

// TestBrowserFindsFaults runs the demo's crawl over faultySite: the good
// pages pass, each fault is found on its page, and the crawl follows
// same-origin links only, once each, logging in where asked.
func TestBrowserFindsFaults(t *testing.T) {
	browser := newBrowser(t)
	srv := sluicetest.NewServer(t, faultySite(t, "ada", "s3cret"))
	c := &crawl{
		browser:     browser,
		maxPages:    20,
		perShape:    2,
		credentials: func() (credentials, bool) { return credentials{"ada", "s3cret"}, true },
		screenshots: t.TempDir(),
		favicon:     true,
	}
	results := map[string]*pageResult{}
	var order []string
	for _, r := range c.run(t, srv.URL+"/") {
		results[strings.TrimPrefix(r.url, srv.URL)] = r
		order = append(order, strings.TrimPrefix(r.url, srv.URL))
		t.Logf("%s: %d, %d problems %q, encoded %q", r.url, r.status, len(r.problems), r.problems, r.encoded)
	}
	want := []string{"/", "/good", "/private/", "/console", "/warn", "/throw", "/missing", "/badencoding", "/badimage", "/gone", "/lost", "/noicon", "/data.csv", "/article/1", "/article/2"}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("visited %q, want %q", order, want)
	}
	for path, fault := range map[string]string{
		"/":            "",
		"/good":        "",
		"/private/":    "",
		"/gone":        "", // a 404 its link expects
		"/data.csv":    "", // downloaded, not shown
		"/console":     `console.error: "boom"`,
		"/warn":        `console.warning: "careful"`,
		"/throw":       "uncaught exception",
		"/missing":     "/nope.css: status 404",
		"/badencoding": "ERR_CONTENT_DECODING_FAILED",
		"/badimage":    "/bad.png did not decode",
		"/lost":        "status 404, want 2xx",
		"/noicon":      "favicon " + srv.URL + "/favicon.ico: status 404",
	} {
		r := results[path]
		switch {
		case r == nil:
			t.Errorf("%s: not visited", path)
		case fault == "" && len(r.problems) > 0:
			t.Errorf("%s: problems %q, want none", path, r.problems)
		case fault != "" && !strings.Contains(strings.Join(r.problems, "\n"), fault):
			t.Errorf("%s: problems %q, want one with %q", path, r.problems, fault)
		}
	}
	if r := results["/private/"]; r != nil && (!r.authed || r.status != 200) {
		t.Errorf("/private/: status %d, authed %v; want 200 after logging in", r.status, r.authed)
	}
	for _, path := range []string{"/good", "/private/"} {
		if r := results[path]; r != nil && (len(r.encoded) != 1 || !strings.HasSuffix(r.encoded[0], "/good.css")) {
			t.Errorf("%s: decoded %q, want /good.css", path, r.encoded)
		}
	}
	if r := results["/data.csv"]; r != nil && (!r.download || r.status != 200) {
		t.Errorf("/data.csv: status %d, download %v; want 200, a download", r.status, r.download)
	}
	if r := results["/good"]; r != nil && r.shot == "" {
		t.Errorf("/good: no screenshot")
	}

	// Without credentials the private page is skipped, not failed.
	c.credentials = nil
	c.screenshots = ""
	for _, r := range c.run(t, srv.URL+"/private/") {
		t.Errorf("%s visited without credentials: %d %q", r.url, r.status, r.problems)
	}
}

func TestScreenshotName(t *testing.T) {
	for _, c := range []struct{ path, query, want string }{
		{"/", "", "index.jpg"},
		{"", "", "index.jpg"},
		{"/about/", "", "about.jpg"},
		{"/hello.txt", "", "hello.txt.jpg"},
		{"/dynamic/article/7", "", "dynamic-article-7.jpg"},
		{"/echo", "a=1&b=%20", "echo_a_1_b__20.jpg"},
	} {
		if got := screenshotName(c.path, c.query); got != c.want {
			t.Errorf("screenshotName(%q, %q) = %q, want %q", c.path, c.query, got, c.want)
		}
	}
}

// TestNoBrowserDependencies: the browser driver is the tests' alone.
func TestNoBrowserDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for pkg := range strings.FieldsSeq(string(out)) {
		if strings.Contains(pkg, "/chromedp/") || strings.Contains(pkg, "/gobwas/") {
			t.Errorf("sluice depends on %s", pkg)
		}
	}
	out, err = exec.Command("go", "list", "-test", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -test -deps: %v", err)
	}
	if !strings.Contains(string(out), "github.com/chromedp/chromedp\n") {
		t.Errorf("the tests do not use chromedp: the check above checks nothing")
	}
}
