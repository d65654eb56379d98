package config

import (
	"bytes"
	"io"
	"regexp"

	"go.yaml.in/yaml/v3"
)

// yamlPrefix is what go-yaml puts before a syntax error's message: the
// package and, mostly, a line number (see syntaxError).
var yamlPrefix = regexp.MustCompile(`^yaml: (line \d+: )?`)

// syntaxError reports a YAML syntax error in data at the line that is
// wrong.
//
// go-yaml's message names the line of the construct it was parsing when
// it failed (the enclosing mapping or list, and for a parser error that
// line counted from 0) rather than the line at fault, and gives no
// column: a mis-indented "- compress" on line 6 was reported at 2:1. The
// line at fault is found here instead (see syntaxPosition) and only the
// message is kept from go-yaml.
func (p *parser) syntaxError(data []byte, err error) {
	line, col := syntaxPosition(data)
	msg := yamlPrefix.ReplaceAllString(err.Error(), "")
	switch {
	case atTab(data, line, col):
		msg += " (a tab: YAML indents with spaces only)"
	case msg == "did not find expected key", msg == "did not find expected '-' indicator":
		msg += " (is this line indented like the others of its list or map?)"
	case msg == "did not find expected ',' or ']'":
		msg += " (a [ list on this line is not closed with ], its items lack a comma between them, or an item holding a quote, comma or bracket needs quotes around it all)"
	case msg == "did not find expected ',' or '}'":
		msg += " (a { map on this line is not closed with }, its entries lack a comma between them, or a value holding a quote, comma or brace needs quotes around it all)"
	case msg == "found unexpected end of stream":
		msg += " (a quote opened on this line is not closed)"
	case msg == "mapping values are not allowed in this context":
		msg += " (a value holding \": \" needs quotes around it all, e.g. text: \"a: b\")"
	case msg == "could not find expected ':'":
		msg += " (a key lacks its colon, e.g. pipeline: rather than pipeline)"
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Col: col, Msg: "YAML syntax: " + msg})
}

// atTab reports whether data's line line (1-based) has a tab at column
// col, where syntaxPosition puts a syntax error.
func atTab(data []byte, line, col int) bool {
	lines := bytes.SplitAfter(data, []byte("\n"))
	return line <= len(lines) && col <= len(lines[line-1]) && lines[line-1][col-1] == '\t'
}

// syntaxPosition returns the line and column of the syntax error in data,
// which does not parse: the line after the longest run of whole lines
// from the start that parses (no text after a faulty line can make it
// valid again; a quote or bracket never closed is blamed on the line
// that opens it), at its first character other than a space (YAML
// indents with spaces only; a tab there is itself the fault). Prefixes
// are tried from the longest down: parsing stops at the first error, so
// each failing attempt costs about the length up to the fault.
func syntaxPosition(data []byte) (line, col int) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > 1 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	ends := make([]int, len(lines)+1) // ends[k]: the length of the first k lines
	for i, l := range lines {
		ends[i+1] = ends[i] + len(l)
	}
	k := len(lines) - 1
	for k > 0 && !parses(data[:ends[k]]) {
		k--
	}
	text := lines[k]
	indent := len(text) - len(bytes.TrimLeft(text, " "))
	if indent == len(bytes.TrimRight(text, "\r\n")) {
		indent = 0 // a blank line: its start
	}
	return k + 1, indent + 1
}

// parses reports whether data is a stream of valid YAML documents.
func parses(data []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		switch err := dec.Decode(&doc); err {
		case nil:
		case io.EOF:
			return true
		default:
			return false
		}
	}
}
