// Package nginx reads nginx's configuration language and translates the
// server blocks it finds into a Sluice config (package convert).
//
// Parse reads one file into directives; Load reads a file and the files
// its include directives name; Translate turns directives into a
// convert.Config and notes on what it left out.
package nginx

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Directive is one directive: a name, its arguments with quotes removed
// and escapes applied, and its block when it has one.
type Directive struct {
	Name  string
	Args  []string
	Block []*Directive // the directives of its block; nil without one
	// HasBlock tells a directive with an empty block ({}) from one
	// ended by a semicolon.
	HasBlock bool
	File     string // the file it is written in
	Line     int    // its line there, from 1
}

// Error is a syntax error at a position of a file.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// checkUTF8 refuses a file that is not UTF-8 text, or holds control
// characters: a Sluice config cannot hold them.
func checkUTF8(file string, data []byte) error {
	for i, line := range bytes.Split(data, []byte("\n")) {
		if !utf8.Valid(line) {
			return &Error{File: file, Line: i + 1, Msg: "the file is not UTF-8 text"}
		}
		if j := bytes.IndexFunc(line, isControl); j >= 0 {
			return &Error{File: file, Line: i + 1, Msg: fmt.Sprintf("control character %U", bytes.Runes(line[j:])[0])}
		}
	}
	return nil
}

// isControl reports whether r is a control character other than tab and
// carriage return.
func isControl(r rune) bool {
	return r < 0x20 && r != '\t' && r != '\r' || r == 0x7f || 0x80 <= r && r < 0xa0 || r == 0xfeff
}

// maxDepth bounds the nesting of blocks and of includes.
const maxDepth = 50

// Parse reads data, the text of file, into its directives, which the
// caller owns. It expands no include: see Load. A syntax error is an
// *Error, as is a file that is not UTF-8 text or holds control
// characters (a Sluice config cannot hold them). Parse keeps no state:
// it is safe for concurrent use.
func Parse(file string, data []byte) ([]*Directive, error) {
	if err := checkUTF8(file, data); err != nil {
		return nil, err
	}
	p := &parser{file: file, data: data, line: 1}
	dirs, err := p.block(0)
	if err != nil {
		return nil, err
	}
	return dirs, nil
}

type parser struct {
	file string
	data []byte
	pos  int
	line int
}

// token kinds
const (
	tokWord = iota
	tokSemi
	tokOpen
	tokClose
	tokEOF
)

func (p *parser) errorf(line int, format string, args ...any) error {
	return &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// next returns the next token and the line it starts on.
func (p *parser) next() (kind int, text string, line int, err error) {
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '\n':
			p.line++
			p.pos++
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '#':
			for p.pos < len(p.data) && p.data[p.pos] != '\n' {
				p.pos++
			}
		default:
			goto token
		}
	}
	return tokEOF, "", p.line, nil
token:
	line = p.line
	switch c := p.data[p.pos]; c {
	case ';':
		p.pos++
		return tokSemi, ";", line, nil
	case '{':
		p.pos++
		return tokOpen, "{", line, nil
	case '}':
		p.pos++
		return tokClose, "}", line, nil
	case '"', '\'':
		p.pos++
		var b strings.Builder
		for {
			if p.pos >= len(p.data) {
				return 0, "", line, p.errorf(line, "unexpected end of file: the quote opened here is never closed")
			}
			d := p.data[p.pos]
			p.pos++
			switch {
			case d == c:
				if p.pos < len(p.data) && !isSpace(p.data[p.pos]) && !strings.ContainsRune(";{}", rune(p.data[p.pos])) {
					return 0, "", p.line, p.errorf(p.line, "unexpected %q after a quoted string", p.data[p.pos])
				}
				return tokWord, b.String(), line, nil
			case d == '\\' && p.pos < len(p.data):
				e := p.data[p.pos]
				p.pos++
				switch e {
				case '"', '\'', '\\':
					b.WriteByte(e)
				case 'n':
					b.WriteByte('\n')
				case 'r':
					b.WriteByte('\r')
				case 't':
					b.WriteByte('\t')
				default:
					b.WriteByte('\\')
					b.WriteByte(e)
				}
				if e == '\n' {
					p.line++
				}
			default:
				if d == '\n' {
					p.line++
				}
				b.WriteByte(d)
			}
		}
	}
	start := p.pos
	brace := false // inside ${...}
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if brace {
			if c == '}' {
				brace = false
			}
			if c == '\n' {
				p.line++
			}
			p.pos++
			continue
		}
		if isSpace(c) || c == ';' || c == '}' || c == '{' && !(p.pos > start && p.data[p.pos-1] == '$') {
			break
		}
		if c == '{' {
			brace = true
		}
		if c == '\\' && p.pos+1 < len(p.data) {
			p.pos++
		}
		p.pos++
	}
	if brace {
		return 0, "", line, p.errorf(line, "unexpected end of file: the ${ opened here is never closed")
	}
	return tokWord, string(p.data[start:p.pos]), line, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// block reads directives up to the end of the block at depth (the end of
// the file at depth 0).
func (p *parser) block(depth int) ([]*Directive, error) {
	if depth > maxDepth {
		return nil, p.errorf(p.line, "blocks nested more than %d deep", maxDepth)
	}
	dirs := []*Directive{}
	for {
		kind, text, line, err := p.next()
		if err != nil {
			return nil, err
		}
		switch kind {
		case tokEOF:
			if depth > 0 {
				return nil, p.errorf(line, "unexpected end of file: a block is not closed with }")
			}
			return dirs, nil
		case tokClose:
			if depth == 0 {
				return nil, p.errorf(line, `unexpected "}": no block is open`)
			}
			return dirs, nil
		case tokSemi:
			return nil, p.errorf(line, `unexpected ";": a directive starts with its name`)
		case tokOpen:
			return nil, p.errorf(line, `unexpected "{": a block follows a directive's name`)
		}
		d := &Directive{Name: text, File: p.file, Line: line}
	args:
		for {
			kind, text, aline, err := p.next()
			if err != nil {
				return nil, err
			}
			switch kind {
			case tokWord:
				d.Args = append(d.Args, text)
			case tokSemi:
				break args
			case tokOpen:
				d.HasBlock = true
				if d.Block, err = p.block(depth + 1); err != nil {
					return nil, err
				}
				break args
			case tokClose:
				return nil, p.errorf(aline, `directive %q is not terminated by ";"`, d.Name)
			case tokEOF:
				return nil, p.errorf(d.Line, `unexpected end of file: directive %q is not terminated by ";"`, d.Name)
			}
		}
		dirs = append(dirs, d)
	}
}

// Load reads file and every file its include directives name (globs
// allowed, relative paths relative to file's directory, as nginx takes
// them relative to its configuration's), replacing each include by the
// directives it names. An include that names no file is kept as a
// directive for Translate to judge (nginx's own fastcgi_params or
// mime.types need nothing in Sluice); one that includes itself, directly
// or not, is an error.
func Load(file string) ([]*Directive, error) {
	return load(file, filepath.Dir(file), nil)
}

func load(file, dir string, stack []string) ([]*Directive, error) {
	if len(stack) > maxDepth {
		return nil, fmt.Errorf("%s: includes nested more than %d deep", file, maxDepth)
	}
	abs, _ := filepath.Abs(file)
	for _, s := range stack {
		if s == abs {
			return nil, fmt.Errorf("%s: included again by itself (through %s)", file, strings.Join(stack, " -> "))
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	dirs, err := Parse(file, data)
	if err != nil {
		return nil, err
	}
	return expand(dirs, dir, append(stack, abs))
}

func expand(dirs []*Directive, dir string, stack []string) ([]*Directive, error) {
	var out []*Directive
	for _, d := range dirs {
		if d.Block != nil {
			b, err := expand(d.Block, dir, stack)
			if err != nil {
				return nil, err
			}
			d.Block = b
		}
		if d.Name != "include" || len(d.Args) != 1 || d.HasBlock {
			out = append(out, d)
			continue
		}
		pattern := d.Args[0]
		if !filepath.IsAbs(pattern) {
			pattern = filepath.Join(dir, pattern)
		}
		files, err := filepath.Glob(pattern)
		if err != nil {
			return nil, &Error{File: d.File, Line: d.Line, Msg: fmt.Sprintf("include %q: %v", d.Args[0], err)}
		}
		if len(files) == 0 {
			out = append(out, d)
			continue
		}
		for _, f := range files {
			inc, err := load(f, dir, stack)
			if err != nil {
				var e *Error
				if errors.As(err, &e) {
					return nil, err
				}
				return nil, &Error{File: d.File, Line: d.Line, Msg: fmt.Sprintf("include %q: %v", d.Args[0], err)}
			}
			out = append(out, inc...)
		}
	}
	return out, nil
}
