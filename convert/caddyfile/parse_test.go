package caddyfile_test

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
	"github.com/sluice-server/sluice/convert/caddyfile"
)

// show writes directives compactly: name [args] {block};
func show(dirs []*caddyfile.Directive) string {
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
	{in: "example.com", want: `1:example.com[];`},
	{in: ":8080 {\n\tfile_server\n}", want: `1::8080[]{2:file_server[];};`},
	{in: "{\n\temail a@b.c\n}\na.com, b.com {\n}", want: `1:[]{2:email["a@b.c"];};4:a.com,["b.com"]{};`},
	{in: "a {\n\trespond \"a \\\"b\\\" # c\" 200 # comment\n}", want: `1:a[]{2:respond["a \"b\" # c" "200"];};`},
	{in: "a {\n\trespond `raw \"x\"`\n}", want: `1:a[]{2:respond["raw \"x\""];};`},
	{in: "a {\n\treverse_proxy \\\n\t\tone two\n}", want: `1:a[]{2:reverse_proxy["one" "two"];};`},
	{in: "a {\n\t@m {\n\t\tpath /x/*\n\t}\n}", want: `1:a[]{2:@m[]{3:path["/x/*"];};};`},
	{in: "(s) {\n\tencode {args[0]}\n}\na {\n\timport s gzip\n}", want: `4:a[]{2:encode["gzip"];};`},
	{in: "a {\n\troot {$ROOT:/srv}\n}", want: `1:a[]{2:root["/srv"];};`},
	{in: "a {\n\troot {$HOME_DIR}\n}", want: `1:a[]{2:root["/home/me"];};`},
	{in: "a {", err: "Caddyfile:1: unexpected end of file: a block is not closed with }"},
	{in: "}", err: `Caddyfile:1: unexpected "}": no block is open`},
	{in: "a {\n\trespond \"x\n}", err: "Caddyfile:2: unexpected end of file: the quote opened here is never closed"},
	{in: "(s) {\n\timport s\n}\na {\n\timport s\n}", err: "imports nested more than 50 deep"},
	{in: wide(), err: "imports expand to more than 100000 directives"},
}

// wide is a Caddyfile whose snippets, each importing the one before ten
// times, expand to a million directives.
func wide() string {
	var b strings.Builder
	b.WriteString("(s0) {\n" + strings.Repeat("\tx\n", 10) + "}\n")
	for i := 1; i <= 6; i++ {
		fmt.Fprintf(&b, "(s%d) {\n%s}\n", i, strings.Repeat(fmt.Sprintf("\timport s%d\n", i-1), 10))
	}
	b.WriteString("a {\n\timport s6\n}\n")
	return b.String()
}

func TestParse(t *testing.T) {
	env := func(name string) (string, bool) {
		if name == "HOME_DIR" {
			return "/home/me", true
		}
		return "", false
	}
	for _, tt := range parseTests {
		dirs, err := caddyfile.Parse("Caddyfile", []byte(tt.in), env)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Parse(%q) = %v, want error %q", tt.in, err, tt.err)
			}
		case err != nil:
			t.Errorf("Parse(%q): %v", tt.in, err)
		case show(dirs) != tt.want:
			t.Errorf("Parse(%q) = %s, want %s", tt.in, show(dirs), tt.want)
		}
	}
}

// Load imports files relative to the importing file, with globs.
func TestLoadImport(t *testing.T) {
	dir := t.TempDir()
	for name, s := range map[string]string{
		"Caddyfile":       "import sites/*\n",
		"sites/a":         "a.example {\n\timport ../common\n}\n",
		"sites/../common": "encode gzip\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dirs, err := caddyfile.Load(filepath.Join(dir, "Caddyfile"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := show(dirs), `1:a.example[]{1:encode["gzip"];};`; got != want {
		t.Errorf("Load = %s, want %s", got, want)
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
		dirs, err := caddyfile.Parse("Caddyfile", []byte(in), nil)
		if err != nil {
			var e *caddyfile.Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse(%q): error %v is not an *Error", in, err)
			}
			return
		}
		cfg, _, _ := caddyfile.Translate(dirs, false)
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
