package config

import (
	"bytes"
	"io"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Format returns the YAML config data, read from file, in canonical form:
// two-space indentation with lists indented under their key, one space
// before a line comment, at most one blank line between entries. Comments
// are kept, as are the styles of values (quoting, [flow] lists, {flow}
// maps, | blocks) and blank lines between entries: a flow list or map
// written on one line stays on one line, and one written over several
// lines gets one entry a line, its closing bracket on a line of its own
// (so a pretty-printed JSON file stays so). The meaning does not change.
// Data with no document (empty, or blank lines) gives nothing. A YAML
// syntax error gives an Errors. Format does not check the config (see
// Parse).
func Format(file string, data []byte) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if err == io.EOF {
			break
		}
		if err != nil {
			p := &parser{decoder: decoder{file: file}}
			p.syntaxError(data, err)
			return nil, p.errs
		}
		docs = append(docs, &doc)
	}
	if len(docs) == 0 { // nothing but blank lines: nothing to write
		return nil, nil
	}
	for _, doc := range docs {
		markMultiLineFlow(doc)
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	for _, doc := range docs {
		if err := enc.Encode(doc); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return keepBlankLines(data, docs, dropBreakMarks(out.Bytes())), nil
}

// breakMark is the comment markMultiLineFlow puts on the entries of a
// flow list or map written over several lines: the encoder writes an
// entry with a comment on a line of its own, and dropBreakMarks then
// takes the comments out again. No config holds this text in a comment.
const breakMark = "#\u2063sluice-fmt-break"

// markMultiLineFlow marks the entries of every flow list and map under n
// that was written over several lines (an entry on another line than its
// opening bracket) with breakMark, so that the encoder, which writes a
// flow collection on one line, writes each entry on a line of its own.
// An entry that has a comment of its own is left as it is: the encoder
// breaks the line after it already.
func markMultiLineFlow(n *yaml.Node) {
	for _, c := range n.Content {
		markMultiLineFlow(c)
	}
	if n.Style&yaml.FlowStyle == 0 || n.Kind != yaml.SequenceNode && n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		return
	}
	multi := false
	for _, c := range n.Content {
		multi = multi || c.Line != n.Line
	}
	if !multi {
		return
	}
	if first := n.Content[0]; first.HeadComment == "" {
		first.HeadComment = breakMark
	}
	step := 1
	if n.Kind == yaml.MappingNode {
		step = 2 // the comment goes on the value
	}
	for i := step - 1; i < len(n.Content); i += step {
		if c := n.Content[i]; c.LineComment == "" && c.FootComment == "" {
			c.LineComment = breakMark
		}
	}
}

// dropBreakMarks takes out of out the comments markMultiLineFlow added:
// a line that is only the mark goes, a mark after an entry goes with the
// space before it, and so does the comma the encoder writes after the
// last entry of a list or map when the closing bracket follows.
func dropBreakMarks(out []byte) []byte {
	if !bytes.Contains(out, []byte(breakMark)) {
		return out
	}
	lines := strings.Split(string(out), "\n")
	kept := make([]string, 0, len(lines))
	for i, l := range lines {
		if strings.TrimSpace(l) == breakMark {
			continue
		}
		// The encoder ends a flow map broken over lines with its
		// closing brace at the start of a line: it goes two columns to
		// the left of the entries, where a list's bracket goes.
		if strings.HasPrefix(l, "}") && i > 0 && strings.HasSuffix(lines[i-1], " "+breakMark) && len(kept) > 0 {
			prev := kept[len(kept)-1]
			if indent := len(prev) - len(strings.TrimLeft(prev, " ")); indent >= 2 {
				l = strings.Repeat(" ", indent-2) + l
			}
		}
		if before, ok := strings.CutSuffix(l, " "+breakMark); ok {
			l = before
			if i+1 < len(lines) {
				next := strings.TrimSpace(lines[i+1])
				if strings.HasPrefix(next, "]") || strings.HasPrefix(next, "}") {
					l = strings.TrimSuffix(l, ",")
				}
			}
		}
		kept = append(kept, l)
	}
	return []byte(strings.Join(kept, "\n"))
}

// keepBlankLines puts back into out, the encoding of docs, the blank lines
// that separated entries (map keys and list items) in the original data:
// the encoder drops them. The two texts hold the same trees, so their
// entries pair up in order.
func keepBlankLines(data []byte, docs []*yaml.Node, out []byte) []byte {
	dec := yaml.NewDecoder(bytes.NewReader(out))
	var outDocs []*yaml.Node
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			break
		}
		outDocs = append(outDocs, &doc)
	}
	if len(outDocs) != len(docs) {
		return out
	}
	var inLines, outLines []int
	for i := range docs {
		inLines = entryLines(docs[i], inLines)
		outLines = entryLines(outDocs[i], outLines)
	}
	if len(inLines) != len(outLines) {
		return out
	}
	src := strings.Split(string(data), "\n")
	dst := strings.Split(string(out), "\n")
	blankAt := map[int]bool{} // 0-based indexes of dst lines to put a blank line before
	for i, l := range inLines {
		if top := blockTop(src, l-1); top > 0 && strings.TrimSpace(src[top-1]) == "" && nonBlankBefore(src, top-1) {
			if t := blockTop(dst, outLines[i]-1); t > 0 {
				blankAt[t] = true
			}
		}
	}
	if len(blankAt) == 0 {
		return out
	}
	at := make([]int, 0, len(blankAt))
	for i := range blankAt {
		at = append(at, i)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(at)))
	for _, i := range at {
		if strings.TrimSpace(dst[i-1]) == "" {
			continue
		}
		dst = append(dst[:i], append([]string{""}, dst[i:]...)...)
	}
	return []byte(strings.Join(dst, "\n"))
}

// entryLines appends the lines of n's entries (map keys and list items),
// depth first in document order.
func entryLines(n *yaml.Node, lines []int) []int {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			lines = entryLines(c, lines)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			lines = append(lines, n.Content[i].Line)
			lines = entryLines(n.Content[i+1], lines)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			lines = append(lines, c.Line)
			lines = entryLines(c, lines)
		}
	}
	return lines
}

// blockTop returns the index of the first line of the comment block
// directly above lines[i], or i when there is none.
func blockTop(lines []string, i int) int {
	if i < 0 || i >= len(lines) {
		return -1
	}
	for i > 0 && strings.HasPrefix(strings.TrimSpace(lines[i-1]), "#") {
		i--
	}
	return i
}

// nonBlankBefore reports whether some line before lines[i] has content,
// so that blank lines at the start of a file are not kept.
func nonBlankBefore(lines []string, i int) bool {
	for j := i - 1; j >= 0; j-- {
		if strings.TrimSpace(lines[j]) != "" {
			return true
		}
	}
	return false
}
