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
// maps, | blocks) and blank lines between entries; the meaning does not
// change. A YAML syntax error gives an Errors. Format does not check the
// config (see Parse).
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
	return keepBlankLines(data, docs, out.Bytes()), nil
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
