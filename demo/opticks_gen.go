//go:build ignore

// opticks_gen writes the demo's three flat pages, site/static/*.html: about
// 80 KB each of Isaac Newton's Opticks (1730, public domain), from the
// Project Gutenberg text that Go's source tree holds as
// $GOROOT/src/testdata/Isaac.Newton-Opticks.txt. Run it from this
// directory with "go run opticks_gen.go", then
// "go test -run TestConfigShown -update" to fill in the config each page
// shows.
package main

import (
	"fmt"
	"html"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

// pageSize is the size each page aims at, as the C10K article's flat
// pages ("each trimmed to 80 KB").
const pageSize = 80_000

type page struct {
	file, title, intro string
	from               string // the first line of the extract
	fromEnd            bool   // the extract ends at the end of the book
}

var pages = []page{
	{"opticks-book-one.html", "Opticks, the First Book",
		"The opening of the First Book: Newton's definitions, axioms and first experiments with prisms.",
		"THE FIRST BOOK OF OPTICKS", false},
	{"opticks-book-two.html", "Opticks, the Second Book",
		"Observations concerning the reflexions, refractions and colours of thin transparent bodies: Newton's rings.",
		"THE", false},
	{"opticks-queries.html", "Opticks, the Queries",
		"The Queries that close the Third Book, to its last paragraph.",
		"", true},
}

func main() {
	src, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt"))
	if err != nil {
		log.Fatal(err)
	}
	paras := strings.Split(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n\n")
	for _, p := range pages {
		var body []string
		if p.fromEnd {
			body = tail(paras)
		} else {
			body = head(p, paras)
		}
		out := render(p, body)
		if err := os.WriteFile(filepath.Join("site", "static", p.file), []byte(out), 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %d bytes\n", p.file, len(out))
	}
}

// budget is what the page's text may take: the page size less its frame.
func budget(p page) int { return pageSize - len(render(p, nil)) - 700 /* the config shown */ }

// head returns the paragraphs from the one starting with from, as many as
// fit.
func head(p page, paras []string) []string {
	var out []string
	n, started := 0, false
	for _, s := range paras {
		if !started && strings.TrimSpace(s) != p.from {
			continue
		}
		started = true
		h := para(s)
		if h == "" {
			continue
		}
		if n+len(h) > budget(p) {
			break
		}
		// A title set over several lines is one heading.
		if k := len(out) - 1; k >= 0 && strings.HasPrefix(h, "<h2>") && strings.HasPrefix(out[k], "<h2>") {
			out[k] = strings.TrimSuffix(out[k], "</h2>\n") + " " + strings.TrimPrefix(h, "<h2>")
			n += len(h) - 4
			continue
		}
		out = append(out, h)
		n += len(h)
	}
	return out
}

// tail returns the last paragraphs that fit, starting at a query.
func tail(paras []string) []string {
	var out []string
	n := 0
	start := len(out)
	for i := len(paras) - 1; i >= 0; i-- {
		h := para(paras[i])
		if h == "" {
			continue
		}
		if n+len(h) > budget(pages[2]) {
			break
		}
		out = append([]string{h}, out...)
		n += len(h)
		if strings.HasPrefix(strings.TrimSpace(paras[i]), "_Qu._") {
			start = len(out)
		}
	}
	return out[len(out)-start:]
}

var (
	emphasis = regexp.MustCompile(`_([^_]+)_`)
	upper    = regexp.MustCompile(`^[A-Z0-9 .,'_Æ]+$`)
)

// para renders a paragraph of the text as HTML.
func para(s string) string {
	s = strings.Trim(s, "\n")
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return ""
	case strings.HasPrefix(t, "*"):
		return "<hr>\n"
	case strings.HasPrefix(t, "[Illustration"):
		return "<p class=\"fig\"><em>" + html.EscapeString(strings.Trim(t, "[]")) + " (not reproduced)</em></p>\n"
	case strings.HasPrefix(s, "    "):
		return "<pre>" + html.EscapeString(s) + "</pre>\n"
	}
	text := emphasis.ReplaceAllString(html.EscapeString(strings.Join(strings.Fields(t), " ")), "<em>$1</em>")
	if !strings.Contains(t, "\n") && len(t) < 60 && upper.MatchString(t) {
		return "<h2>" + text + "</h2>\n"
	}
	return "<p>" + text + "</p>\n"
}

func render(p page, body []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s — Sluice demo</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="icon" href="/favicon.ico" sizes="32x32">
<link rel="stylesheet" href="/assets/style.css">
</head>
<body>
%s
<main>
<div class="split">
<article class="book">
<h1>%s</h1>
<p class="lead">%s</p>
`, p.title, topbar, p.title, p.intro)
	for _, h := range body {
		b.WriteString(h)
	}
	fmt.Fprintf(&b, `<hr>
<p><em>From Isaac Newton's</em> Opticks<em>, fourth edition (1730), in the public domain; the text of
Project Gutenberg, as Go's source tree holds it (src/testdata).</em></p>
</article>
<aside>
<h2>This route</h2>
<!-- sluice.yaml: route /static/ -->
<!-- sluice.yaml: end -->
<p>A flat file of about 80 KB: the <code>files</code> source sends it as it is on disk, with
<code>sendfile</code>, after a header that carries its length, <code>ETag</code> and
<code>Last-Modified</code>, so a reload is a <code>304 Not Modified</code>.</p>
<p>The other pages: <a href="/static/opticks-book-one.html">the First Book</a>,
<a href="/static/opticks-book-two.html">the Second Book</a>,
<a href="/static/opticks-queries.html">the Queries</a>.</p>
</aside>
</div>
</main>
%s
</body>
</html>
`, footer)
	return b.String()
}

const topbar = `<header class="topbar"><div class="inner">
<a class="brand" href="/"><img src="/assets/logo.svg" alt="" width="28" height="28">Sluice demo</a>
<nav>
<a href="/static/">Static</a>
<a href="/template/">Templates</a>
<a href="/dynamic/articles">Articles</a>
<a href="/files/">Files</a>
<a href="/app/">App</a>
<a href="/private/">Private</a>
<a href="/status">Status</a>
<a href="/#config">Config</a>
</nav>
</div></header>`

const footer = `<footer class="site"><div class="inner">
<span>Served by Sluice from <code>sluice.yaml</code>.</span>
<a href="/">Home</a>
</div></footer>`
