package demo_test

import (
	"flag"
	"fmt"
	"html"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-server/sluice/demo"
)

var update = flag.Bool("update", false, "rewrite the config the pages show from site/sluice.yaml")

// shownBlock is a block of a page that shows part of the config file:
//
//	<!-- sluice.yaml: route /static/ -->    (the route whose first match is /static/)
//	<!-- sluice.yaml: key error_pages -->   (a top-level key)
//	<!-- sluice.yaml: all -->               (the whole file)
//	...generated...
//	<!-- sluice.yaml: end -->
var shownBlock = regexp.MustCompile(`(?s)(<!-- sluice\.yaml: (route (\S+)|key (\S+)|all) -->\n)(.*?)(<!-- sluice\.yaml: end -->)`)

// TestConfigShown checks that every page shows the config file as it is:
// each block marked as showing a route holds that route's lines of
// site/sluice.yaml, one marked with a key that top-level key's lines, and
// a block marked "all" the whole file. With -update
// it rewrites the blocks instead.
func TestConfigShown(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("site", demo.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	routes, err := routeLines(src)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(src), "\n"), "\n")
	all := showLines(lines, 1)
	shown := map[string]bool{}
	err = filepath.WalkDir("site", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".html") {
			return err
		}
		page, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var missing []string
		want := shownBlock.ReplaceAllStringFunc(string(page), func(block string) string {
			m := shownBlock.FindStringSubmatch(block)
			body := all
			if m[3] != "" {
				r, ok := routes[m[3]]
				if !ok {
					missing = append(missing, m[3])
					return block
				}
				shown[m[3]] = true
				body = showLines(dedent(lines[r.first-1:r.last]), r.first)
			}
			if m[4] != "" {
				r, ok := keyLines(lines, m[4])
				if !ok {
					missing = append(missing, m[4])
					return block
				}
				body = showLines(lines[r.first-1:r.last], r.first)
			}
			return m[1] + body + m[6]
		})
		for _, m := range missing {
			t.Errorf("%s shows %s, which %s does not have", path, m, demo.ConfigFile)
		}
		if want == string(page) {
			return nil
		}
		if *update {
			return os.WriteFile(path, []byte(want), 0o644)
		}
		t.Errorf("%s does not show %s as it is (go test ./demo -run TestConfigShown -update rewrites it)", path, demo.ConfigFile)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for m := range routes {
		if !shown[m] {
			t.Errorf("no page shows the route %s", m)
		}
	}
}

// TestHomeLinksEveryRoute checks that the home page links to every route
// of the config, with plain href="/..." links.
func TestHomeLinksEveryRoute(t *testing.T) {
	src, err := fs.ReadFile(demo.FS(), demo.ConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	routes, err := routeLines(src)
	if err != nil {
		t.Fatal(err)
	}
	home, err := fs.ReadFile(demo.FS(), "public/index.html")
	if err != nil {
		t.Fatal(err)
	}
	for m := range routes {
		m, _, _ = strings.Cut(m, "{") // a pattern with parameters: a path it matches
		if !strings.Contains(string(home), `href="`+m) {
			t.Errorf("the home page has no link to the route %s", m)
		}
	}
}

// routeSpan is the lines of one route in the config file, 1-based and
// inclusive, with the comment lines just above it.
type routeSpan struct{ first, last int }

// routeLines returns the lines of each route of the config file src, by
// the route's first match pattern.
func routeLines(src []byte) (map[string]routeSpan, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(src), "\n"), "\n")
	top := doc.Content[0]
	var items []*yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "routes" {
			items = top.Content[i+1].Content
		}
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s has no routes", demo.ConfigFile)
	}
	blank := func(l string) bool { return strings.TrimSpace(l) == "" }
	comment := func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "#") }
	spans := map[string]routeSpan{}
	for _, item := range items {
		var match string
		for i := 0; i+1 < len(item.Content); i += 2 {
			if v := item.Content[i+1]; item.Content[i].Value == "match" {
				match = v.Value
				if v.Kind == yaml.SequenceNode {
					match = v.Content[0].Value
				}
			}
		}
		first := item.Line
		for first > 1 && comment(lines[first-2]) {
			first--
		}
		// The route ends before the next line as little indented as
		// its dash that is not a comment: the next route, or the next
		// top-level key.
		dash := len(lines[item.Line-1]) - len(strings.TrimLeft(lines[item.Line-1], " "))
		last := item.Line
		for l := item.Line + 1; l <= len(lines); l++ {
			s := lines[l-1]
			if !blank(s) && !comment(s) && len(s)-len(strings.TrimLeft(s, " ")) <= dash {
				break
			}
			last = l
		}
		for last > item.Line && (blank(lines[last-1]) || comment(lines[last-1])) {
			last--
		}
		spans[match] = routeSpan{first, last}
	}
	return spans, nil
}

// keyLines returns the lines of the top-level key of the config file,
// with the comment lines just above it.
func keyLines(lines []string, key string) (routeSpan, bool) {
	for i, l := range lines {
		if !strings.HasPrefix(l, key+":") {
			continue
		}
		first, last := i+1, i+1
		for first > 1 && strings.HasPrefix(lines[first-2], "#") {
			first--
		}
		for last < len(lines) && (lines[last] == "" || lines[last][0] == ' ' || lines[last][0] == '-') {
			last++
		}
		for t := strings.TrimSpace(lines[last-1]); last > i+1 && (t == "" || t[0] == '#'); t = strings.TrimSpace(lines[last-1]) {
			last--
		}
		return routeSpan{first, last}, true
	}
	return routeSpan{}, false
}

// dedent removes the indentation common to lines.
func dedent(lines []string) []string {
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " ")); indent < 0 || n < indent {
			indent = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= indent {
			out[i] = l[max(indent, 0):]
		}
	}
	return out
}

// showLines renders lines of the config file, the first of which is line
// first, as the HTML a page shows.
func showLines(lines []string, first int) string {
	var b strings.Builder
	// Each line is a block of its own whose indentation class lets a
	// line too long for a narrow box wrap under its own text, not under
	// the margin.
	b.WriteString(`<pre class="config"><code>`)
	for _, l := range lines {
		if l == "" {
			l = " " // a blank line keeps its height
		}
		indent := min(len(l)-len(strings.TrimLeft(l, " ")), 16) &^ 1
		fmt.Fprintf(&b, `<span class="l i%d">%s</span>`, indent, highlight(l))
	}
	b.WriteString("</code></pre>\n")
	last := first + len(lines) - 1
	fmt.Fprintf(&b, "<p class=\"source\">%s, lines %d–%d</p>\n", demo.ConfigFile, first, last)
	return b.String()
}

var yamlKey = regexp.MustCompile(`^(\s*(?:- )?)([A-Za-z_][A-Za-z0-9_]*)(:)(\s|$)`)

// highlight escapes a line of YAML for HTML, marking its comment and its
// key for the style sheet.
func highlight(l string) string {
	code, comment := l, ""
	quoted := false
	for i, r := range l {
		if r == '"' {
			quoted = !quoted
		}
		if r == '#' && !quoted && (i == 0 || l[i-1] == ' ') {
			code, comment = l[:i], l[i:]
			break
		}
	}
	var b strings.Builder
	if m := yamlKey.FindStringSubmatchIndex(code); m != nil {
		b.WriteString(html.EscapeString(code[:m[4]]))
		b.WriteString(`<span class="k">` + html.EscapeString(code[m[4]:m[5]]) + `</span>`)
		code = code[m[5]:]
	}
	b.WriteString(html.EscapeString(code))
	if comment != "" {
		b.WriteString(`<span class="c">` + html.EscapeString(comment) + `</span>`)
	}
	return b.String()
}

func TestRouteLines(t *testing.T) {
	src := []byte(`listen: :8080
routes:
  # one
  - match: /a/
    pipeline: [echo]

  # two
  # lines
  - match: [/b, /c]
    pipeline:
      - text: "#1"   # not a comment, then one

  - match: /d
    pipeline: [echo]
    # a comment of the next key, kept out
limits: {max_body: 1MiB}
`)
	got, err := routeLines(src)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]routeSpan{"/a/": {3, 5}, "/b": {7, 11}, "/d": {13, 14}}
	if len(got) != len(want) {
		t.Errorf("routeLines = %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("routeLines[%s] = %v, want %v", k, got[k], w)
		}
	}
	if h := highlight(`      - text: "#1"   # then <one>`); h != `      - <span class="k">text</span>: &#34;#1&#34;   <span class="c"># then &lt;one&gt;</span>` {
		t.Errorf("highlight = %q", h)
	}
	lines := strings.Split(string(src), "\n")
	if got, ok := keyLines(lines, "listen"); !ok || got != (routeSpan{1, 1}) {
		t.Errorf("keyLines(listen) = %v, %v", got, ok)
	}
	if got, ok := keyLines(lines, "routes"); !ok || got != (routeSpan{2, 14}) {
		t.Errorf("keyLines(routes) = %v, %v", got, ok)
	}
	if got := dedent([]string{"  - a", "", "    b"}); !slices.Equal(got, []string{"- a", "", "  b"}) {
		t.Errorf("dedent = %q", got)
	}
}
