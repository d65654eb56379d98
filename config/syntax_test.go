package config

import (
	"bytes"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzSyntaxPosition: for any data that is not valid YAML, the position
// of the error is a line of data and a column within it (or 1).
func FuzzSyntaxPosition(f *testing.F) {
	for _, seed := range []string{
		"routes:\n  - match: /\n    pipeline:\n      - files: ./public\n     - compress\n",
		"routes:\n  - match: /\n    pipeline:\n\t- text: hi\n",
		"routes: [a, b\n",
		"a: \"unclosed\n",
		"a: b: c\n",
		"\t",
		"- a\nb: c\n",
		"---\na: 1\n---\n[\n",
		"a:\r\n  - b\r\n - c\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if parses(data) {
			return
		}
		line, col := syntaxPosition(data)
		lines := bytes.SplitAfter(data, []byte("\n"))
		if len(lines) > 1 && len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		if line < 1 || line > len(lines) {
			t.Fatalf("syntaxPosition(%q) = line %d of %d", data, line, len(lines))
		}
		if col < 1 || col > max(1, len(lines[line-1])) {
			t.Fatalf("syntaxPosition(%q) = %d:%d, line %q", data, line, col, lines[line-1])
		}
	})
}

// A syntax error at a tab says YAML indents with spaces; others keep
// the parser's message.
func TestSyntaxErrorTab(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"routes:\n\t- match: /\n", "t.yaml:2:1: YAML syntax: found character that cannot start any token (a tab: YAML indents with spaces only)"},
		{"routes:\n  - match: /\n    pipeline:\n\t  - echo\n", "t.yaml:4:1: YAML syntax: found character that cannot start any token (a tab: YAML indents with spaces only)"},
		{"routes: [a, b\n", "t.yaml:1:1: YAML syntax: did not find expected ',' or ']'"},
	} {
		p := &parser{decoder: decoder{file: "t.yaml"}}
		var v any
		err := yaml.Unmarshal([]byte(tc.data), &v)
		if err == nil {
			t.Fatalf("%q parses", tc.data)
		}
		p.syntaxError([]byte(tc.data), err)
		if len(p.errs) != 1 || p.errs[0].Error() != tc.want {
			t.Errorf("%q: %v\nwant %s", tc.data, p.errs, tc.want)
		}
	}
}
