package config

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Two routes whose hosts differ only in case or a final dot match the
// same requests: the config's own check reports the second at its line
// and column, naming the first's, in whichever file each is.
func TestRouteHostSpellingsDuplicate(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"case and final dot", map[string]string{"test.yaml": `
routes:
  - match: /
    host: example.com
    pipeline: [{text: a}]
  - match: /
    host: Example.com.
    pipeline: [{text: b}]
`}, `test.yaml:6:12: match "/" is already matched at 3:12 for host example.com`},
		{"in an included file", map[string]string{"test.yaml": `
routes:
  - match: /
    pipeline: [{text: root}]
  - match: /a/
    host: EXAMPLE.com.
    pipeline: [{text: a}]
  - include: inc.yaml
`, "inc.yaml": "routes:\n  - match: /a/\n    host: example.com\n    pipeline: [{text: b}]\n"},
			`inc.yaml:2:12: match "/a/" is already matched at test.yaml:5:12 for host example.com`},
		{"a site's host", map[string]string{"test.yaml": `
sites:
  - hosts: example.com
    routes: [{match: /, pipeline: [{text: a}]}]
routes:
  - match: /
    host: Example.COM.
    pipeline: [{text: b}]
`}, `test.yaml:7:11: host: example.com. is served by the site at 3:5`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			data, err := os.ReadFile(filepath.Join(dir, "test.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = testLoader().Parse(filepath.Join(dir, "test.yaml"), data)
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			msg := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error\n%s\nwant one with\n%s", msg, tt.want)
			}
		})
	}
}

// A host name beyond ASCII is refused with its punycode form to write,
// in a site's hosts and a route's host.
func TestHostNameIDNSuggestsPunycode(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"sites:\n  - hosts: [bücher.de]\n    routes: [{match: /, pipeline: [{text: a}]}]\n",
			`test.yaml:2:13: hosts: "bücher.de" is not ASCII: write its punycode form "xn--bcher-kva.de"`},
		{"sites:\n  - hosts: \"*.Bücher.de\"\n    routes: [{match: /, pipeline: [{text: a}]}]\n",
			`test.yaml:2:12: hosts: "*.Bücher.de" is not ASCII: write its punycode form "*.xn--bcher-kva.de"`},
		{"routes:\n  - match: /\n    host: bücher.de\n    pipeline: [{text: a}]\n",
			`test.yaml:3:11: host: "bücher.de" is not ASCII: write its punycode form "xn--bcher-kva.de"`},
		{"routes:\n  - match: /\n    host: a_b\u00a0c\n    pipeline: [{text: a}]\n",
			`test.yaml:3:11: host: want a host name such as "example.com" or "*.example.com", got "a_b\u00a0c"`},
	} {
		dir := t.TempDir()
		_, err := parseString(t, dir, tt.text)
		if err == nil {
			t.Errorf("%s: no error, want %q", tt.text, tt.want)
			continue
		}
		msg := strings.ReplaceAll(err.Error(), filepath.Join(dir, "test.yaml"), "test.yaml")
		if !strings.Contains(msg, tt.want) {
			t.Errorf("%s\nerror\n%s\nwant one with\n%s", tt.text, msg, tt.want)
		}
	}
}

// FuzzHostError: a suggested punycode form is a host name the config
// takes, and plain ASCII.
func FuzzHostError(f *testing.F) {
	for _, s := range []string{"bücher.de", "*.Bücher.de", "a b", "*.", "xn--bcher-kva.de", "ß.de", "\u00a0.de", "a..b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		msg := hostError("host", h)
		_, form, ok := strings.Cut(msg, "punycode form ")
		if !ok {
			return
		}
		form, _, _ = strings.Cut(form, ", which")
		s, err := strconv.Unquote(form)
		if err != nil || !validHost(s) || strings.ContainsFunc(s, func(r rune) bool { return r >= 0x80 }) {
			t.Fatalf("host %q: suggests %s (%q, %v)", h, form, s, err)
		}
	})
}
