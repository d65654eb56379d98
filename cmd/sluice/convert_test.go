package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// writeFiles writes files (name to content) under dir, making the
// directories on their way.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		f := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sluice convert writes a config that sluice check accepts and sluice
// fmt leaves as it is, guesses the input's language from its name,
// exits 1 when it left something out (writing the config all the same)
// and 2 on a usage error.
func TestConvert(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"public/index.html": "home\n",
		"site.conf": `server {
    listen 127.0.0.1:8080;
    root ./public;
    location = /hello { return 200 "hello\n"; }
}
`,
		"partial.conf": `server {
    listen 8080;
    root ./public;
    if ($host = x) { return 403; }
}
`,
		"Caddyfile": `:8080 {
	root * ./public
	respond /hello "hello" 200
	basicauth /private/* {
		alice JDJhJDEwJGRoZm5GM2RNRlJkNkJpMFhaM0VQaXVZQjRFYXY3MHBRVTRUL2VldUN0SWRRVW9PMDJpYlhL
	}
	file_server
}
`,
	})
	t.Chdir(dir)

	r := sluice(t, "convert", "site.conf")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("sluice convert site.conf = %d, stderr %q", r.code, r.stderr)
	}
	want := `# Converted by sluice convert from site.conf (nginx).
listen: 127.0.0.1:8080
routes:
  - match: /hello
    pipeline:
      - text: {status: 200, body: "hello\n"}
  - match: /
    pipeline:
      - files: ./public
`
	if r.stdout != want {
		t.Errorf("sluice convert site.conf:\n%s\nwant\n%s", r.stdout, want)
	}
	writeFiles(t, dir, map[string]string{"out.yaml": r.stdout})
	if f := sluice(t, "fmt", "-c", "out.yaml"); f.code != 0 || f.stdout != r.stdout {
		t.Errorf("sluice fmt changes the converted config:\n%s", f.stdout)
	}
	if c := sluice(t, "check", "-c", "out.yaml"); c.code != 0 || c.stdout != "ok\n" {
		t.Errorf("sluice check of the converted config = %d\n%s%s", c.code, c.stdout, c.stderr)
	}

	// Something not translated: named, exit 1, the config written.
	r = sluice(t, "convert", "partial.conf")
	if r.code != 1 || !strings.Contains(r.stdout, "files: ./public") ||
		!strings.HasPrefix(r.stderr, `partial.conf:4: directive "if": not translated: `) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("sluice convert partial.conf = %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}

	// A Caddyfile by its name; -o after the file, and the htpasswd
	// file of basicauth written beside it.
	r = sluice(t, "convert", "Caddyfile", "-o", "caddy.yaml")
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("sluice convert Caddyfile -o caddy.yaml = %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if c := sluice(t, "check", "-c", "caddy.yaml"); c.code != 0 {
		t.Errorf("sluice check of the converted Caddyfile = %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	if b, err := os.ReadFile("basicauth-4.htpasswd"); err != nil || !strings.HasPrefix(string(b), "alice:$2a$10$") {
		t.Errorf("basicauth-4.htpasswd = %q, %v", b, err)
	}
	// Without -o the htpasswd file cannot be written: noted.
	r = sluice(t, "convert", "--from", "caddy", "Caddyfile")
	if r.code != 1 || !strings.Contains(r.stderr, `Caddyfile:4: directive "basicauth": not translated: its users go to the htpasswd file basicauth-4.htpasswd`) {
		t.Errorf("sluice convert --from caddy Caddyfile = %d\n%s", r.code, r.stderr)
	}

	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"convert"}, 2, "want one FILE to convert"},
		{[]string{"convert", "a.conf", "b.conf"}, 2, "want one FILE to convert"},
		{[]string{"convert", "--from", "apache", "site.conf"}, 2, `--from "apache": want nginx or caddy`},
		{[]string{"convert", "missing.conf"}, 1, "missing.conf: no such file or directory"},
		{[]string{"convert", "--from", "caddy", "site.conf"}, 1, `site.conf:5: unexpected "}"`},
	} {
		r := sluice(t, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.msg) {
			t.Errorf("sluice %q = %d, stderr %q; want %d and %q", tt.args, r.code, r.stderr, tt.code, tt.msg)
		}
	}
}

// Every nginx config and Caddyfile in the docs (the cookbook's, php.md's,
// convert.md's) converts into a config that sluice check accepts, its
// files made as TestDocConfigs makes them: whatever the converter leaves
// out, what it writes is a config that runs.
func TestConvertDocs(t *testing.T) {
	fx := newDocFixtures(t)
	converted := 0
	for _, name := range docFiles(t) {
		for _, b := range codeBlocks(t, name) {
			var from, file string
			switch b.lang {
			case "nginx":
				from, file = "nginx", "site.conf"
			case "caddy", "caddyfile":
				from, file = "caddy", "Caddyfile"
			default:
				continue
			}
			converted++
			t.Run(fmt.Sprintf("%s:%d", b.file, b.line), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				in := filepath.Join(dir, file)
				writeFiles(t, dir, map[string]string{file: strings.Join(b.lines, "\n") + "\n"})
				r := sluice(t, "convert", "--from", from, in)
				if r.code > 1 || r.stdout == "" {
					t.Fatalf("sluice convert = %d:\n%s", r.code, r.stderr)
				}
				checkConverted(t, b, r.stdout, fx)
			})
		}
	}
	if converted < 10 {
		t.Errorf("only %d nginx and Caddy configs found in the docs", converted)
	}
}

// keyFile finds the key files of TLS listeners in a config.
var keyFile = regexp.MustCompile(`\bkey: ([^,}\s]+)`)

// checkConverted runs sluice check on a config converted from the doc
// block b, in a directory where the files it names are made as
// TestDocConfigs makes them (see stub). Warnings are allowed: the
// converter cannot know what the input does not say (PHP-FPM's
// pm.max_children for max_conns).
func checkConverted(t *testing.T, b codeBlock, config string, fx *docFixtures) {
	t.Helper()
	c := complete(codeBlock{file: b.file, lang: "yaml", lines: strings.Split(strings.TrimSuffix(config, "\n"), "\n")})
	dir := t.TempDir()
	// stub would write a certificate into a key file named *.pem
	// (Let's Encrypt's privkey.pem): made first, stub leaves it.
	for _, m := range keyFile.FindAllStringSubmatch(c.text(), -1) {
		writeFiles(t, dir, map[string]string{m[1]: string(fx.key)})
	}
	stub(t, c, dir, fx)
	file := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(file, []byte(c.text()), 0o644); err != nil {
		t.Fatal(err)
	}
	r := sluice(t, "check", "-c", file)
	if r.code != 0 || r.stdout != "ok\n" {
		t.Errorf("the config converted from %s:%d fails sluice check:\n%s%s\nchecked as:\n%s", b.file, b.line, r.stdout, r.stderr, c.text())
	}
}
