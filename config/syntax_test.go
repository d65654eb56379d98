package config

import (
	"bytes"
	"strings"
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

// A syntax error at a tab says YAML indents with spaces; a bracket or
// quote not closed, a value with ": " unquoted, a key without its colon
// say what to look for; the parser's message comes first.
func TestSyntaxErrorTab(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"routes:\n\t- match: /\n", "t.yaml:2:1: YAML syntax: found character that cannot start any token (a tab: YAML indents with spaces only)"},
		{"listen: [127.0.0.1:0\nroutes: []\n", "t.yaml:1:1: YAML syntax: did not find expected ',' or ']' (a [ list on this line is not closed with ]"},
		{"listen: {address: x\nroutes: []\n", "t.yaml:1:1: YAML syntax: did not find expected ',' or '}' (a { map on this line is not closed with }"},
		{"routes:\n  - match: /\n    pipeline: [text: \"a\"b]\n", "t.yaml:3:5: YAML syntax: did not find expected ',' or ']' (a [ list on this line"},
		{"listen: \"127.0.0.1:0\nroutes: []\n", "t.yaml:1:1: YAML syntax: found unexpected end of stream (a quote opened on this line is not closed)"},
		{"routes:\n  - match: /\n    pipeline:\n      - text: hello: world\n", "t.yaml:4:7: YAML syntax: mapping values are not allowed in this context (a value holding \": \" needs quotes around it all, e.g. text: \"a: b\")"},
		{"routes:\n  - match: /\n    pipeline\n      - echo\n", "t.yaml:3:5: YAML syntax: could not find expected ':' (a key lacks its colon, e.g. pipeline: rather than pipeline)"},
		{"routes:\n  - match: /\n    pipeline:\n\t  - echo\n", "t.yaml:4:1: YAML syntax: found character that cannot start any token (a tab: YAML indents with spaces only)"},
		{"routes: [a, b\n", "t.yaml:1:1: YAML syntax: did not find expected ',' or ']' (a [ list on this line is not closed with ], its items lack a comma between them, or an item holding a quote, comma or bracket needs quotes around it all)"},
	} {
		p := &parser{decoder: decoder{file: "t.yaml"}}
		var v any
		err := yaml.Unmarshal([]byte(tc.data), &v)
		if err == nil {
			t.Fatalf("%q parses", tc.data)
		}
		p.syntaxError([]byte(tc.data), err)
		if len(p.errs) != 1 || !strings.HasPrefix(p.errs[0].Error(), tc.want) {
			t.Errorf("%q: %v\nwant %s", tc.data, p.errs, tc.want)
		}
	}
}
