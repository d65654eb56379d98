package config

import (
	"bytes"
	"testing"
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
