package nginx_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/convert/nginx"
)

// show writes directives compactly: name [args] {block};
func show(dirs []*nginx.Directive) string {
	var b strings.Builder
	for _, d := range dirs {
		fmt.Fprintf(&b, "%d:%s%q", d.Line, d.Name, d.Args)
		if d.HasBlock {
			fmt.Fprintf(&b, "{%s}", show(d.Block))
		}
		b.WriteString(";")
	}
	return b.String()
}

var parseTests = []struct {
	in, want, err string
}{
	{in: "", want: ""},
	{in: "listen 80;", want: `1:listen["80"];`},
	{in: "server { listen 80; }", want: `1:server[]{1:listen["80"];};`},
	{in: "server {}", want: `1:server[]{};`},
	{in: "# comment\nroot /srv; # another\n", want: `2:root["/srv"];`},
	{in: `return 200 "a \"quoted\" ; {text}";`, want: `1:return["200" "a \"quoted\" ; {text}"];`},
	{in: `add_header X 'single # not a comment';`, want: `1:add_header["X" "single # not a comment"];`},
	{in: "location ~ ^/a/(\\d+)$ {\n  return 301 /b/$1;\n}", want: `1:location["~" "^/a/(\\d+)$"]{2:return["301" "/b/$1"];};`},
	{in: "return 301 https://${host}$request_uri;", want: `1:return["301" "https://${host}$request_uri"];`},
	{in: "a\n\n b\n  c;", want: `1:a["b" "c"];`},
	{in: "server {", err: "site.conf:1: unexpected end of file: a block is not closed with }"},
	{in: "}", err: `site.conf:1: unexpected "}": no block is open`},
	{in: "listen 80", err: `site.conf:1: unexpected end of file: directive "listen" is not terminated by ";"`},
	{in: "server { listen 80 }", err: `site.conf:1: directive "listen" is not terminated by ";"`},
	{in: "\n\nroot \"/srv;\n", err: "site.conf:3: unexpected end of file: the quote opened here is never closed"},
	{in: ";", err: `site.conf:1: unexpected ";": a directive starts with its name`},
	{in: `root "a"b;`, err: `site.conf:1: unexpected 'b' after a quoted string`},
	{in: strings.Repeat("a {", 60), err: "site.conf:1: blocks nested more than 50 deep"},
}

func TestParse(t *testing.T) {
	for _, tt := range parseTests {
		dirs, err := nginx.Parse("site.conf", []byte(tt.in))
		switch {
		case tt.err != "":
			if err == nil || err.Error() != tt.err {
				t.Errorf("Parse(%q) = %v, want error %q", tt.in, err, tt.err)
			}
		case err != nil:
			t.Errorf("Parse(%q): %v", tt.in, err)
		case show(dirs) != tt.want:
			t.Errorf("Parse(%q) = %s, want %s", tt.in, show(dirs), tt.want)
		}
	}
}

// Load follows include, relative to the main file's directory, with
// globs; an include of itself is an error.
func TestLoadInclude(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("nginx.conf", "http {\n  include mime.types;\n  include sites/*.conf;\n}\n")
	write("sites/a.conf", "server { listen 80; include snippets/root.conf; }\n")
	write("sites/b.conf", "server { listen 81; }\n")
	write("snippets/root.conf", "root /srv;\n")
	dirs, err := nginx.Load(filepath.Join(dir, "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := show(dirs), `1:http[]{2:include["mime.types"];1:server[]{1:listen["80"];1:root["/srv"];};1:server[]{1:listen["81"];};};`; got != want {
		t.Errorf("Load = %s, want %s", got, want)
	}
	if f := dirs[0].Block[1].Block[1].File; f != filepath.Join(dir, "snippets/root.conf") {
		t.Errorf("the included root directive's file is %q", f)
	}

	write("loop.conf", "include loop2.conf;\n")
	write("loop2.conf", "include loop.conf;\n")
	if _, err := nginx.Load(filepath.Join(dir, "loop.conf")); err == nil || !strings.Contains(err.Error(), "included again by itself") {
		t.Errorf("Load of an include loop = %v", err)
	}
	write("bad.conf", "server {\n  include broken.conf;\n}\n")
	write("broken.conf", "listen 80\n")
	_, err = nginx.Load(filepath.Join(dir, "bad.conf"))
	var e *nginx.Error
	if !errors.As(err, &e) || e.File != filepath.Join(dir, "broken.conf") || e.Line != 1 {
		t.Errorf("Load with a broken include = %v, want the error at broken.conf:1", err)
	}
}

// FuzzParse: Parse never panics and terminates; what it accepts
// translates without a panic into YAML that parses.
func FuzzParse(f *testing.F) {
	for _, tt := range parseTests {
		f.Add(tt.in)
	}
	for _, tt := range translateTests {
		f.Add(tt.conf)
	}
	f.Fuzz(func(t *testing.T, in string) {
		dirs, err := nginx.Parse("site.conf", []byte(in))
		if err != nil {
			var e *nginx.Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse(%q): error %v is not an *Error", in, err)
			}
			return
		}
		cfg, _ := nginx.Translate(dirs)
		data, _ := cfg.YAML("")
		if _, err := config.Format("sluice.yaml", data); err != nil {
			t.Fatalf("Translate(%q) wrote YAML that does not parse: %v\n%s", in, err, data)
		}
		routingErrors(t, in, data)
	})
}

// routingErrors fails the test when config refuses data for what a
// translator controls in every config — the keys and components, the
// matches, hosts and listen addresses, the order of a pipeline — rather
// than for files missing on this machine or a value a component refuses
// (which the translators check for the common options only).
func routingErrors(t *testing.T, in string, data []byte) {
	loader := &config.Loader{Context: components.Context{Logger: slog.New(slog.DiscardHandler)}}
	cfg, err := loader.Parse("/nonexistent/sluice.yaml", data)
	if err == nil {
		cfg.Close()
		return
	}
	var errs config.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Parse: %v", err)
	}
	for _, e := range errs {
		for _, bad := range []string{"unknown", "match", "host:", "listen:", "filter", "source", "nothing may follow", "twice", "YAML"} {
			if strings.Contains(e.Msg, bad) {
				t.Fatalf("Translate(%q) wrote a config refused for %q:\n%s\n%s", in, e.Msg, err, data)
			}
		}
	}
}
