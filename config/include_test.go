package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// Included files bring sites and routes: a top-level include adds both;
// an include entry of a routes list splices in routes. Paths are relative
// to the file they are written in; a glob's matches are read in sorted
// order, dotfiles left out.
func TestIncludeServe(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"test.yaml": `
include: [sites/*.yaml]
sites:
  - hosts: main.example
    routes:
      - match: /
        pipeline: [{text: "main\n"}]
      - include: snippets/api.yaml
`,
		"sites/b.yaml": `
sites:
  - hosts: b.example
    routes:
      - match: /
        pipeline: [files: ../www/b]
`,
		"sites/a.yaml": `
include: ../more/*.yaml
routes:
  - match: /
    pipeline: [{text: "default\n"}]
`,
		"sites/.#lock.yaml":    "not yaml: [",
		"sites/notes.txt":      "not yaml: [",
		"snippets/api.yaml":    "routes:\n  - match: /api/\n    pipeline: [{text: \"api\\n\"}]\n  - include: deeper.yaml\n",
		"snippets/deeper.yaml": "routes: [{match: /deep, pipeline: [{text: \"deep\\n\"}]}]\n",
		"more/empty.yaml":      "# nothing yet\n",
		"www/b/index.html":     "b index\n",
	})
	data, err := os.ReadFile(filepath.Join(dir, "test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := testLoader().Parse(filepath.Join(dir, "test.yaml"), data)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cfg.Close() })
	var files []string
	for _, f := range cfg.Files {
		files = append(files, strings.TrimPrefix(f, dir+string(filepath.Separator)))
	}
	if got := strings.Join(files, " "); got != "test.yaml sites/a.yaml sites/b.yaml more/empty.yaml snippets/api.yaml snippets/deeper.yaml" {
		t.Errorf("files read: %s", got)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %v", cfg.Warnings)
	}
	srv := sluicetest.NewServer(t, cfg.Handler())
	c := sluicetest.Dial(t, srv.Addr)
	for _, tt := range []struct{ host, path, body string }{
		{"main.example", "/", "main\n"},
		{"main.example", "/api/x", "api\n"},
		{"main.example", "/deep", "deep\n"},
		{"b.example", "/", "b index\n"},
		{"other.example", "/api/x", "default\n"},
	} {
		resp, body := c.RoundTrip(t, "GET "+tt.path+" HTTP/1.1\r\nHost: "+tt.host+"\r\n\r\n")
		if resp.StatusCode != 200 || body != tt.body {
			t.Errorf("%s%s: %d %q, want %q", tt.host, tt.path, resp.StatusCode, body, tt.body)
		}
	}
	if r := cfg.Routes[len(cfg.Routes)-1]; !strings.HasSuffix(r.File, filepath.Join("snippets", "deeper.yaml")) || r.Line != 1 {
		t.Errorf("last route from %s:%d", r.File, r.Line)
	}
}

// Errors in included files point at those files' lines; the files and
// their errors come in the order read, after the including file's.
func TestIncludeErrors(t *testing.T) {
	const r = "routes: [{match: /, pipeline: [echo]}]\n"
	for _, tt := range []struct {
		files map[string]string
		want  []string
	}{
		{map[string]string{"test.yaml": "include: a.yaml\n" + r, "a.yaml": "routes:\n  - match: /x\n    pipeline: [ech]\n"},
			[]string{`a.yaml:3:16: unknown component "ech" (did you mean "echo"?)`}},
		{map[string]string{"test.yaml": "include: missing.yaml\n" + r},
			[]string{"test.yaml:1:10: include: missing.yaml does not exist (a plain path must name a file; a pattern such as sites/*.yaml may match none)"}},
		{map[string]string{"test.yaml": "include: a.yaml\n" + r, "a.yaml": "include: [b.yaml]\n", "b.yaml": "include: a.yaml\n"},
			[]string{"b.yaml:1:10: include: a.yaml includes b.yaml includes a.yaml is a cycle: a file cannot include itself, directly or through others; remove one of these includes"}},
		{map[string]string{"test.yaml": "include: test.yaml\n" + r},
			[]string{"test.yaml:1:10: include: test.yaml includes test.yaml is a cycle"}},
		{map[string]string{"test.yaml": r + "sites:\n  - hosts: a\n    routes:\n      - include: s/r.yaml\n", "s/r.yaml": "routes:\n  - include: r.yaml\n"},
			[]string{"s/r.yaml:2:14: include: s/r.yaml includes s/r.yaml is a cycle"}},
		{map[string]string{"test.yaml": "include: a.yaml\n" + r, "a.yaml": "listen: :80\nroutez: []\n"},
			[]string{"a.yaml:1:1: listen: an included file holds only include, routes, sites; it belongs in the main config file",
				`a.yaml:2:1: routez: an included file holds only include, routes, sites; the main config file does not know it either (did you mean "routes"?)`}},
		{map[string]string{"test.yaml": "include: a.yaml\n" + r, "a.yaml": "- match: /\n  pipeline: [echo]\n"},
			[]string{"a.yaml:1:1: an included file holds a map of include, routes, sites, got a list (a list of routes goes under routes:)"}},
		{map[string]string{"test.yaml": "include: a.yaml\n" + r, "a.yaml": "routes:\n  - match: /x\n   pipeline: [echo]\n"},
			[]string{"a.yaml:3:4: YAML syntax:"}},
		{map[string]string{"test.yaml": "include: sub\n" + r, "sub/a.yaml": "routes: []\n"},
			[]string{"test.yaml:1:10: include: sub is a directory: include its files with a pattern, e.g. sub/*.yaml"}},
		{map[string]string{"test.yaml": "include: 'a[.yaml'\n" + r},
			[]string{`test.yaml:1:10: include: "a[.yaml" is not a valid pattern`}},
		{map[string]string{"test.yaml": "include:\n" + r},
			[]string{"test.yaml:1:9: include: want a file path or a list of them"}},
		{map[string]string{"test.yaml": "routes:\n  - include: s.yaml\n    match: /\n", "s.yaml": r},
			[]string{`test.yaml:3:5: an include entry of a routes list holds include alone; "match" belongs to a route`}},
		{map[string]string{"test.yaml": r + "sites:\n  - hosts: a\n    routes:\n      - include: s.yaml\n", "s.yaml": "sites: []\n" + r},
			[]string{"s.yaml:1:1: sites: this file is included in a routes list, which takes routes only; include it at the top level"}},
		{map[string]string{"test.yaml": "routes:\n  - include: none/*.yaml\n"},
			[]string{"test.yaml:2:3: routes: its includes bring no route"}},
		{map[string]string{"test.yaml": "include: a.yaml\nroutes:\n  - match: /\n    pipeline: [echo]\n", "a.yaml": "routes:\n  - match: /\n    pipeline: [echo]\n"},
			[]string{"test.yaml:3:12: match \"/\" is already matched at a.yaml:2:12"}},
		{map[string]string{"test.yaml": "include: a.yaml\nroutes: [{match: /, pipeline: [ech]}]\n", "a.yaml": "routes: [{match: /x, pipeline: [{text: \"${NOPE}\"}]}]\n"},
			[]string{`test.yaml:2:32: unknown component "ech"`, `a.yaml:1:40: environment variable NOPE is not set`}},
	} {
		dir := t.TempDir()
		want := make([]string, len(tt.want))
		for i, w := range tt.want {
			want[i] = strings.ReplaceAll(w, "s/r.yaml", filepath.Join("s", "r.yaml"))
		}
		checkErrors(t, dir, tt.files, want...)
	}
}

// A pattern matching no file is a warning at the include, as nginx
// accepts it silently and a mistyped directory would otherwise go
// unnoticed.
func TestIncludeEmptyGlobWarns(t *testing.T) {
	dir := t.TempDir()
	cfg, err := parseString(t, dir, "include: [sites/*.yaml]\nroutes: [{match: /, pipeline: [echo]}]\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || cfg.Warnings[0].String() != filepath.Join(dir, "test.yaml")+":1:11: warning: include: sites/*.yaml matches no file" {
		t.Errorf("warnings: %v", cfg.Warnings)
	}
}

// FuzzInclude parses a config file that includes a fuzzed file, which
// includes the first back when it says so: whatever the text, the parse
// ends, and every error names one of the two files at a line of it.
func FuzzInclude(f *testing.F) {
	for _, s := range []string{
		"routes: [{match: /, pipeline: [echo]}]",
		"sites: [{hosts: a, routes: [{match: /, pipeline: [echo]}]}]",
		"include: test.yaml",
		"include: [inc.yaml]",
		"routes:\n  - include: test.yaml\n",
		"sites:\n - default: true\n   routes: [{include: inc.yaml}]\n",
		"- a\n- b",
		"listen: :1",
		"routes: [{match: /, host: a, pipeline: [echo]}]\nsites: [{hosts: '*.a', routes: [{match: /, pipeline: [echo]}]}]",
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	main := filepath.Join(dir, "test.yaml")
	inc := filepath.Join(dir, "inc.yaml")
	data := []byte("include: inc.yaml\nsites: [{hosts: main, routes: [{match: /, pipeline: [echo]}]}]\n")
	if err := os.WriteFile(main, data, 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if err := os.WriteFile(inc, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		lines := map[string]int{main: strings.Count(string(data), "\n") + 1, inc: strings.Count(text, "\n") + 1}
		cfg, err := testLoader().Parse(main, data)
		if err == nil {
			cfg.Close()
			return
		}
		errs, ok := err.(Errors)
		if !ok {
			t.Fatalf("%T %v", err, err)
		}
		for _, e := range errs {
			if n, ok := lines[e.File]; !ok || e.Line < 1 || e.Line > n+1 {
				t.Errorf("error at %s:%d: %s", e.File, e.Line, e.Msg)
			}
		}
	})
}
