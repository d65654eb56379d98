package pipe

import (
	"fmt"
	"strings"
)

// A route pattern with captures is split into segments: each is a literal
// the path segment must equal, or a capture that takes the path segment
// as a named parameter.
type segment struct {
	literal string // the segment itself, when name is ""
	name    string // the capture's name; "" for a literal
	isInt   bool   // {name:int}: the value must be a decimal int64
}

// parsePattern splits a canonical pattern into segments. It returns nil
// segments (and no error) for a pattern without captures, which is
// matched as a literal path or prefix.
func parsePattern(p string) ([]segment, error) {
	if !strings.ContainsAny(p, "{}") {
		return nil, nil
	}
	if strings.HasSuffix(p, "/") {
		return nil, fmt.Errorf("pattern %q: a pattern with captures matches one path shape and cannot be a prefix (drop the final /)", p)
	}
	var segs []segment
	names := map[string]bool{}
	for _, s := range strings.Split(p[1:], "/") {
		if !strings.ContainsAny(s, "{}") {
			segs = append(segs, segment{literal: s})
			continue
		}
		if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' || strings.ContainsAny(s[1:len(s)-1], "{}") {
			return nil, fmt.Errorf("pattern %q: %q: a capture is a whole segment, {name} or {name:int}", p, s)
		}
		name, typ, typed := strings.Cut(s[1:len(s)-1], ":")
		if !isIdentifier(name) {
			return nil, fmt.Errorf("pattern %q: capture name %q: want a letter or _ followed by letters, digits or _", p, name)
		}
		if names[name] {
			return nil, fmt.Errorf("pattern %q: capture %q is named twice", p, name)
		}
		names[name] = true
		if typed && typ != "int" {
			return nil, fmt.Errorf("pattern %q: capture %q has the unknown type %q (the one type is int; {%s} takes any segment)", p, name, typ, name)
		}
		segs = append(segs, segment{name: name, isInt: typed})
	}
	return segs, nil
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// CheckPattern reports what is wrong with the captures of a route pattern
// (see Route.Match): a brace that does not form a whole segment, a name
// that is not an identifier or is used twice, an unknown type, or
// captures in a prefix; for a regular expression (RegexPrefix), what
// CompileRegex refuses. A pattern without braces has nothing wrong here;
// NewRouter makes the other checks.
func CheckPattern(p string) error {
	if expr, ok := strings.CutPrefix(p, RegexPrefix); ok {
		_, err := CompileRegex(expr)
		return err
	}
	_, err := parsePattern(p)
	return err
}

// PatternKey returns the form two patterns share when they match the
// same paths: a capture's name and type are dropped, so "/a/{id:int}"
// and "/a/{name}" are both "/a/{}" (a segment that is not an integer
// still selects an int capture's route, which answers it 400). A pattern
// without captures, and a regular expression, is its own key. Two routes with the same key, host
// and an overlapping method set are refused by NewRouter.
func PatternKey(p string) string {
	if strings.HasPrefix(p, RegexPrefix) {
		return p
	}
	segs, err := parsePattern(p)
	if err != nil || segs == nil {
		return p
	}
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		if s.name != "" {
			b.WriteString("{}")
		} else {
			b.WriteString(s.literal)
		}
	}
	return b.String()
}

// segmentEnd returns the index of the '/' that ends the segment of p
// starting at i, or len(p).
func segmentEnd[S ~string | ~[]byte](p S, i int) int {
	for j := i; j < len(p); j++ {
		if p[j] == '/' {
			return j
		}
	}
	return len(p)
}

// countSegments returns the number of segments of the canonical path p,
// or 0 when p ends in '/' (no pattern with captures matches it).
func countSegments(p []byte) int {
	if len(p) < 2 || p[0] != '/' || p[len(p)-1] == '/' {
		return 0
	}
	n := 0
	for _, c := range p {
		if c == '/' {
			n++
		}
	}
	return n
}

// isInt64 reports whether s is an optional '-' and decimal digits that
// fit an int64, and if not, why.
func isInt64(s string) (ok bool, why string) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" {
		return false, "not an integer"
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false, "not an integer"
		}
	}
	var n uint64
	limit := uint64(1<<63 - 1)
	if len(digits) != len(s) {
		limit++ // -9223372036854775808
	}
	for i := 0; i < len(digits); i++ {
		d := uint64(digits[i] - '0')
		if n > (limit-d)/10 {
			return false, "integer out of range"
		}
		n = n*10 + d
	}
	return true, ""
}
